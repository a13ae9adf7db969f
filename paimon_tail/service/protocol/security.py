"""TLS (optional, mutual optional) and a bearer token checked on every gRPC call.

The token comes from ``PAIMON_TAIL_TOKEN`` or ``--token-file``; it is never written to the registration file.
Calls without the right ``authorization: Bearer <token>`` metadata fail with UNAUTHENTICATED (compared in
constant time).
"""
from __future__ import annotations

import asyncio
import hmac
import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

import grpc

from ...errors import UsageError
from .probes import is_health_call

TOKEN_ENV = "PAIMON_TAIL_TOKEN"


def _read(path: Optional[str], what: str) -> Optional[bytes]:
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_FILE + 1)  # a device given by mistake is not read to the end
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror}") from None
    if len(data) > _MAX_FILE:
        raise UsageError(f"{what} {path} is larger than {_MAX_FILE >> 20} MiB: more than any certificate, key or token")
    return data


_MAX_FILE = 1 << 20


def load_token(token_file: Optional[str] = None, token: Optional[str] = None) -> Optional[str]:
    if token:
        return token
    if token_file:
        data = _read(token_file, "token file")
        text = data.decode("utf-8", "replace").strip()
        if not text:
            raise UsageError(f"token file {token_file} is empty")
        return _checked_token(text, f"token file {token_file}")
    env = os.environ.get(TOKEN_ENV, "").strip()
    return _checked_token(env, TOKEN_ENV) if env else None


def _checked_token(text: str, source: str) -> str:
    """A bearer token travels in a gRPC header: visible ASCII only (anything else fails every call, later)."""
    if not all("!" <= c <= "~" for c in text):
        raise UsageError(f"{source} does not hold a bearer token: a token is printable ASCII without spaces")
    return text


def _check_tls_files(cert: Optional[str], key: Optional[str], ca: Optional[str]) -> None:
    """The TLS files hold what they are for, checked by OpenSSL now: gRPC would find out at the first connection,
    in its own log lines, and fail every call."""
    import ssl

    if ca:
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=ca)
        except (ssl.SSLError, ValueError) as e:
            raise UsageError(f"--tls-ca {ca} holds no PEM certificate ({getattr(e, 'reason', None) or e})") from None
    if cert and key:
        try:  # an encrypted key is refused (no pass phrase to give), never prompted for
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert, key, password=b"")
        except (ssl.SSLError, ValueError) as e:
            raise UsageError(f"--tls-cert {cert} and --tls-key {key} are not a PEM certificate and its private key "
                             f"({getattr(e, 'reason', None) or e})") from None


@dataclass(frozen=True)
class Security:
    token: Optional[str] = None
    tls_cert: Optional[str] = None  # server: its certificate; client: client certificate (mutual TLS)
    tls_key: Optional[str] = None
    tls_ca: Optional[str] = None  # server: require client certificates signed by it; client: trust it

    @classmethod
    def from_options(cls, token_file=None, tls_cert=None, tls_key=None, tls_ca=None, token=None) -> "Security":
        if bool(tls_cert) != bool(tls_key):
            raise UsageError("--tls-cert and --tls-key go together")
        for path, what in ((tls_cert, "--tls-cert"), (tls_key, "--tls-key"), (tls_ca, "--tls-ca")):
            if path:
                _read(path, what)
        _check_tls_files(tls_cert, tls_key, tls_ca)
        return cls(load_token(token_file, token), tls_cert, tls_key, tls_ca)

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert or self.tls_ca)

    # -- server side --------------------------------------------------------------------------------------
    def server_credentials(self) -> Optional[grpc.ServerCredentials]:
        if not self.tls_cert:
            return None
        ca = _read(self.tls_ca, "--tls-ca")
        return grpc.ssl_server_credentials(
            [(_read(self.tls_key, "--tls-key"), _read(self.tls_cert, "--tls-cert"))],
            root_certificates=ca,
            require_client_auth=ca is not None,
        )

    def server_interceptors(self) -> List[grpc.aio.ServerInterceptor]:
        return [TokenInterceptor(self.token)] if self.token else []

    # -- client side --------------------------------------------------------------------------------------
    def channel_credentials(self) -> Optional[grpc.ChannelCredentials]:
        if not self.tls:
            return None
        ca = _read(self.tls_ca, "--tls-ca")
        if ca is None and self.tls_cert:
            ca = _read(self.tls_cert, "--tls-cert")  # a self-signed server certificate trusts itself
        key = _read(self.tls_key, "--tls-key")
        cert = _read(self.tls_cert, "--tls-cert")
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)

    def metadata(self) -> Tuple[Tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()


def _refusal(handler, message: str):
    """A handler of the same kind as ``handler`` (unary or streaming) that refuses with UNAUTHENTICATED."""
    async def unary(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def streaming(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - never reached: an async generator, as a streaming handler must be

    async def bidi(requests, context):
        # Take what the caller sent first: ending the call before its first message is read races the caller's
        # write, and the caller then sees INTERNAL instead of UNAUTHENTICATED.
        try:
            await asyncio.wait_for(requests.__anext__(), 1.0)
        except Exception:  # noqa: BLE001 - nothing sent, a timeout, a broken stream: refuse all the same
            pass
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - never reached

    passthrough = dict(request_deserializer=lambda b: b, response_serializer=lambda b: b)
    if handler is not None and handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(bidi, **passthrough)
    if handler is not None and handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(unary, **passthrough)
    if handler is not None and handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(streaming, **passthrough)
    return grpc.unary_unary_rpc_method_handler(unary, **passthrough)


class TokenInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(self, continuation, handler_call_details):
        if is_health_call(handler_call_details.method):  # probes send no token (protocol/probes.py)
            return await continuation(handler_call_details)
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                got = value.encode() if isinstance(value, str) else bytes(value)
                if hmac.compare_digest(got, self._expected):
                    return await continuation(handler_call_details)
                return _refusal(await continuation(handler_call_details), "bad bearer token")
        return _refusal(await continuation(handler_call_details),
                        "missing bearer token (set PAIMON_TAIL_TOKEN or --token-file)")


def channel_options(max_message_bytes: int) -> list:
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", 10_000),
        ("grpc.keepalive_timeout_ms", 3_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.enable_retries", 0),
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ]


def server_options(max_message_bytes: int) -> list:
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_concurrent_streams", 100_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.so_reuseport", 0),
    ]


def make_channel(address: str, security: Security, max_message_bytes: int) -> grpc.aio.Channel:
    """A channel created inside the running loop (grpc.aio)."""
    creds = security.channel_credentials()
    options = channel_options(max_message_bytes)
    if creds is None:
        return grpc.aio.insecure_channel(address, options=options)
    return grpc.aio.secure_channel(address, creds, options=options)


def make_sync_channel(address: str, security: Security, max_message_bytes: int) -> grpc.Channel:
    """A plain (thread-safe, blocking) channel: the synchronous client's fast path, no event loop."""
    creds = security.channel_credentials()
    options = channel_options(max_message_bytes)
    if creds is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, creds, options=options)


def add_port(server: grpc.aio.Server, address: str, security: Security) -> int:
    creds = security.server_credentials()
    if creds is None:
        return server.add_insecure_port(address)
    return server.add_secure_port(address, creds)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(what: str, host: str, security: Security) -> str:
    """The warning a server bound beyond loopback gives (``what``: "serving", "executor"), or "" on loopback."""
    if is_loopback(host):
        return ""
    return (f"WARNING: {what} on {host}, reachable beyond this machine"
            + ("" if security.token else " WITHOUT a token (set PAIMON_TAIL_TOKEN or --token-file)")
            + ("" if security.tls else " and WITHOUT TLS"))
