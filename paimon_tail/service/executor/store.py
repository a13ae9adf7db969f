"""A bucket's merged rows on local disk, indexed by key: what an executor answers lookups from.

Layout (one directory per bucket, owner-only):

* ``base-<gen>.arrow``: an Arrow IPC *file* (uncompressed) with the bucket's merged rows as pypaimon's batch read
  produced them, memory-mapped: the OS pages rows in and out, so a bucket larger than memory is served with
  bounded memory;
* ``base-<gen>.hash.npy`` / ``base-<gen>.pos.npy``: the 64-bit key hashes sorted, and the row position of each,
  also memory-mapped (16 bytes per key on disk, touched by binary search);
* overlays: small in-memory segments of rows committed after the base (dedup tables: new level-0 files upsert
  the index without re-merging), newest first, with tombstones for deletes.

A lookup hashes the request keys (polars ``hash_rows``, vectorised), binary-searches each segment newest first,
then *compares the key columns* of the candidate rows with the requested keys, so a hash collision can never
return a wrong row. Stores are immutable: applying a snapshot builds a new store object (sharing the base) and
the executor swaps it in, so a lookup always sees one consistent snapshot.
"""
from __future__ import annotations

import os
import uuid
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROW_KIND = "_row_kind"
BATCH_ROWS = 1 << 20  # rows per record batch in a base file (memory while building is bounded by this)
BATCH_BYTES = 128 << 20
_RETRACT = ("-D", "-U")


_SIGN = np.uint64(1 << 63)


def exact_hash(schema: pa.Schema) -> bool:
    """One integer key column: the "hash" is the value itself (order-preserving), equal hash means equal key."""
    return len(schema) == 1 and pa.types.is_integer(schema.field(0).type)


def key_hashes(keys: pa.Table) -> np.ndarray:
    """Deterministic 64-bit hash of each row of ``keys`` (same result in every process).

    A single integer column maps to its value with the sign bit flipped (sorted hashes = sorted keys: lookups of
    nearby keys touch nearby pages, and no key comparison is needed); other keys use polars' ``hash_rows``.
    """
    if keys.num_rows == 0:
        return np.empty(0, dtype=np.uint64)
    if exact_hash(keys.schema):
        col = keys.column(0)
        if col.num_chunks != 1:
            col = col.combine_chunks()
        else:
            col = col.chunk(0)
        v = np.asarray(col.to_numpy(zero_copy_only=False))
        return v.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN
    import polars as pl

    df = pl.from_arrow(keys, rechunk=False)
    if isinstance(df, pl.Series):
        df = df.to_frame()
    return df.hash_rows(seed=0, seed_1=1, seed_2=2, seed_3=3).to_numpy().astype(np.uint64, copy=False)


def _keys_equal(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Row-wise equality of two key tables with the same columns and length."""
    result = None
    for name in a.column_names:
        eq = pc.equal(a.column(name), b.column(name))
        eq = pc.fill_null(eq, False)
        result = eq if result is None else pc.and_(result, eq)
    if result is None:
        return np.ones(a.num_rows, dtype=bool)
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


class Segment:
    """Rows + sorted key hashes (+ tombstones for overlays)."""

    def __init__(self, table: pa.Table, hashes: np.ndarray, positions: np.ndarray,
                 deleted: Optional[np.ndarray] = None, files: Sequence[str] = ()) -> None:
        self.table = table
        self.hashes = np.asarray(hashes)  # plain ndarray views of memory maps: no memmap subclass per access
        self.positions = np.asarray(positions)
        self.deleted = deleted
        self.files = list(files)
        # Arrow's take on a chunked table concatenates the chunks first (a copy of the whole column per lookup):
        # take from the one record batch that holds each row instead.
        self.batches = table.to_batches()
        sizes = np.asarray([b.num_rows for b in self.batches], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)]) if len(sizes) else np.zeros(1, np.int64)

    def take(self, rows: np.ndarray, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Rows at positions ``rows`` (in that order), only ``columns`` if given."""
        batches = self.batches
        if columns is not None:
            batches = [b.select(list(columns)) for b in batches]
        if len(batches) == 1:
            return pa.Table.from_batches([batches[0].take(pa.array(rows))])
        if not batches:
            return self.table.select(list(columns)) if columns is not None else self.table
        chunk = np.searchsorted(self.starts, rows, side="right") - 1
        first = chunk[0] if len(chunk) else 0
        if len(chunk) == 0 or np.all(chunk == first):
            return pa.Table.from_batches([batches[first].take(pa.array(rows - self.starts[first]))])
        groups = positions_by_code(chunk)
        parts = [batches[c].take(pa.array(rows[grp] - self.starts[c])) for c, grp in groups]
        merged = pa.Table.from_batches(parts).combine_chunks()
        order = np.concatenate([grp for _, grp in groups])
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[order] = np.arange(len(order))
        return merged.take(pa.array(inverse))

    def row(self, position: int, columns: Optional[Sequence[str]] = None) -> pa.RecordBatch:
        """One row as a record batch (a zero-copy slice of the batch that holds it)."""
        k = 0 if len(self.batches) == 1 else int(self.starts.searchsorted(position, side="right")) - 1
        batch = self.batches[k].slice(position - int(self.starts[k]), 1)
        return batch if columns is None else batch.select(list(columns))

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def probe(self, h: np.ndarray, keys: pa.Table, key_names: Sequence[str], exact: bool = False):
        """Return (request indices matched, row positions) for keys found in this segment.

        One vectorised binary search for the whole batch (queries sorted first when there are many: neighbouring
        probes share cache lines and pages), then an exact comparison of the key columns of the candidates
        (skipped when the hash is the key itself).
        """
        m = len(self.hashes)
        if m == 0 or len(h) == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if len(h) > 64:
            order = np.argsort(h, kind="stable")
            left = np.empty(len(h), dtype=np.int64)
            left[order] = np.searchsorted(self.hashes, h[order], side="left")
        else:
            left = np.searchsorted(self.hashes, h, side="left")
        hit = np.asarray(self.hashes[np.minimum(left, m - 1)]) == h
        hit &= left < m
        req = np.nonzero(hit)[0]
        if len(req) == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        rows = np.asarray(self.positions[left[req]], dtype=np.int64)
        if exact:
            return req.astype(np.int64), rows
        candidates = self.take(rows, key_names)
        ok = _keys_equal(candidates, keys if len(req) == len(h) else keys.take(pa.array(req)))
        if ok.all():
            return req.astype(np.int64), rows
        matched_req = list(req[ok])
        matched_rows = list(rows[ok])
        # Hash collisions (several rows with one hash, the first not equal): check the others one by one.
        for r in req[~ok].tolist():
            key = keys.slice(int(r), 1)
            j = int(left[r]) + 1
            while j < m and self.hashes[j] == h[r]:
                row = int(self.positions[j])
                if _keys_equal(self.take(np.asarray([row]), key_names), key)[0]:
                    matched_req.append(r)
                    matched_rows.append(row)
                    break
                j += 1
        return np.asarray(matched_req, dtype=np.int64), np.asarray(matched_rows, dtype=np.int64)


def positions_by_code(codes: np.ndarray) -> List[Tuple[int, np.ndarray]]:
    """(code, its positions) for each distinct code, codes ascending, positions in order: one stable sort, no
    per-element Python."""
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return [(int(codes[grp[0]]), grp) for grp in np.split(order, bounds)]


def _index(hashes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    order = np.argsort(hashes, kind="stable")
    return hashes[order], order.astype(np.int64)


class BucketStore:
    """Immutable view of one bucket: a base segment and overlays (newest last in ``overlays``)."""

    def __init__(self, directory: str, key_names: Sequence[str], schema: pa.Schema, base: Segment,
                 overlays: Sequence[Segment] = (), rows: Optional[int] = None) -> None:
        self.directory = directory
        self.key_names = list(key_names)
        self.schema = schema
        self.base = base
        self.overlays = list(overlays)
        self.rows = base.num_rows if rows is None else rows
        self.exact = exact_hash(pa.schema([schema.field(k) for k in self.key_names]))

    # -- building -----------------------------------------------------------------------------------------
    @classmethod
    def build(cls, directory: str, key_names: Sequence[str], schema: pa.Schema,
              batches: Iterable[pa.RecordBatch]) -> "BucketStore":
        """Write merged rows to a memory-mapped Arrow file and index them; memory stays at ~16 bytes per key."""
        os.makedirs(directory, mode=0o700, exist_ok=True)
        gen = uuid.uuid4().hex[:12]
        path = os.path.join(directory, f"base-{gen}.arrow")
        hashes: List[np.ndarray] = []
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        pending: List[pa.RecordBatch] = []
        pending_bytes = 0
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            os.close(fd)

            def flush() -> None:
                nonlocal pending_bytes
                if not pending:
                    return
                table = pa.Table.from_batches(pending, schema).combine_chunks()
                pending.clear()
                pending_bytes = 0
                for big in table.to_batches():
                    writer.write_batch(big)
                hashes.append(key_hashes(table.select(key_names)))

            for batch in batches:
                if batch.num_rows == 0:
                    continue
                if ROW_KIND in batch.schema.names:
                    batch = batch.drop_columns([ROW_KIND])
                if batch.schema != schema:
                    batch = pa.Table.from_batches([batch]).cast(schema).combine_chunks().to_batches()[0]
                # Few, large record batches (bounded: BATCH_ROWS / BATCH_BYTES), so a lookup takes from one.
                pending.append(batch)
                pending_bytes += batch.nbytes
                if sum(b.num_rows for b in pending) >= BATCH_ROWS or pending_bytes >= BATCH_BYTES:
                    flush()
            flush()
        all_hashes = np.concatenate(hashes) if hashes else np.empty(0, np.uint64)
        sorted_hashes, positions = _index(all_hashes)
        del all_hashes
        hpath, ppath = path[:-6] + ".hash.npy", path[:-6] + ".pos.npy"
        np.save(hpath, sorted_hashes)
        np.save(ppath, positions)
        for p in (hpath, ppath):
            os.chmod(p, 0o600)
        del sorted_hashes, positions
        table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
        base = Segment(
            table, np.load(hpath, mmap_mode="r"), np.load(ppath, mmap_mode="r"), files=[path, hpath, ppath]
        )
        return cls(directory, key_names, schema, base)

    def with_changes(self, batches: Iterable[pa.RecordBatch]) -> "BucketStore":
        """A new store with ``batches`` (rows with ``_row_kind``, in sequence order: later wins) upserted."""
        import polars as pl

        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return self
        changes = pa.concat_tables(tables, promote_options="permissive")
        kinds = changes.column(ROW_KIND) if ROW_KIND in changes.column_names else None
        rows = changes.drop_columns([ROW_KIND]) if kinds is not None else changes
        rows = rows.cast(self.schema) if rows.schema != self.schema else rows
        # Later wins within the change set: keep the last occurrence of each key.
        df = pl.from_arrow(rows.select(self.key_names)).with_row_index("__i")
        keep = df.unique(subset=self.key_names, keep="last", maintain_order=True)["__i"].to_numpy()
        rows = rows.take(pa.array(keep)).combine_chunks()
        deleted = np.zeros(rows.num_rows, dtype=bool)
        if kinds is not None:
            k = pc.is_in(kinds.take(pa.array(keep)), pa.array(_RETRACT))
            deleted = np.asarray(pc.fill_null(k, False).to_numpy(zero_copy_only=False), dtype=bool)
        keys = rows.select(self.key_names)
        h = key_hashes(keys)
        # Count keys that appear or disappear, for "keys held".
        present = self._present(h, keys)
        delta = int(np.sum(~deleted & ~present)) - int(np.sum(deleted & present))
        sorted_h, positions = _index(h)
        seg = Segment(rows, sorted_h, positions, deleted)
        return BucketStore(self.directory, self.key_names, self.schema, self.base, self.overlays + [seg],
                           rows=max(0, self.rows + delta))

    @property
    def overlay_rows(self) -> int:
        return sum(s.num_rows for s in self.overlays)

    # -- reading ------------------------------------------------------------------------------------------
    def _present(self, h: np.ndarray, keys: pa.Table) -> np.ndarray:
        found = np.zeros(len(h), dtype=bool)
        idx, _ = self._find(h, keys)
        for seg, req, rows in idx:
            alive = np.ones(len(req), bool) if seg.deleted is None else ~seg.deleted[rows]
            found[req[alive]] = True
        return found

    def _find(self, h: np.ndarray, keys: pa.Table):
        """[(segment, request indices, row positions)] resolving each key in its newest segment."""
        remaining = np.arange(len(h))
        out = []
        for seg in list(reversed(self.overlays)) + [self.base]:
            if len(remaining) == 0:
                break
            sub_keys = keys if len(remaining) == len(h) or self.exact else keys.take(pa.array(remaining))
            req, rows = seg.probe(h[remaining], sub_keys, self.key_names, self.exact)
            if len(req):
                out.append((seg, remaining[req], rows))
                mask = np.ones(len(remaining), dtype=bool)
                mask[req] = False
                remaining = remaining[mask]
        return out, remaining

    def find_exact(self, h: np.uint64) -> Optional[Tuple[Segment, int]]:
        """(segment, row) of one key of an integer-keyed store (``exact``: the hash is the key), or None."""
        for seg in (list(reversed(self.overlays)) + [self.base]) if self.overlays else (self.base,):
            hs = seg.hashes
            i = int(hs.searchsorted(h))
            if i < len(hs) and hs[i] == h:
                row = int(seg.positions[i])
                if seg.deleted is not None and seg.deleted[row]:
                    return None
                return seg, row
        return None

    def lookup(self, keys: pa.Table, h: Optional[np.ndarray] = None,
               columns: Optional[Sequence[str]] = None) -> Tuple[np.ndarray, Optional[pa.Table]]:
        """(request indices found, their rows) — deleted keys are not found."""
        if h is None:
            h = key_hashes(keys)
        found, _ = self._find(h, keys)
        reqs, parts = [], []
        for seg, req, rows in found:
            if seg.deleted is not None:
                alive = ~seg.deleted[rows]
                req, rows = req[alive], rows[alive]
            if len(req) == 0:
                continue
            reqs.append(req)
            parts.append(seg.take(rows, columns))
        if not reqs:
            return np.empty(0, np.int64), None
        req = np.concatenate(reqs)
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        return req, table

    def files(self) -> List[str]:
        return list(self.base.files)

    def drop(self) -> None:
        """Delete the base files (a lookup still mapping them keeps its pages until it is done)."""
        for path in self.base.files:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def empty_batches() -> Iterable[pa.RecordBatch]:
    return iter(())
