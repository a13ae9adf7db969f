"""The address a server writes down for others to dial: never a name only this machine understands.

A wildcard bind (``0.0.0.0``, ``::``) says nothing about how others reach us. The machine's FQDN is the usual
answer, but in a container or a network namespace it is ``localhost``, and a registration or a hello carrying
``localhost:PORT`` sends every other host to its own loopback. So: an explicit ``--advertise`` wins; else a
non-loopback bind address as given; else, for a wildcard, the address of this machine on the route to the peer
that will hand the address out (an executor: its coordinator), else the FQDN when it resolves beyond loopback,
else the address of the default route. Nothing is sent to find a route (a UDP ``connect`` only asks the kernel).
"""
from __future__ import annotations

import os
import socket
from typing import Optional

from .security import is_loopback

WILDCARDS = ("0.0.0.0", "::", "[::]", "")


class NoAddress(Exception):
    """No address beyond loopback could be found for a wildcard bind."""


def split_host_port(address: str) -> tuple:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else 0


def route_address(toward: str) -> Optional[str]:
    """This machine's address on the route to ``toward`` (a host or an IP literal), or None."""
    try:
        infos = socket.getaddrinfo(toward.strip("[]"), 9, type=socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError):
        return None
    for family, kind, proto, _, address in infos:
        try:
            with socket.socket(family, kind, proto) as s:
                s.connect(address)  # UDP: picks the route and the source address, sends nothing
                return s.getsockname()[0]
        except OSError:
            continue
    return None


def resolves_beyond_loopback(name: str) -> bool:
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and not any(is_loopback(info[4][0]) for info in infos)


def reachable_host(toward: str = "") -> str:
    """The host others should dial for a wildcard bind on this machine (see the module's docstring); raises
    ``NoAddress`` when every candidate is a loopback address."""
    if toward:
        mine = route_address(toward)
        if mine is not None and (not is_loopback(mine) or is_loopback(toward)):
            return mine  # a loopback peer reaches us on loopback
    fqdn = socket.getfqdn()
    if fqdn and not is_loopback(fqdn) and resolves_beyond_loopback(fqdn):
        return fqdn
    for probe in ("10.255.255.255", "fd00::1"):  # the default route's source address
        mine = route_address(probe)
        if mine is not None and not is_loopback(mine):
            return mine
    raise NoAddress(f"this machine's name ({fqdn or 'none'}) and routes lead only to loopback")


def spark_local_ip() -> Optional[str]:
    """The address Spark was told to use on this machine (``SPARK_LOCAL_IP`` of its worker), if any."""
    ip = os.environ.get("SPARK_LOCAL_IP", "").strip()
    return ip if ip and ip not in WILDCARDS else None


def advertised(host: str, port: int, advertise: str = "", toward: str = "") -> str:
    """The address others dial: ``advertise`` (a port added when it has none), else the bind address, for a
    wildcard ``reachable_host(toward)``."""
    if advertise:
        if advertise.startswith("["):
            return advertise if "]:" in advertise else f"{advertise}:{port}"
        return advertise if advertise.count(":") == 1 else (f"[{advertise}]:{port}" if ":" in advertise
                                                             else f"{advertise}:{port}")
    if host in WILDCARDS:
        host = reachable_host(toward)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


__all__ = ["NoAddress", "WILDCARDS", "advertised", "reachable_host", "resolves_beyond_loopback", "route_address",
           "spark_local_ip", "split_host_port"]
