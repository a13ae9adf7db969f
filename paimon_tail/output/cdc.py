"""Change events in the envelopes Kafka-world tools read: Debezium, Canal and Maxwell JSON, one event per line.

Paimon's row kinds become events (Debezium op / Canal type / Maxwell type):

    rows of a full start (latest-full, snapshot-full)     r / INSERT / insert
    +I                                                     c / INSERT / insert
    -U followed by the +U of the same key                  u / UPDATE / update, with both images
    +U alone (no changelog producer: no before image)      u with before null / UPDATE, old {} / update, old {}
    -D, or a -U whose +U does not follow                   d / DELETE / delete

A -U/+U pair is adjacent in Paimon's files (one key, one bucket, consecutive sequence numbers), but may straddle
two batches: a trailing -U waits for the table's next batch of the same snapshot. A snapshot's end settles it.

Every event carries the table (``db``, ``table``), the snapshot that committed it and the commit time. The rows are
the Paimon type → JSON mapping of every other format (decimals as exact strings, times as ISO-8601, like
Debezium's ``decimal.handling.mode=string``). With ``key_delimiter`` each line is ``KEY<delimiter>EVENT``, the key
being the primary-key columns as a JSON object (Debezium's message key), which is what ``kcat -P -K<delimiter>``
reads to partition by key; a table without a primary key has an empty key.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Dict, List, Optional

from ..errors import UsageError
from .renderers import Renderer
from .values import plain_rows

if TYPE_CHECKING:
    from ..catalog import TableRef
    from ..stream.follower import FollowBatch

ROW_KIND = "_row_kind"


@dataclass
class ChangeEvent:
    op: str  # r | c | u | d (Debezium's letters; the other envelopes map them)
    before: Optional[dict]
    after: Optional[dict]


def _dumps(value) -> str:
    # values are already JSON-ready (plain_rows applied the type mapping)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class ChangeRenderer(Renderer):
    """Rows with row kinds → one change event per line; subclasses shape the envelope."""

    thread_safe = True
    name = ""

    def __init__(self, stream: BinaryIO, key_delimiter: Optional[str] = None) -> None:
        super().__init__(stream)
        self.key_delimiter = key_delimiter
        self.events = 0
        # a table's trailing -U, waiting for its +U in the table's next batch of the same snapshot
        self._pending: Dict[str, dict] = {}

    def write_item(self, item: "FollowBatch") -> None:
        batch, ref = item.batch, item.table
        names = batch.schema.names
        if not names or names[0] != ROW_KIND:
            raise UsageError(f"--format {self.name} needs row kinds (follow with row_kind=True)")
        missing = [k for k in ref.primary_keys if k not in names]
        if missing:
            raise UsageError(f"--format {self.name} needs the primary key of {ref.full_name} "
                             f"({', '.join(ref.primary_keys)}): keep it in --select")
        events = self._events(item, plain_rows(batch))
        if not events:
            return
        lines = []
        last = len(events) - 1
        for i, event in enumerate(events):
            envelope = _dumps(self.envelope(event, item, item.last_in_snapshot and i == last))
            if self.key_delimiter is not None:
                envelope = self._key(event, ref) + self.key_delimiter + envelope
            lines.append(envelope)
        self.stream.write(("\n".join(lines) + "\n").encode("utf-8"))
        self.rows += batch.num_rows
        self.events += len(events)

    def _events(self, item: "FollowBatch", rows: List[dict]) -> List[ChangeEvent]:
        ref = item.table
        keys = ref.primary_keys
        before = self._pending.pop(ref.full_name, None)  # a -U not yet settled
        events: List[ChangeEvent] = []
        full = item.kind == "full"
        for row in rows:
            kind = row.pop(ROW_KIND)
            if before is not None:
                if kind == "+U" and keys and all(before[k] == row[k] for k in keys):
                    events.append(ChangeEvent("u", before, row))
                    before = None
                    continue
                events.append(ChangeEvent("d", before, None))
                before = None
            if full:
                events.append(ChangeEvent("r", None, row))
            elif kind == "-U":
                before = row
            elif kind == "-D":
                events.append(ChangeEvent("d", row, None))
            elif kind == "+U":
                events.append(ChangeEvent("u", None, row))
            else:
                events.append(ChangeEvent("c", None, row))
        if before is not None:
            if item.last_in_snapshot:
                events.append(ChangeEvent("d", before, None))
            else:
                self._pending[ref.full_name] = before
        return events

    def _key(self, event: ChangeEvent, ref: "TableRef") -> str:
        if not ref.primary_keys:
            return ""
        image = event.after if event.after is not None else event.before
        return _dumps({k: image[k] for k in ref.primary_keys})

    def envelope(self, event: ChangeEvent, item: "FollowBatch", last: bool) -> dict:
        raise NotImplementedError

    def close(self) -> None:
        # A -U still pending means the follow stopped inside a snapshot (-n, Ctrl-C): its consumer position was not
        # written, so the whole snapshot comes again next time. Printing it as a delete would invent one.
        self._pending.clear()
        super().close()


def _changed(before: Optional[dict], after: dict) -> dict:
    """Canal's and Maxwell's ``old``: the previous values of the columns that changed ({} if unknown)."""
    if before is None:
        return {}
    return {k: v for k, v in before.items() if after.get(k) != v}


class DebeziumRenderer(ChangeRenderer):
    """Debezium's change event value (the payload, as with ``value.converter.schemas.enable=false``).

    ``source.snapshot`` keeps Debezium's meaning ("true" while reading the full start, "last" on its final row,
    "false" after); the Paimon snapshot id that committed the row is ``source.snapshot_id``. ``ts_ms`` and
    ``source.ts_ms`` are both the commit time, so the same snapshot always produces the same bytes.
    """

    name = "debezium"

    def envelope(self, event: ChangeEvent, item: "FollowBatch", last: bool) -> dict:
        from .. import __version__

        ref = item.table
        if event.op == "r":
            snapshot = "last" if last else "true"
        else:
            snapshot = "false"
        return {
            "before": event.before,
            "after": event.after,
            "source": {"version": __version__, "connector": "paimon", "name": "paimon-tail",
                       "ts_ms": item.commit_time_ms, "snapshot": snapshot, "db": ref.database, "table": ref.table,
                       "snapshot_id": item.snapshot_id},
            "op": event.op,
            "ts_ms": item.commit_time_ms,
        }


class CanalRenderer(ChangeRenderer):
    """Canal's flat JSON message (canal-json): ``data``/``old`` arrays of one row, ``type``, ``pkNames``."""

    name = "canal"
    TYPES = {"r": "INSERT", "c": "INSERT", "u": "UPDATE", "d": "DELETE"}

    def envelope(self, event: ChangeEvent, item: "FollowBatch", last: bool) -> dict:
        ref = item.table
        image = event.before if event.op == "d" else event.after
        return {
            "data": [image],
            "old": [_changed(event.before, event.after)] if event.op == "u" else None,
            "type": self.TYPES[event.op],
            "database": ref.database,
            "table": ref.table,
            "pkNames": list(ref.primary_keys) or None,
            "isDdl": False,
            "es": item.commit_time_ms,
            "ts": item.commit_time_ms,
            "id": item.snapshot_id,
        }


class MaxwellRenderer(ChangeRenderer):
    """Maxwell's JSON: ``data``, ``old`` (changed columns of an update), ``ts`` in seconds, ``xid`` = the snapshot,
    ``commit: true`` on a snapshot's last row. Rows of a full start are plain inserts (as Flink's and Paimon's
    maxwell-json readers expect), not Maxwell's bootstrap-insert."""

    name = "maxwell"
    TYPES = {"r": "insert", "c": "insert", "u": "update", "d": "delete"}

    def envelope(self, event: ChangeEvent, item: "FollowBatch", last: bool) -> dict:
        ref = item.table
        out = {
            "database": ref.database,
            "table": ref.table,
            "type": self.TYPES[event.op],
            "ts": item.commit_time_ms // 1000,
            "xid": item.snapshot_id,
        }
        if last:
            out["commit"] = True
        out["data"] = event.before if event.op == "d" else event.after
        if event.op == "u":
            out["old"] = _changed(event.before, event.after)
        out["primary_key_columns"] = list(ref.primary_keys)
        return out


RENDERERS = {"debezium": DebeziumRenderer, "canal": CanalRenderer, "maxwell": MaxwellRenderer}


def change_renderer(fmt: str, stream: BinaryIO, key_delimiter: Optional[str] = None) -> ChangeRenderer:
    return RENDERERS[fmt](stream, key_delimiter)


__all__ = ["CanalRenderer", "ChangeEvent", "ChangeRenderer", "DebeziumRenderer", "MaxwellRenderer", "RENDERERS",
           "change_renderer"]
