"""What starts an executor, as both sides know it: ``ExecutorSpec`` (what it needs to run) and its entry point.

The coordinator's launcher starts serve's own executors in processes of their own (``multiprocessing`` spawn)
without importing the executor: it hands ``start_executor`` and a spec to the new process, which imports the
executor's public entry point (``ENTRY_POINT``) there. So the two sides meet here, and in what crosses a socket,
only. (The Spark launcher, outside ``service/``, runs ``executor/entry.py``'s ``run_executor`` in its tasks.)
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Optional

from . import DEFAULT_MAX_MESSAGE_BYTES
from .security import Security

#: module:function of the executor's entry point for one of serve's own local processes
ENTRY_POINT = "paimon_tail.service.executor.entry:executor_main"


@dataclass
class ExecutorSpec:
    catalog: object  # CatalogConfig: how this executor opens the warehouse
    coordinator: str  # host:port of the coordinator's AddressService
    local_dir: str  # file copies and stores go in a directory of their own under it
    index: int = -1  # serve's own executors: their slot; -1: any (joined executors)
    host: str = "127.0.0.1"  # bind address of ExecutorService
    port: int = 0
    advertise: str = ""  # what clients dial ("" = host:port; for 0.0.0.0 see protocol/addresses.py)
    security: Security = field(default_factory=Security)
    rejoin: bool = True  # dial again when the call breaks (instead of ending)
    orphan_timeout: float = 30.0  # ... for at most this long
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    tag: str = ""  # names its private temp dir (with its pid: see local_dirs.private_dir)
    max_memory: Optional[int] = None  # decompressed rows kept in memory (bytes; None: default_max_memory, on the
    memory_share: int = 1  # executor's own machine, shared by this many executors there)
    max_disk: Optional[int] = None  # row files on local disk (bytes; None: no limit)
    service_id: str = ""  # serve's own executors: the service whose slot ``index`` is
    drain_timeout: float = 30.0  # SIGTERM: at most this long to hand the channels over before leaving
    log_format: str = "text"  # "json": log records as JSON lines (log_format.py)


def start_executor(spec: ExecutorSpec) -> None:
    """The target of a new executor process: run the executor's entry point (imported in that process only)."""
    module, name = ENTRY_POINT.split(":")
    getattr(importlib.import_module(module), name)(spec)


__all__ = ["ENTRY_POINT", "ExecutorSpec", "start_executor"]
