"""The service's registration in ``<table>/service/``, following Paimon's ``ServiceManager`` naming.

Paimon's ``ServiceManager`` keeps one file per service id at ``<table>/service/service-<id>``; Java's own
query service uses id ``primary-key-lookup`` with a JSON array of ``"host:port"`` strings. We use our own id,
``paimon-tail-lookup`` (so Java's file is never touched), and a JSON object whose ``addresses`` field has the
same ``"host:port"`` form (the coordinator), a lease so a crashed service is recognised as stale, and which
executor serves which channels (a key's channel: Paimon's ``ChannelComputer`` over ``channels``)::

    {"format": "paimon-tail-lookup/1", "protocol": 3, "service_id": "8c0e…", "addresses": ["10.0.0.1:43215"],
     "host": "coord-1", "pid": 4242, "tables": ["shop.orders"], "executors": 2, "tls": true, "auth": "token",
     "channels": 16, "assignment": [{"index": 0, "address": "10.0.0.2:40111", "host": "exec-a",
     "channels": [0, 2, 4, …]}, …], "started_ms": 1767225600000, "heartbeat_ms": 1767225601000, "lease_ms": 10000,
     "epoch": 3, "standbys": ["10.0.0.4:43215"]}

The file is the service's lease. Only the active coordinator writes it, always conditionally (``replace_if`` in
``atomic_file.py``: it must still be the version this coordinator wrote last, or read before taking over), so two
coordinators never both believe they hold it: every renewal (every lease/3 seconds, and at once when the
assignment changes) that finds another's file means this one was deposed. A standby takes over with ``epoch + 1``
when the active is gone (its address refuses connections), hands over (drains), or its lease expired; executors
never go back to a coordinator of a lower epoch. ``standbys`` lists the coordinators standing by (clients and
executors try them when the active does not answer). The file is removed on a clean shutdown without a standby.
It never holds a secret (``auth`` only says whether a token is required). The format name stays ``/1``: version 1 clients read it (they use ``addresses``) and the coordinator
still serves them.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import List, Optional, Tuple

from . import PROTOCOL_VERSION
from ...atomic_file import Conflict, read_versioned as read_versioned_file, remove_if, replace_if, write_text_atomic

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
    protocol: int = PROTOCOL_VERSION
    channels: int = 0
    assignment: List[dict] = field(default_factory=list)  # [{"index", "address", "host", "channels"}]
    epoch: int = 0  # raised by every takeover
    standbys: List[str] = field(default_factory=list)  # coordinators standing by (their AddressService)
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


def service_file(branch: Optional[str] = None) -> str:
    """The registration's path relative to the table's directory; a branch's (``db.t$branch_NAME``) is in the
    branch's directory, as its snapshots and consumers are."""
    if not branch or branch == "main":
        return SERVICE_FILE
    return f"branch/branch-{branch}/{SERVICE_FILE}"


def _branch(table) -> Optional[str]:
    ident = getattr(table, "identifier", None)
    return ident.get_branch_name() if ident is not None and hasattr(ident, "get_branch_name") else None


def service_dir(table) -> str:
    return f"{table.table_path}/{service_file(_branch(table)).rsplit('/', 1)[0]}"


def service_path(table, service_id: str = SERVICE_ID) -> str:
    return f"{service_dir(table)}/service-{service_id}"


def write(table, reg: Registration) -> None:
    """Atomically (re)write the registration: readers see the old or the new file, never a torn one (tests and
    tools; a coordinator writes with ``write_if``)."""
    write_text_atomic(table.file_io, service_path(table), reg.to_json())


def read_versioned(table) -> Tuple[Optional[Registration], object]:
    """The registration and the version ``write_if`` compares with (a file that is not ours: (None, version))."""
    text, version = read_versioned_file(table.file_io, service_path(table))
    return parse(text), version


def write_if(table, reg: Registration, version) -> object:
    """Write ``reg`` only if the file is still at ``version`` (None: absent); the new version. Raises
    ``Conflict`` (another coordinator wrote it: a takeover, or a race to take over that this one lost)."""
    return replace_if(table.file_io, service_path(table), reg.to_json(), version)


def remove_if_ours(table, version) -> None:
    """Delete the registration if it is still the version this coordinator wrote."""
    remove_if(table.file_io, service_path(table), version)


def read(table) -> Optional[Registration]:
    path = service_path(table)
    try:
        if not table.file_io.exists(path):
            return None
        text = table.file_io.read_file_utf8(path)
    except FileNotFoundError:
        return None
    return parse(text)


def problem_of(text: Optional[str]) -> Optional[str]:
    """Why ``text`` (a registration file's) is not a registration, in words; None when it is one or there is none.
    Such a file is treated as no registration (a coordinator replaces it); clients say why."""
    if text is None:
        return None
    try:
        Registration.from_json(text)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        from ...storage.files import problem

        return "it is not a paimon-tail registration" if str(e) == "not a paimon-tail registration" else problem(e)
    return None


def parse(text: Optional[str]) -> Optional[Registration]:
    """A registration from the file's text; None for no file or one that is not ours (or torn)."""
    if text is None:
        return None
    try:
        return Registration.from_json(text)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


__all__ = ["Conflict", "FORMAT", "Registration", "SERVICE_FILE", "SERVICE_ID", "new_service_id", "now_ms", "parse",
           "problem_of", "read", "read_versioned", "remove", "remove_if_ours", "service_file", "service_path", "write",
           "write_if"]


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
