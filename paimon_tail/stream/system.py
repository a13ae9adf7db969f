"""Following Paimon's system tables: ``t$audit_log``, ``t$binlog`` and ``t$snapshots`` as they change, the others
(``$files``, ``$tags``, ``$consumers``, ``$options``, ``$schemas``, ``$partitions``, ...) read once.

* ``$audit_log`` is the table's changes with their kinds as a column, ``rowkind`` first (Paimon's
  ``AuditLogTable``): the table's own follow (``Follower``, every option of a data table), reshaped.
* ``$binlog`` is the same with every column an array (Paimon's ``BinlogTable``): ``[value]``, or, for an update
  whose old image the changelog holds (a ``-U`` followed by its ``+U``), one ``+U`` row of ``[before, after]``.
* ``$snapshots`` is a row per snapshot, as pypaimon's ``SnapshotsTable`` builds it: a full start gives the kept
  snapshots up to the start, then each new commit is a row as it is committed, so ``follow 't$snapshots'`` watches
  a table's commits (``paimon-tail snapshots``). Positions, ``--until``, ``-e``, gaps are a data table's.
* The others are pypaimon's system tables, read once: ``follow`` prints them and ends, as with ``-e``.

Options that mean nothing for a system table (a consumer of ``$snapshots``, buckets of ``$files``, ...) are refused
with a one-line reason, before anything is read.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
from typing import AsyncIterator, Callable, Iterator, List, Optional, Sequence

import pyarrow as pa

from ..catalog import SystemView, TableRef
from ..errors import SnapshotExpired, SnapshotGap, UsageError
from ..storage.diagnosis import endpoint_of
from ..storage.retry import StorageRetry
from .follower import FollowBatch, Follower, iterate_sync
from .options import FollowOptions
from .positions import ResolvedStart, resolve_end, resolve_start
from .stats import FollowStats

ROW_KIND = "rowkind"  # Paimon's SpecialFields.ROW_KIND


def follower_of(table, options: FollowOptions):
    """The follower of what ``catalog.open_table`` returned: a data table's ``Follower``, or one of a system
    table's."""
    if isinstance(table, SystemView):
        if table.name == "snapshots":
            return SnapshotsFollower(table, options)
        return ChangesView(table, options)
    if hasattr(table, "system_table_name"):  # pypaimon's SystemTable
        return OnceFollower(table, options)
    return Follower(table, options)


def follow(table, options: Optional[FollowOptions] = None, **kwargs):
    """Follow ``table`` — what ``open_table`` returned: a table, a branch, or a system table (``t$snapshots``,
    ``t$audit_log``, ...): ``async for item in follow(t, start="earliest"): ...`` (``iter_sync()`` without
    asyncio)."""
    if options is None:
        options = FollowOptions(**kwargs)
    elif kwargs:
        options = dataclasses.replace(options, **kwargs)
    return follower_of(table, options)


def _refuse(name: str, options: FollowOptions, what: Sequence[str]) -> None:
    o = options
    given = {
        "--consumer-id": o.consumer_id is not None, "--shard": o.shard is not None,
        "--buckets": o.buckets is not None, "--catch-up diff": o.catch_up == "diff", "--meta": o.meta,
        "-O streaming-read-overwrite": o.read_overwrite is not None,
        "--from": str(o.start) != "latest-full", "--until": o.until is not None,
    }
    for option in what:
        if given[option]:
            raise UsageError(f"{option} does not apply to {name}: {_WHY[option]}")


_WHY = {
    "--consumer-id": "a system table keeps no consumer position (Paimon's are per data table)",
    "--shard": "it has no buckets", "--buckets": "it has no buckets",
    "--catch-up diff": "its rows are not a table's changes to fold",
    "--meta": "its rows are the snapshots' own metadata",
    "-O streaming-read-overwrite": "it has no OVERWRITE commits to read",
    "--from": "it is read once, as it is now", "--until": "it is read once, as it is now",
}


# -- $audit_log and $binlog ---------------------------------------------------------------------------------------
class ChangesView:
    """``$audit_log`` / ``$binlog``: the base table's follow with row kinds, reshaped batch by batch."""

    def __init__(self, view: SystemView, options: FollowOptions) -> None:
        options = options.normalized()
        self.name = view.name
        self.select = list(options.select) if options.select else None
        base_select = [c for c in self.select if c != ROW_KIND] if self.select else None
        self.inner = Follower(view.base, dataclasses.replace(options, select=base_select or None, row_kind=True))
        self.options = self.inner.options
        self.ref = TableRef.of(view)
        self.stats = self.inner.stats

    @property
    def on_notice(self) -> Optional[Callable[[str], None]]:
        return self.inner.on_notice

    @on_notice.setter
    def on_notice(self, value) -> None:
        self.inner.on_notice = value

    def output_schema(self) -> pa.Schema:
        schema = self.inner.output_schema()
        if self.name == "binlog":
            data = range(1, len(schema) - self._meta_count())
            schema = pa.schema([pa.field(f.name, pa.list_(f.type)) if i in data else f for i, f in enumerate(schema)])
        return self._shape(pa.RecordBatch.from_pylist([], schema=schema)).schema

    def _meta_count(self) -> int:
        return 4 if self.options.meta else 0

    def _shape(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``_row_kind`` → ``rowkind`` (first), ``--select``'s order; the meta columns stay last."""
        fields = list(batch.schema)
        fields[0] = pa.field(ROW_KIND, pa.string())
        out = pa.RecordBatch.from_arrays(list(batch.columns), schema=pa.schema(fields))
        if self.select:
            meta = out.schema.names[len(out.schema) - self._meta_count():] if self._meta_count() else []
            out = out.select(list(self.select) + meta)
        return out

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        held: Optional[pa.RecordBatch] = None  # $binlog: a -U that ends a batch, waiting for its +U
        async for item in self.inner:
            batch = item.batch
            if self.name == "binlog":
                if held is not None:
                    batch = pa.concat_batches([held, batch])
                    held = None
                if not item.last_in_snapshot and batch.num_rows and batch.column(0)[-1].as_py() == "-U":
                    held = batch.slice(batch.num_rows - 1)
                    batch = batch.slice(0, batch.num_rows - 1)
                    if not batch.num_rows:
                        continue
                batch = binlog_rows(batch, len(batch.schema) - self._meta_count())
            yield dataclasses.replace(item, batch=self._shape(batch), table=self.ref)

    def close(self) -> None:
        self.inner.close()

    def iter_sync(self) -> Iterator[FollowBatch]:
        return iterate_sync(self)


def binlog_rows(batch: pa.RecordBatch, data_end: int) -> pa.RecordBatch:
    """Paimon's ``$binlog`` rows of audit-log rows (``batch``: the kind first, then the data columns up to
    ``data_end``, then meta columns): a ``-U`` directly followed by a ``+U`` become one ``+U`` row whose data
    columns are ``[before, after]``; every other row keeps its kind, its columns ``[value]``
    (``BinlogTable``'s ``PackChangelogReader``)."""
    kinds = batch.column(0).to_pylist()
    starts, i, n = [], 0, len(kinds)
    while i < n:
        starts.append(i)
        i += 2 if kinds[i] == "-U" and i + 1 < n and kinds[i + 1] == "+U" else 1
    offsets = pa.array(starts + [n], pa.int32())
    ends = starts[1:] + [n]
    out_kinds = [kinds[e - 1] for e in ends]  # a pair takes its +U's kind
    take = pa.array(starts, pa.int64())
    columns = [pa.array(out_kinds, pa.string())]
    fields = [batch.schema.field(0)]
    for j in range(1, len(batch.schema)):
        f = batch.schema.field(j)
        if j < data_end:
            columns.append(pa.ListArray.from_arrays(offsets, batch.column(j)))
            fields.append(pa.field(f.name, pa.list_(f.type)))
        else:
            columns.append(batch.column(j).take(take))
            fields.append(f)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


# -- $snapshots -----------------------------------------------------------------------------------------------
class _Rows:
    """What the followers of ``$snapshots`` and of pypaimon's system tables share: their columns (pypaimon
    ``DataField``s), ``--select`` and ``--where`` applied to the rows they build, ``--row-kind`` (all ``+I``)."""

    fields: list
    options: FollowOptions

    def _columns(self, fields) -> None:
        self.fields = list(fields)
        names = [f.name for f in self.fields]
        unknown = [c for c in self.options.select or () if c not in names]
        if unknown:
            raise UsageError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                             hint=f"columns are {', '.join(names)}")
        self.filter = _arrow_filter(self.options.where, self.fields)
        self.on_notice: Optional[Callable[[str], None]] = None
        self.stats = FollowStats()

    def table_schema(self) -> pa.Schema:
        """Every column, as pypaimon types them."""
        from pypaimon.schema.data_types import PyarrowFieldParser

        return PyarrowFieldParser.from_paimon_schema(self.fields)

    def output_schema(self) -> pa.Schema:
        schema = self.table_schema()
        if self.options.select:
            schema = pa.schema([schema.field(c) for c in self.options.select])
        if self.options.row_kind:
            schema = schema.insert(0, pa.field("_row_kind", pa.string()))
        return schema

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.filter is not None:
            table = table.filter(self.filter)
        if self.options.select:
            table = table.select(list(self.options.select))
        if self.options.row_kind:
            table = table.add_column(0, "_row_kind", pa.array(["+I"] * table.num_rows, pa.string()))
        self.stats.rows += table.num_rows
        return table

    def iter_sync(self) -> Iterator[FollowBatch]:
        return iterate_sync(self)


class SnapshotsFollower(_Rows):
    """``t$snapshots``: a row per snapshot (pypaimon's ``SnapshotsTable`` columns), new ones as they come."""

    def __init__(self, view: SystemView, options: FollowOptions) -> None:
        from pypaimon.table.system.snapshots_table import TABLE_TYPE

        self.options = o = options.normalized()
        self.ref = TableRef.of(view)
        _refuse(self.ref.full_name, o, ("--consumer-id", "--shard", "--buckets", "--catch-up diff", "--meta",
                                        "-O streaming-read-overwrite"))
        self.base = view.base
        self._columns(TABLE_TYPE.fields)
        self.retry = StorageRetry(endpoint_of(self.base.file_io), o.effective_storage_timeout(), self.stats.health)
        self._walker = None

    def _batch(self, snapshots: Sequence, kind: str) -> Optional[FollowBatch]:
        table = self._finish(snapshot_rows(snapshots, self.table_schema()))
        if not table.num_rows:
            return None
        last = snapshots[-1]
        batch = table.combine_chunks().to_batches()[0]
        return FollowBatch(batch, last.id, last.time_millis, kind, -1, "", last_in_snapshot=True, table=self.ref)

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        from .planner import SnapshotPlanner
        from .schedule import GAP_POLICIES
        from .walker import SnapshotWalker

        o, retry = self.options, self.retry
        planner = await asyncio.to_thread(
            lambda: SnapshotPlanner(self.base.new_stream_read_builder().new_streaming_scan()))
        files = planner.files
        walker = self._walker = SnapshotWalker(planner, o.poll_interval, retry)
        try:
            until = await retry.call(resolve_end, o.until, files)
            resolved = await retry.call(resolve_start, o.start, files)
            if resolved is None:
                self.stats.waiting_for_first_snapshot = True
                if o.exit_at_end:
                    return
                while not await walker.poll(1):
                    await walker.wait()
                self.stats.waiting_for_first_snapshot = False
                resolved = ResolvedStart(next_snapshot_id=1)
            self.stats.start_id = resolved.full_snapshot_id or resolved.next_snapshot_id
            if resolved.full_snapshot_id is not None:
                kept = await retry.call(_kept_up_to, files, resolved.full_snapshot_id)
                if kept:
                    self._seen(kept[-1])
                    item = self._batch(kept, "full")
                    if item is not None:
                        yield item
            next_id = resolved.next_snapshot_id
            gaps = GAP_POLICIES[o.on_gap]
            while until is None or until.snapshot_id is None or next_id <= until.snapshot_id:
                try:
                    snaps = await walker.poll(next_id)
                except SnapshotGap as gap:
                    next_id = gaps.resume_at(gap, self.stats)
                    continue
                if not snaps:
                    if o.exit_at_end:
                        return
                    self.stats.caught_up = True
                    await walker.wait()
                    self.stats.mechanism = walker.mechanism
                    continue
                self.stats.caught_up = False
                self.stats.saw_latest(snaps[-1].id, snaps[-1].time_millis)
                within = list(itertools.takewhile(lambda s: not _past(until, s), snaps))
                for snap in within:
                    self._seen(snap)
                    item = self._batch([snap], "delta")
                    if item is not None:
                        yield item
                    next_id = snap.id + 1
                if len(within) < len(snaps):
                    return
        finally:
            self.close()

    def _seen(self, snap) -> None:
        self.stats.snapshot_id = snap.id
        self.stats.commit_time_ms = snap.time_millis
        self.stats.saw_latest(snap.id, snap.time_millis)
        self.stats.snapshots += 1

    def close(self) -> None:
        if self._walker is not None:
            self._walker.close()
            self._walker = None


def _past(until, snapshot) -> bool:
    if until is None:
        return False
    if until.snapshot_id is not None and snapshot.id > until.snapshot_id:
        return True
    return until.timestamp_ms is not None and snapshot.time_millis > until.timestamp_ms


def _kept_up_to(files, last_id: int) -> list:
    """The kept snapshots with ids up to ``last_id``, oldest first (a tag's snapshot may be gone: then those
    before it)."""
    earliest = files.earliest_id()
    if earliest is None:
        return []
    out, sid = [], earliest
    while sid <= last_id:
        run = files.read_from(sid, min(files.max_window, last_id - sid + 1))
        if not run:  # expired meanwhile, or the end of a tag's range
            sid += 1
            continue
        out += run
        sid = run[-1].id + 1
    return out


def snapshot_rows(snapshots: Sequence, schema: pa.Schema) -> pa.Table:
    """Snapshots as rows of Paimon's ``$snapshots`` system table (pypaimon's ``SnapshotsTable`` columns)."""
    getters = {
        "snapshot_id": lambda s: s.id, "schema_id": lambda s: s.schema_id, "commit_user": lambda s: s.commit_user,
        "commit_identifier": lambda s: s.commit_identifier, "commit_kind": lambda s: s.commit_kind,
        "commit_time": lambda s: s.time_millis, "base_manifest_list": lambda s: s.base_manifest_list,
        "delta_manifest_list": lambda s: s.delta_manifest_list,
        "changelog_manifest_list": lambda s: s.changelog_manifest_list,
        "total_record_count": lambda s: s.total_record_count, "delta_record_count": lambda s: s.delta_record_count,
        "changelog_record_count": lambda s: s.changelog_record_count, "watermark": lambda s: s.watermark,
        "next_row_id": lambda s: s.next_row_id, "writer_version": lambda s: s.writer_version,
    }
    arrays = []
    for f in schema:
        values = [getters[f.name](s) for s in snapshots]
        if pa.types.is_timestamp(f.type):
            arrays.append(pa.array(values, pa.int64()).cast(pa.timestamp("ms")).cast(f.type))
        else:
            arrays.append(pa.array(values, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _arrow_filter(where, fields):
    """``--where`` over a system table's columns, as an Arrow expression (the rows are filtered here)."""
    if not where:
        return None
    from .filters import parse_where

    predicate = parse_where(where, fields)
    if predicate is None:
        return None
    try:
        return predicate.to_arrow()
    except Exception as e:  # LIKE on some types, nested columns
        raise UsageError(f"bad --where {where!r} on a system table: {e}") from None


# -- the others, read once -----------------------------------------------------------------------------------
class OnceFollower(_Rows):
    """A system table pypaimon builds (``$files``, ``$tags``, ``$consumers``, ``$options``, ``$schemas``,
    ``$partitions``, ...): read once, as it is now, and done."""

    def __init__(self, table, options: FollowOptions) -> None:
        self.options = o = options.normalized()
        self.table = table
        self.ref = TableRef.of(table)
        _refuse(self.ref.full_name, o, ("--consumer-id", "--shard", "--buckets", "--catch-up diff", "--meta",
                                        "-O streaming-read-overwrite", "--from", "--until"))
        self._columns(table.row_type().fields)

    def _read(self) -> pa.Table:
        rb = self.table.new_read_builder()
        return self._finish(rb.new_read().to_arrow(rb.new_scan().plan().splits()))

    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        table = await asyncio.to_thread(self._read)
        snapshot = await asyncio.to_thread(self.table.base_table.snapshot_manager().get_latest_snapshot)
        sid, ms = (snapshot.id, snapshot.time_millis) if snapshot is not None else (0, 0)
        self.stats.saw_latest(sid, ms) if snapshot is not None else None
        batches = [b for b in table.combine_chunks().to_batches() if b.num_rows]
        for i, batch in enumerate(batches):
            yield FollowBatch(batch, sid, ms, "full", -1, "", last_in_snapshot=i == len(batches) - 1,
                              table=self.ref)
        self.stats.snapshot_id = sid or None
        self.stats.caught_up = True

    def close(self) -> None:
        pass


__all__ = ["ChangesView", "OnceFollower", "SnapshotsFollower", "follow", "follower_of", "snapshot_rows"]
