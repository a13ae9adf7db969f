"""Why a lookup did not get an answer, in words a user can act on, and whether that is final.

Both transports classify what came back here: an error no retry can fix
(credentials, a bad request, a table not served) is raised at once; anything else becomes a reason kept for the
next attempt (``Again``) and, when the deadline ends, for the final ``LookupTimeout``. Reads errors, never makes
calls.
"""
from __future__ import annotations

from typing import Optional, Tuple

import grpc

from ...errors import ServiceError
from ..protocol import registration as regmod
from .call_plan import Call
from .route import Route


class LookupTimeout(ServiceError):
    """The service did not answer within the deadline."""


def unreachable(error: BaseException) -> str:
    """Why a server could not be reached, in words a user can act on."""
    if not isinstance(error, grpc.RpcError) or not hasattr(error, "code"):
        return str(error)
    details = error.details() or ""
    if "handshake" in details.lower():
        return f"{error.code().name}: TLS handshake failed; check --tls-ca, --tls-cert and --tls-key"
    return error.code().name


def raise_final(error: grpc.RpcError, who: str) -> None:
    """Errors no retry can fix become one line."""
    code = error.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        raise ServiceError(f"{who} refused the credentials: {error.details()}",
                           hint="check PAIMON_TAIL_TOKEN / --token-file") from None
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNIMPLEMENTED,
                grpc.StatusCode.DATA_LOSS):  # DATA_LOSS: a version 1 executor's broken bucket
        raise ServiceError(f"{who}: {error.details()}") from None


# ------------------------------------------------------------------------------------------------ discovery
def check_registration(reg: Optional[regmod.Registration], table: str, tls: bool, token: bool,
                       unreadable: Optional[str] = None) -> regmod.Registration:
    """``unreadable``: what is wrong with a registration file that is there but is not one (named in the error)."""
    if reg is None:
        raise ServiceError(f"no query service is registered for {table}" + (f": {unreadable}" if unreadable else ""),
                           hint=f"start one with: paimon-tail serve {table}")
    if reg.tls and not tls:
        raise ServiceError(f"the service for {table} uses TLS",
                           hint="pass --tls-ca (and a client certificate for mutual TLS)")
    if reg.auth == "token" and not token:
        raise ServiceError(f"the service for {table} requires a token", hint="set PAIMON_TAIL_TOKEN or pass --token-file")
    return reg


def address_failure(error: grpc.RpcError, address: str) -> Tuple[str, bool]:
    """(why, whether to drop the channel) when the address server at ``address`` did not answer; raises for what
    no retry can fix. A standby's "standing by" is no broken channel: the next address is asked."""
    raise_final(error, f"address server {address}")
    if standing_by(error):
        return error.details(), False
    return unreachable(error), True


def standing_by(error: BaseException) -> bool:
    """A standby coordinator's answer: ask the next address (not a broken channel)."""
    return isinstance(error, grpc.RpcError) and hasattr(error, "details") and \
        (error.details() or "").startswith("standing by")


def unreachable_error(table: str, reg: regmod.Registration, last: str) -> ServiceError:
    if not reg.is_live():
        ago = (regmod.now_ms() - reg.heartbeat_ms) / 1000
        return ServiceError(f"no live service for {table}: the registration of {reg.describe()} "
                            f"expired (last heartbeat {ago:.0f}s ago)")
    return ServiceError(f"no live service for {table}: the address server at {', '.join(reg.addresses)} does not "
                        f"answer ({last})")


def fallback_error(table: str, route: Route, call: Call, e: grpc.RpcError) -> ServiceError:
    """No coordinator answers, and neither does an executor the registration names."""
    reg = route.registration
    if not reg.is_live():
        ago = (regmod.now_ms() - reg.heartbeat_ms) / 1000
        return ServiceError(f"no live service for {table}: the registration of {reg.describe()} expired (last "
                            f"heartbeat {ago:.0f}s ago), and executor {call.executor} at {call.address} does not "
                            f"answer ({unreachable(e)})")
    return ServiceError(f"no live service for {table}: the address server at {', '.join(reg.addresses)} does not "
                        f"answer, nor executor {call.executor} at {call.address} ({unreachable(e)})")


def call_error(call: Call, e: grpc.RpcError, min_snapshot: int) -> Tuple[str, bool]:
    """(why to retry, drop the channel?) for a failed call; raises for errors no retry can fix."""
    code = e.code()
    who = f"executor {call.executor} at {call.address}"
    raise_final(e, who)
    details = e.details() or ""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and min_snapshot and "serves snapshot" in details:
        raise LookupTimeout(f"{details} (waited {call.timeout:.1f}s)") from None
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        reason = f"{who} did not answer within {call.timeout:.1f}s"
    else:
        reason = f"{who}: {code.name} {details}".strip()
    return reason, code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def status_error(e: grpc.RpcError, address: str) -> ServiceError:
    """An address server's ``Status`` failure as one line."""
    try:
        raise_final(e, f"address server {address}")
    except ServiceError as final:
        return final
    return ServiceError(f"address server {address}: {e.code().name} {e.details() or ''}".strip())


__all__ = ["LookupTimeout", "address_failure", "call_error", "check_registration", "discovery_deadline",
           "fallback_error", "raise_final", "standing_by", "status_error", "unreachable", "unreachable_error"]
