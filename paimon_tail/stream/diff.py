"""``--catch-up diff`` on primary-key tables: the net change between two snapshots, per bucket, by key.

Files added between two snapshots are not a change set for a primary-key table: level-0 files hold unmerged
records (several per key, deletes as records) and compaction outputs hold rows that were there before. So for each
bucket whose files changed, ``DiffRead`` reads the bucket merged at the snapshot before the backlog and at its end
and compares them by primary key, like Paimon Java's ``incremental-between`` diff read
(``IncrementalDiffSplitRead``):

* key only before → ``-D`` with the old row;
* key only after, or after with different values → the row at the end snapshot, with its kind (``+I``/``+U``);
* key in both with equal values → nothing.

``DiffRead`` also reads an OVERWRITE's ``ReplaceSplit`` (``overwrite.py``): the rows of the files it removed as
``-D``, then those of the files it added as ``+I``, each side read (and, on primary-key tables, merged) as a full
read reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .overwrite import ReplaceSplit

ROW_KIND = "_row_kind"


@dataclass
class BucketDiff:
    """A pseudo split: one bucket's merged splits before and after (``partition``/``bucket`` as on a split)."""

    partition: object
    bucket: int
    before: List = field(default_factory=list)
    after: List = field(default_factory=list)


def _files(split) -> List[str]:
    return [f.file_name for f in split.files]


def bucket_diffs(before_splits: Sequence, after_splits: Sequence) -> List[BucketDiff]:
    """One ``BucketDiff`` per (partition, bucket) whose set of files differs between the two full plans."""
    buckets: Dict[Tuple, BucketDiff] = {}
    names: Dict[Tuple, List[set]] = {}
    for side, splits in ((0, before_splits), (1, after_splits)):
        for split in splits:
            key = (tuple(split.partition.values), split.bucket)
            d = buckets.setdefault(key, BucketDiff(split.partition, split.bucket))
            (d.before if side == 0 else d.after).append(split)
            names.setdefault(key, [set(), set()])[side].update(_files(split))
    return [d for key, d in buckets.items() if names[key][0] != names[key][1]]


class DiffRead:
    """Wraps the follower's ``TableRead``: ``BucketDiff`` splits are diffed, ``ReplaceSplit``s read as their
    removed and added rows, everything else is delegated."""

    def __init__(self, inner, table, predicate=None, row_kind: bool = False) -> None:
        self.inner = inner
        self.table = table
        self.predicate = predicate
        self.row_kind = row_kind
        self._full = None

    def __getattr__(self, name):  # read_type, to_arrow, ... of the wrapped read
        return getattr(self.inner, name)

    def _full_read(self):
        if self._full is None:
            builder = self.table.new_stream_read_builder().with_include_row_kind(True)
            if self.predicate is not None:
                builder.with_filter(self.predicate)
            self._full = builder.new_read()
        return self._full

    def to_arrow_batch_reader(self, splits):
        if splits and all(isinstance(s, BucketDiff) for s in splits):
            return iter([b for s in splits for b in self._diff(s)])
        if splits and all(isinstance(s, ReplaceSplit) for s in splits):
            return (b for s in splits for b in self._replace(s))
        return self.inner.to_arrow_batch_reader(splits)

    def _replace(self, r: ReplaceSplit) -> Iterator[pa.RecordBatch]:
        """The rows an overwrite removed from this bucket (``-D``), then those it added (``+I``)."""
        read = self._full_read()
        out_schema = self._output_schema()
        names = [f.name for f in out_schema]
        for splits, kind in ((r.before, "-D"), (r.after, "+I")):
            if not splits:
                continue
            reader = read.to_arrow_batch_reader(list(splits))
            try:
                for batch in reader:
                    if not batch.num_rows:
                        continue
                    table = pa.Table.from_batches([batch])
                    table = table.set_column(table.schema.get_field_index(ROW_KIND), ROW_KIND,
                                             pa.array([kind] * table.num_rows, pa.string()))
                    yield _shape(table, names, out_schema)
            finally:
                close = getattr(reader, "close", None)
                if close is not None:
                    close()

    def _output_schema(self) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        fields = list(PyarrowFieldParser.from_paimon_schema(self.inner.read_type))
        if self.row_kind:
            fields.insert(0, pa.field(ROW_KIND, pa.string()))
        return pa.schema(fields)

    def _diff(self, d: BucketDiff) -> Iterator[pa.RecordBatch]:
        read = self._full_read()
        after = read.to_arrow(d.after) if d.after else None
        before = read.to_arrow(d.before) if d.before else None
        if after is None and before is None:
            return
        template = after if after is not None else before
        if after is None:
            after = template.schema.empty_table()
        if before is None:
            before = template.schema.empty_table()
        keys = list(self.table.primary_keys)
        left = before.select(keys).append_column("__b", pa.array(range(before.num_rows), pa.int64()))
        right = after.select(keys).append_column("__a", pa.array(range(after.num_rows), pa.int64()))
        joined = left.join(right, keys=keys, join_type="full outer")
        b_idx, a_idx = joined.column("__b"), joined.column("__a")
        gone = pc.filter(b_idx, pc.is_null(a_idx)).combine_chunks()
        new = pc.filter(a_idx, pc.is_null(b_idx)).combine_chunks()
        both = pc.and_(pc.is_valid(a_idx), pc.is_valid(b_idx))
        pairs_b = pc.filter(b_idx, both).combine_chunks()
        pairs_a = pc.filter(a_idx, both).combine_chunks()
        changed = _rows_differ(before.take(pairs_b), after.take(pairs_a))
        emit_after = pa.concat_arrays([new, pc.filter(pairs_a, pa.array(changed, pa.bool_()))]) \
            if len(pairs_a) else new
        out_schema = self._output_schema()
        names = [f.name for f in out_schema]
        deleted = before.take(gone)
        if deleted.num_rows:
            deleted = deleted.set_column(deleted.schema.get_field_index(ROW_KIND), ROW_KIND,
                                         pa.array(["-D"] * deleted.num_rows, pa.string()))
            yield _shape(deleted, names, out_schema)
        upserts = after.take(emit_after)
        if upserts.num_rows:
            yield _shape(upserts, names, out_schema)


def _shape(table: pa.Table, names: List[str], schema: pa.Schema) -> pa.RecordBatch:
    return table.select(names).cast(schema).combine_chunks().to_batches()[0]


def _rows_differ(a: pa.Table, b: pa.Table) -> List[bool]:
    """Row-wise: do the value columns (all but ``_row_kind``) differ?"""
    n = a.num_rows
    if n == 0:
        return []
    diff: Optional[List[bool]] = [False] * n
    for name in a.column_names:
        if name == ROW_KIND:
            continue
        x, y = a.column(name), b.column(name)
        try:
            eq = pc.equal(x, y)
            same = pc.or_(pc.and_(pc.is_null(x), pc.is_null(y)), pc.fill_null(eq, False)).to_pylist()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
            same = [u == v for u, v in zip(x.to_pylist(), y.to_pylist())]
        diff = [d or not s for d, s in zip(diff, same)]
    return diff


__all__ = ["BucketDiff", "DiffRead", "bucket_diffs"]
