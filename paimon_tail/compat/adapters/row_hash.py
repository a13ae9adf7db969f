"""Stand-in: a row's ``BinaryRow.hashCode()`` for the column types our own hashing does not cover.

Uses
    ``pypaimon.write.row_key_extractor.RowKeyExtractor._binary_row_hash_code`` (private, static)

Why
    Paimon buckets a key by the hash of its ``BinaryRow`` bytes. ``service/keys/binary_row.py`` computes it in
    plain Python (and ``bucket_hash.py`` vectorised) for the usual key types; for the others (decimals beyond a
    long, timestamps with nanoseconds, ...) pypaimon's writer has the only implementation, and keeps it private.
    This module is the one place that calls it, so a pypaimon upgrade that renames it fails one test
    (``tests/compat/test_compat_private.py``) instead of lookups of those key types.

Delete when
    pypaimon exposes a public row hash (``BinaryRow``/``GenericRow`` with ``hash_code()``, or a public
    ``RowKeyExtractor`` bucket function for given values): call that from ``service/keys/`` instead.
"""
from __future__ import annotations

from typing import Any, Sequence


def binary_row_hash_code(values: Sequence[Any], fields: Sequence) -> int:
    """Paimon's ``BinaryRow.hashCode()`` of ``values`` typed by pypaimon ``fields`` (as pypaimon returns it: not
    yet folded to a signed int32)."""
    from pypaimon.write.row_key_extractor import RowKeyExtractor

    return RowKeyExtractor._binary_row_hash_code(tuple(values), list(fields))


__all__ = ["binary_row_hash_code"]
