"""What ``serve`` is told (``ServeOptions``) and the defaults and checks of those options that come before a
service exists: how many executors a machine gets, whether its address can be listened on."""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Optional, Sequence

from ...catalog import CatalogConfig
from ...errors import ServiceError
from ..protocol import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.security import Security
from .launcher import ExecutorLauncher

DEFAULT_MAX_BATCH_KEYS = 100_000


def default_executors() -> int:
    """One executor per core, leaving one core for the scanner and address server on bigger machines."""
    cpus = os.cpu_count() or 1
    return max(1, min(16, cpus - 1 if cpus > 2 else cpus))


@dataclass
class ServeOptions:
    tables: Sequence[str]
    catalog: CatalogConfig
    executors: Optional[int] = None  # serve's own executors (slots); 0: only executors that join
    channels: Optional[int] = None  # routing channels (default max(16, executors))
    host: str = "127.0.0.1"
    port: int = 0
    advertise: str = ""  # the address written to the registration ("" = host:port; 0.0.0.0: protocol/addresses.py)
    local_dir: Optional[str] = None
    security: Security = field(default_factory=Security)
    lease_seconds: float = 10.0
    heartbeat_timeout: float = 2.0  # an executor silent this long is not routed to
    executor_timeout: float = 3.0  # ... and this long is restarted (a slot) or dropped (a joined executor)
    max_batch_keys: int = DEFAULT_MAX_BATCH_KEYS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # Idle polling of each table (s); None: 0.3 on object stores (≈3.3 requests/s a table), inotify locally.
    poll_interval: Optional[float] = None
    # Runs the slots' executors (None: local spawn processes). See launcher.ExecutorLauncher.
    launcher: Optional[ExecutorLauncher] = None
    max_memory: Optional[int] = None  # each executor's budgets (None: a share of its machine's, see ExecutorSpec)
    max_disk: Optional[int] = None
    # after a takeover, how long the executors of the coordinator before keep their channels while they re-join
    rejoin_grace: float = 10.0
    handover_timeout: float = 5.0  # a draining active waits this long for its standby to take over
    metrics_port: Optional[int] = None  # Prometheus text format on http://host:port/metrics (0: any free port)
    log_format: str = "text"  # "json": serve's executors log JSON lines too


def check_can_listen(host: str, port: int) -> None:
    """Bind (and release) ``host:port`` as gRPC will (SO_REUSEADDR): a port in use, a privileged port or an
    address not on this machine fails here with the operating system's reason."""
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ServiceError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as e:
                raise ServiceError(f"cannot listen on {host}:{port}: {e.strerror.lower()}") from None


__all__ = ["DEFAULT_MAX_BATCH_KEYS", "DEFAULT_MAX_MESSAGE_BYTES", "ServeOptions", "check_can_listen", "default_executors"]
