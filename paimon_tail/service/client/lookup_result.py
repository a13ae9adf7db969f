"""What a lookup of many keys answers: the found rows in request order, the positions not found and those the
service could not answer (with why), and the snapshot and schema each executor answered at."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa

from ...errors import ServiceError
from .prepare_keys import Prepared


class LookupResult:
    """Found rows (request order), their request positions, the positions not found, those that could not be
    answered (``failed``: position → reason), and the snapshot and schema each executor answered at."""

    __slots__ = ("rows", "found", "missing", "failed", "snapshot_ids", "schema_ids", "_prepared", "_keys", "_at")

    def __init__(self, rows: pa.Table, found: List[int], missing: List[int],
                 snapshot_ids: Optional[Dict[int, int]] = None, prepared: Optional[Prepared] = None,
                 failed: Optional[Dict[int, str]] = None, schema_ids: Optional[Dict[int, int]] = None,
                 answered_at: Optional[np.ndarray] = None) -> None:
        self.rows = rows  # found rows, ordered by request position
        self.found = found  # request position of each row
        self.missing = missing  # request positions not found (absent or deleted)
        self.failed = failed if failed is not None else {}  # positions the service could not answer, and why
        self.snapshot_ids = snapshot_ids if snapshot_ids is not None else {}  # executor index → snapshot
        self.schema_ids = schema_ids if schema_ids is not None else {}  # executor index → schema id
        self._prepared = prepared
        self._keys: Optional[List[Dict[str, Any]]] = prepared.keys if prepared is not None else None
        self._at = answered_at

    @property
    def key_table(self) -> pa.Table:
        """The keys as an Arrow table typed as the key columns, in request order."""
        if self._prepared is None:
            raise ValueError("this result was built without its keys")
        return self._prepared.key_table

    @property
    def keys(self) -> List[Dict[str, Any]]:
        """The parsed keys, in request order (built on first use when the keys came as Arrow/scalars)."""
        if self._keys is None:
            self._keys = self.key_table.to_pylist() if self._prepared is not None else []
        return self._keys

    def key(self, pos: int) -> Dict[str, Any]:
        """The key at request position ``pos`` (without building every key as a dict)."""
        if self._keys is not None:
            return self._keys[pos]
        return self.key_table.slice(pos, 1).to_pylist()[0]

    def __len__(self) -> int:
        return self._prepared.n if self._prepared is not None else 0

    def snapshot_of(self, pos: int) -> int:
        """The snapshot the answer for the key at ``pos`` (its row, or its absence) reflects."""
        return int(self._at[pos]) if self._at is not None else self.snapshot_id

    @property
    def snapshot_id(self) -> int:
        """The lowest snapshot any answer reflects."""
        return min(self.snapshot_ids.values()) if self.snapshot_ids else 0

    @property
    def schema_id(self) -> int:
        """The newest schema any answer was read with (the rows' columns are that schema's)."""
        return max(self.schema_ids.values()) if self.schema_ids else 0

    def aligned(self) -> List[Optional[Dict[str, Any]]]:
        """One entry per requested key: the row as a dict, or None (not found, or failed)."""
        out: List[Optional[Dict[str, Any]]] = [None] * len(self)
        for pos, row in zip(self.found, self.rows.to_pylist()):
            out[pos] = row
        return out

    def raise_failed(self) -> None:
        """Raise ``ServiceError`` naming the first failure, if any key could not be answered."""
        if self.failed:
            pos, reason = next(iter(sorted(self.failed.items())))
            more = f" (and {len(self.failed) - 1} more key(s))" if len(self.failed) > 1 else ""
            raise ServiceError(f"{reason}{more}")

    def __repr__(self) -> str:
        return (f"LookupResult(found={len(self.found)}, missing={len(self.missing)}, failed={len(self.failed)}, "
                f"snapshot_ids={self.snapshot_ids})")


__all__ = ["LookupResult"]
