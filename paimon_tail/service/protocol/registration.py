"""The service's registration in ``<table>/service/``, following Paimon's ``ServiceManager`` naming.

Paimon's ``ServiceManager`` keeps one file per service id at ``<table>/service/service-<id>``; Java's own
query service uses id ``primary-key-lookup`` with a JSON array of ``"host:port"`` strings. We use our own id,
``paimon-tail-lookup`` (so Java's file is never touched), and a JSON object whose ``addresses`` field has the
same ``"host:port"`` form (the coordinator), a lease so a crashed service is recognised as stale, and which
executor serves which channels (a key's channel: Paimon's ``ChannelComputer`` over ``channels``)::

    {"format": "paimon-tail-lookup/1", "protocol": 2, "service_id": "8c0e…", "addresses": ["10.0.0.1:43215"],
     "host": "coord-1", "pid": 4242, "tables": ["shop.orders"], "executors": 2, "tls": true, "auth": "token",
     "channels": 16, "assignment": [{"index": 0, "address": "10.0.0.2:40111", "host": "exec-a",
     "channels": [0, 2, 4, …]}, …], "started_ms": 1767225600000, "heartbeat_ms": 1767225601000, "lease_ms": 10000}

The file is rewritten atomically (temporary file + rename) every lease/3 seconds, at once when the assignment
changes, and removed on clean shutdown. It never holds a secret (``auth`` only says whether a token is
required). The format name stays ``/1``: version 1 clients read it (they use ``addresses``) and the coordinator
still serves them.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import List, Optional

from ...atomic_file import write_text_atomic

SERVICE_ID = "paimon-tail-lookup"
SERVICE_FILE = f"service/service-{SERVICE_ID}"  # relative to the table's directory
JAVA_SERVICE_ID = "primary-key-lookup"  # Java's PRIMARY_KEY_LOOKUP: never written by us
FORMAT = "paimon-tail-lookup/1"


@dataclass
class Registration:
    service_id: str
    addresses: List[str]
    host: str
    pid: int
    tables: List[str]
    executors: int
    tls: bool
    auth: str  # "token" | "none"
    started_ms: int
    heartbeat_ms: int
    lease_ms: int
    format: str = FORMAT
    protocol: int = 2
    channels: int = 0
    assignment: List[dict] = field(default_factory=list)  # [{"index", "address", "host", "channels"}]
    extra: dict = field(default_factory=dict)

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("extra")
        d.update(self.extra)
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Registration":
        d = json.loads(text)
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError("not a paimon-tail registration")
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(**{k: d[k] for k in known if k in d},
                   extra={k: v for k, v in d.items() if k not in known})

    def expires_ms(self) -> int:
        return self.heartbeat_ms + self.lease_ms

    def is_live(self, now_ms: Optional[int] = None) -> bool:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return now_ms <= self.expires_ms()

    def describe(self) -> str:
        return f"{', '.join(self.addresses)} (pid {self.pid} on {self.host})"


def now_ms() -> int:
    return int(time.time() * 1000)


def service_dir(table) -> str:
    return f"{table.table_path}/service"


def service_path(table, service_id: str = SERVICE_ID) -> str:
    return f"{service_dir(table)}/service-{service_id}"


def write(table, reg: Registration) -> None:
    """Atomically (re)write the registration: readers see the old or the new file, never a torn one."""
    write_text_atomic(table.file_io, service_path(table, reg_id(reg)), reg.to_json())


def reg_id(reg: Registration) -> str:
    return SERVICE_ID


def read(table) -> Optional[Registration]:
    path = service_path(table)
    try:
        if not table.file_io.exists(path):
            return None
        text = table.file_io.read_file_utf8(path)
    except FileNotFoundError:
        return None
    return parse(text)


def parse(text: Optional[str]) -> Optional[Registration]:
    """A registration from the file's text; None for no file or one that is not ours (or torn)."""
    if text is None:
        return None
    try:
        return Registration.from_json(text)
    except (ValueError, TypeError, KeyError):
        return None


def remove(table, service_id: str) -> None:
    """Delete the registration if it is still ours (another service may have taken over a stale one)."""
    current = read(table)
    if current is not None and current.service_id != service_id:
        return
    try:
        table.file_io.delete_quietly(service_path(table))
    except Exception:
        pass


def new_service_id() -> str:
    return uuid.uuid4().hex
