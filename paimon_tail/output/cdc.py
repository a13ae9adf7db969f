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

import io
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Dict, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UsageError
from .base import Renderer
from .polars_io import polars_write
from .values import plain_rows, polars_can_write, to_polars

if TYPE_CHECKING:
    from ..catalog import TableRef
    from ..stream.follower import FollowBatch

ROW_KIND = "_row_kind"


@dataclass
class ChangeEvent:
    op: str  # r | c | u | d (Debezium's letters; the other envelopes map them)
    before: Optional[dict]
    after: Optional[dict]


@dataclass
class ChangePlan:
    """Which rows of a batch make which events: event i is ``ops[i]``, its old image row ``before[i]`` and its
    new image row ``after[i]`` (int32 row numbers, null where the event has no such image)."""

    ops: np.ndarray
    before: pa.Array
    after: pa.Array


def plan_changes(kinds: pa.Array, keys: Sequence[pa.Array], full: bool) -> ChangePlan:
    """The event rule of this module's docstring, for a whole batch at once (no Python per row)."""
    n = len(kinds)
    rows = np.arange(n, dtype=np.int32)
    if full:
        return ChangePlan(np.full(n, "r", dtype=object), pa.nulls(n, pa.int32()), pa.array(rows))

    def mask(kind: str) -> np.ndarray:
        return pc.fill_null(pc.equal(kinds, kind), False).to_numpy(zero_copy_only=False)

    before_update, after_update, delete = mask("-U"), mask("+U"), mask("-D")
    paired = np.zeros(n, dtype=bool)  # a -U whose next row is the +U of the same key
    if n > 1 and keys:
        same_key = np.ones(n - 1, dtype=bool)
        for column in keys:
            same_key &= pc.fill_null(pc.equal(column.slice(0, n - 1), column.slice(1)), False).to_numpy(
                zero_copy_only=False)
        paired[:-1] = before_update[:-1] & after_update[1:] & same_key
    taken = np.zeros(n, dtype=bool)  # the +U rows of pairs: part of the pair's event
    taken[1:] = paired[:-1]
    keep = ~taken
    ops = np.where(paired | after_update, "u", np.where(before_update | delete, "d", "c")).astype(object)[keep]
    has_before = before_update | delete
    has_after = ~(before_update | delete) | paired
    after_rows = np.where(paired, rows + 1, rows)
    before = pa.array(rows[keep], mask=~has_before[keep])
    after = pa.array(after_rows[keep], mask=~has_after[keep])
    return ChangePlan(ops, before, after)


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
        # a table's trailing -U (a one-row batch), waiting for its +U in the table's next batch of the snapshot
        self._pending: Dict[str, pa.RecordBatch] = {}

    def write_item(self, item: "FollowBatch") -> None:
        batch, ref = item.batch, item.table
        names = batch.schema.names
        if not names or names[0] != ROW_KIND:
            raise UsageError(f"--format {self.name} needs row kinds (follow with row_kind=True)")
        missing = [k for k in ref.primary_keys if k not in names]
        if missing:
            raise UsageError(f"--format {self.name} needs the primary key of {ref.full_name} "
                             f"({', '.join(ref.primary_keys)}): keep it in --select")
        self.rows += batch.num_rows
        pending = self._pending.pop(ref.full_name, None)
        if pending is not None:
            batch = pa.Table.from_batches([pending, batch]).combine_chunks().to_batches()[0]
        n = batch.num_rows
        full = item.kind == "full"
        if n and not full and not item.last_in_snapshot and batch.column(0)[n - 1].as_py() == "-U":
            self._pending[ref.full_name] = batch.slice(n - 1, 1)
            batch = batch.slice(0, n - 1)
        if not batch.num_rows:
            return
        images = batch.select(names[1:])
        plan = plan_changes(batch.column(0), [images.column(k) for k in ref.primary_keys], full)
        self.stream.write(self.encode(plan, images, item))
        self.events += len(plan.ops)

    def encode(self, plan: ChangePlan, images: pa.RecordBatch, item: "FollowBatch") -> bytes:
        """The events as lines (the general path: Python objects per row)."""
        rows = plain_rows(images)
        before, after = plan.before.to_pylist(), plan.after.to_pylist()
        last = len(plan.ops) - 1 if item.last_in_snapshot else -1
        lines = []
        for i, op in enumerate(plan.ops):
            event = ChangeEvent(op, None if before[i] is None else rows[before[i]],
                                None if after[i] is None else rows[after[i]])
            line = _dumps(self.envelope(event, item, i == last))
            if self.key_delimiter is not None:
                line = self._key(event, item.table) + self.key_delimiter + line
            lines.append(line)
        return ("\n".join(lines) + "\n").encode("utf-8")

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

    def _source(self, item: "FollowBatch", snapshot: str) -> dict:
        from .. import __version__

        return {"version": __version__, "connector": "paimon", "name": "paimon-tail", "ts_ms": item.commit_time_ms,
                "snapshot": snapshot, "db": item.table.database, "table": item.table.table,
                "snapshot_id": item.snapshot_id}

    def envelope(self, event: ChangeEvent, item: "FollowBatch", last: bool) -> dict:
        snapshot = ("last" if last else "true") if event.op == "r" else "false"
        return {"before": event.before, "after": event.after, "source": self._source(item, snapshot),
                "op": event.op, "ts_ms": item.commit_time_ms}

    def encode(self, plan: ChangePlan, images: pa.RecordBatch, item: "FollowBatch") -> bytes:
        """The same lines as the general path, built by polars from Arrow (no Python objects per row) whenever
        polars writes these columns faithfully (values.polars_can_write)."""
        if not polars_can_write(images.schema):
            return super().encode(plan, images, item)
        import polars as pl

        n = len(plan.ops)
        image = to_polars(images).select(pl.struct(pl.all()).alias("image")).to_series()
        full = plan.ops[0] == "r"
        source = {k: pl.lit(v) for k, v in self._source(item, "true" if full else "false").items()}
        if full and item.last_in_snapshot:
            source["snapshot"] = pl.when(pl.int_range(pl.len()) == n - 1).then(pl.lit("last")).otherwise(pl.lit("true"))
        events = pl.DataFrame([
            image.gather(pl.from_arrow(plan.before)).alias("before"),
            image.gather(pl.from_arrow(plan.after)).alias("after"),
        ]).with_columns(pl.struct(**source).alias("source"), pl.Series("op", plan.ops.tolist(), pl.String),
                        pl.lit(item.commit_time_ms, pl.Int64).alias("ts_ms"))
        out = io.BytesIO()
        polars_write(events.write_ndjson, out)
        if self.key_delimiter is None:
            return out.getvalue()
        keys = item.table.primary_keys
        if keys:
            rows = pl.from_arrow(pc.coalesce(plan.after, plan.before))  # the image the key is taken from
            key_out = io.BytesIO()
            polars_write(to_polars(images.select(list(keys))).select(pl.all().gather(rows)).write_ndjson, key_out)
            key_lines = key_out.getvalue().split(b"\n")
        else:
            key_lines = [b""] * n
        delimiter = self.key_delimiter.encode("utf-8")
        return b"".join(k + delimiter + v + b"\n" for k, v in zip(key_lines, out.getvalue().split(b"\n")[:n]))


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
