"""What each of serve's own executors (its slots) is started with: an ``ExecutorSpec`` (``protocol/``), made from
serve's options, for a local process or for one a launcher runs on another machine."""
from __future__ import annotations

from ..protocol.executor_spec import ExecutorSpec
from ..protocol.security import is_loopback
from .serve_options import ServeOptions


def slot_spec(o: ServeOptions, index: int, *, catalog, service_id: str, local_dir: str, address: str, slots: int,
              local: bool) -> ExecutorSpec:
    """What slot ``index``'s executor needs. A local process dials the coordinator on this machine and shares
    serve's --local-dir; one the launcher runs elsewhere (``local`` False) dials the advertised ``address``, binds
    loopback when serve does and otherwise an address of its machine (the launcher narrows "0.0.0.0" down: a Spark
    task takes its worker's), and keeps a private temp dir on its machine unless --local-dir names a path there.
    Both get ``catalog`` (its warehouse absolute)."""
    if local:
        return ExecutorSpec(catalog=catalog, coordinator=local_address(o.host, address), local_dir=local_dir,
                            index=index, host=o.host, security=o.security,
                            max_message_bytes=o.max_message_bytes, max_memory=o.max_memory, max_disk=o.max_disk,
                            memory_share=max(1, slots), service_id=service_id, log_format=o.log_format)
    return ExecutorSpec(catalog=catalog, coordinator=address, local_dir=o.local_dir or "",
                        index=index, host=o.host if is_loopback(o.host) else "0.0.0.0", security=o.security,
                        rejoin=True, max_message_bytes=o.max_message_bytes, tag=f"{service_id[:10]}-{index}",
                        max_memory=o.max_memory, max_disk=o.max_disk, service_id=service_id, log_format=o.log_format)


def local_address(host: str, address: str) -> str:
    """How executors on this machine reach the coordinator bound to ``host`` and advertised at ``address``."""
    port = address.rsplit(":", 1)[1]
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


__all__ = ["local_address", "slot_spec"]
