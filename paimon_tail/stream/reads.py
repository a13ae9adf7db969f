"""What reads one schema of a followed table: its filter, projection, row kinds and buckets, set up once per schema.

A schema change gives a new ``SchemaReads``; the old one is not closed or changed: every planned snapshot carries
the ``SchemaReads`` of its own schema (``schedule.Planned``), so the reading side never reads through a set-up that
planning has replaced. ``SchemaReads`` holds no thread or file: it is dropped with the last item that uses it.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..catalog import table_name
from ..errors import UsageError
from .diff import DiffRead
from .filters import parse_where
from .options import FollowOptions

BucketFilter = Callable[[int], bool]


def bucket_filter(options: FollowOptions) -> Optional[BucketFilter]:
    """``--buckets`` / ``--shard I/N`` as a predicate on bucket numbers (None: every bucket)."""
    chosen = set(options.buckets) if options.buckets is not None else None
    shard = options.shard
    if chosen is None and shard is None:
        return None

    def keep(bucket: int) -> bool:
        if chosen is not None and bucket not in chosen:
            return False
        return shard is None or bucket % shard[1] == shard[0]

    return keep


def check_buckets(table, options: FollowOptions, keep: Optional[BucketFilter]) -> None:
    """--buckets / --shard that select no bucket of the table would print nothing, forever: refuse them."""
    if keep is None:
        return
    from pypaimon.table.bucket_mode import BucketMode

    mode = table.bucket_mode()
    if mode == BucketMode.HASH_FIXED:
        count, what = int(table.options.bucket()), f"{int(table.options.bucket())} buckets"
    elif mode == BucketMode.BUCKET_UNAWARE:
        count, what = 1, "no fixed buckets (bucket = -1): every file is in bucket 0"
    else:  # dynamic / postponed buckets: the set is not known up front
        return
    name = table_name(table)
    beyond = sorted(b for b in options.buckets or () if b >= count)
    if beyond:
        raise UsageError(f"bucket {', '.join(map(str, beyond))} of --buckets does not exist: {name} has {what}")
    if not any(keep(b) for b in range(count)):
        chosen = f"--shard {options.shard[0]}/{options.shard[1]}" if options.shard else "--buckets"
        if options.shard and options.buckets is not None:
            chosen += f" with --buckets {','.join(map(str, options.buckets))}"
        raise UsageError(f"{chosen} selects no bucket: {name} has {what}")


class SchemaReads:
    """The follow's reads of ``table`` at its current schema; ``UsageError`` when ``--select`` names a column
    the schema lacks."""

    def __init__(self, table, options: FollowOptions, keep: Optional[BucketFilter] = None) -> None:
        if options.batch_size:
            table = table.copy({"read.batch-size": str(options.batch_size)})
        names = [f.name for f in table.fields]
        if options.select:
            unknown = [c for c in options.select if c not in names]
            if unknown:
                raise UsageError(
                    f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in --select",
                    hint=f"columns are {', '.join(names)}",
                )
        self.options = options
        self.table = table
        self.schema_id: int = table.table_schema.id
        self.keep = keep
        # the predicate we built, kept for every builder of this schema (pypaimon's builder keeps it privately)
        self.predicate = parse_where(options.where, table.fields) if options.where else None
        self._builder = self.builder(table)
        # DiffRead: --catch-up diff on primary-key tables plans BucketDiff splits (stream/diff.py)
        self.read = DiffRead(self._builder.new_read(), table, self.predicate, options.row_kind)
        self._full_read = None  # made when a full read comes (it loads pypaimon-rust)

    def builder(self, table):
        """A stream read builder for ``table`` with the follow's filter, projection, row kinds and buckets."""
        o = self.options
        builder = table.new_stream_read_builder()
        if self.predicate is not None:
            builder.with_filter(self.predicate)
        if o.select:
            builder.with_projection(list(o.select))
        if o.row_kind:
            builder.with_include_row_kind(True)
        if self.keep is not None:
            builder.with_bucket_filter(self.keep)
        return builder

    def new_scan(self):
        """pypaimon's streaming scan of this schema (what ``SnapshotPlanner`` plans with)."""
        return self._builder.new_streaming_scan()

    @property
    def full_read(self):
        """The read of a table's content: pypaimon's Rust reader on local tables, where a primary-key table's
        buckets are merged 6-10x faster than by pypaimon's Python merge. Deltas and diffs keep the Python reader:
        the Rust one fails on some deltas of evolved schemas and gives merged rows +I where Python gives the last
        record's kind (docs/compatibility.md; a full read's rows are all +I anyway)."""
        if self._full_read is None:
            from ..compat.adapters.native_reads import with_native_reads

            native = with_native_reads(self.table)
            self._full_read = self.builder(native).new_read() if native is not self.table else self.read
        return self._full_read

    def for_kind(self, kind: str):
        """The read for a planned snapshot of ``kind``: the table's content (``full``) through the full read,
        changes (``delta``, ``diff``) through pypaimon's Python reader."""
        return self.full_read if kind == "full" else self.read

    def partition_text(self, split) -> str:
        """``k=v/k=v`` of the split's partition ('' for an unpartitioned table)."""
        keys = self.table.partition_keys
        if not keys:
            return ""
        row = split.partition
        values = getattr(row, "values", None)
        if values is None:
            return str(row)
        return "/".join(f"{k}={v}" for k, v in zip(keys, values))


__all__ = ["SchemaReads", "bucket_filter", "check_buckets"]
