"""Keys → 64-bit hashes, the same in every part of one executor.

A key of one integer column is its own hash (the value with the sign bit flipped, so sorted hashes are sorted keys
and equal hashes are equal keys: ``exact``). Any other key gets two independent 64-bit hashes from polars'
``hash_rows`` (a 128-bit fingerprint): the index treats equal fingerprints as the same key, and every row it
returns is compared with the requested key before it is answered, so a collision can cost a miss (at 2^-128 per
pair of keys) but never a wrong row.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SIGN = np.uint64(1 << 63)
_SIGN_BIT = 1 << 63
_U64 = (1 << 64) - 1

Hashes = Tuple[np.ndarray, Optional[np.ndarray]]


class KeyHasher:
    """How one table's (trimmed) primary keys are hashed."""

    def __init__(self, key_schema: pa.Schema) -> None:
        self.names = list(key_schema.names)
        self.schema = key_schema
        self.exact = len(key_schema) == 1 and pa.types.is_integer(key_schema.field(0).type)

    def hashes(self, keys: pa.Table) -> Hashes:
        """(h1, h2) for each row of ``keys`` (its columns include ``names``); h2 is None when ``exact``."""
        n = keys.num_rows
        if n == 0:
            return np.empty(0, np.uint64), (None if self.exact else np.empty(0, np.uint64))
        if self.exact:
            col = keys.column(self.names[0])
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            v = np.asarray(col.to_numpy(zero_copy_only=False))
            return v.astype(np.int64, copy=False).view(np.uint64) ^ SIGN, None
        import polars as pl

        df = pl.from_arrow(keys.select(self.names), rechunk=False)
        if isinstance(df, pl.Series):
            df = df.to_frame()
        h1 = df.hash_rows(seed=0, seed_1=1, seed_2=2, seed_3=3).to_numpy().astype(np.uint64, copy=False)
        h2 = df.hash_rows(seed=11, seed_1=13, seed_2=17, seed_3=19).to_numpy().astype(np.uint64, copy=False)
        return h1, h2

    def one(self, value: int) -> int:
        """The hash of one integer key (``exact`` only), as a Python int (``KeyIndex.lookup_one``)."""
        return (value & _U64) ^ _SIGN_BIT


def keys_equal(a: pa.Table, b: pa.Table, names: Sequence[str]) -> np.ndarray:
    """Row-wise equality of the ``names`` columns of two tables of the same length."""
    result = None
    for name in names:
        eq = pc.fill_null(pc.equal(a.column(name), b.column(name)), False)
        result = eq if result is None else pc.and_(result, eq)
    if result is None:
        return np.ones(a.num_rows, dtype=bool)
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


__all__ = ["Hashes", "KeyHasher", "SIGN", "keys_equal"]
