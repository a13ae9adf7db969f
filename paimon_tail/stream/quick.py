"""``follow -e`` when there is nothing to read, answered from the table's files without opening it through pypaimon.

A script that polls a table with ``follow --from latest -e`` (or a consumer-less ``--from snapshot:N`` past the
end) usually finds nothing new, and then spent ~0.7 s importing pypaimon's read path (its catalog imports pandas,
``pyarrow.dataset`` and polars) to print nothing. Here, on a local warehouse, the table's latest schema is read from
its schema file (``table_meta.py``) and the start position is resolved by the follower's own code
(``positions.resolve_start`` over ``SnapshotFiles``) through pypaimon's ``SnapshotManager`` alone
(``compat/adapters/local_snapshots.py``); when the first snapshot to read does not exist, there is nothing to read and the
command is done. Anything else (a snapshot to read, a full read, a position that is an error, an option this
check does not cover) returns None, and ``follow`` runs as always, from the start: the answer is the follower's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..catalog import CatalogConfig
from ..errors import PaimonTailError
from .options import FollowOptions

#: formats that write nothing when no row comes (the Arrow stream: its schema); the live table draws a view
FORMATS = ("jsonl", "csv", "tsv", "arrow", "debezium", "canal", "maxwell")


@dataclass(frozen=True)
class NothingToRead:
    """``follow -e`` ends without a row: what the empty output still needs."""

    fields: list  # pypaimon DataFields of the output's table columns (projected)
    options: FollowOptions

    def schema(self):
        """The Arrow schema the follower would have written (``Follower.output_schema``)."""
        from .options import output_schema

        return output_schema(self.fields, self.options)


def nothing_to_read(catalog: CatalogConfig, tables: Sequence[str], options: FollowOptions,
                    fmt: str) -> Optional[NothingToRead]:
    """``NothingToRead`` when ``follow TABLE -e`` with these options would read no row, else None (follow)."""
    o = options
    if (not o.exit_at_end or len(tables) != 1 or fmt not in FORMATS or o.consumer_id or o.where or o.until
            or o.buckets is not None or o.shard is not None):
        return None
    from ..table_meta import read_local
    from .tables import parse_patterns

    try:
        patterns = parse_patterns(tables)
    except PaimonTailError:
        return None
    if patterns[0].is_glob:
        return None
    meta = read_local(patterns[0].text, dict(catalog.options))
    if meta is None:
        return None
    names = o.select if o.select else meta.field_names
    if any(n not in meta.field_names for n in names):
        return None  # the follower names the unknown columns
    from ..compat.adapters.local_snapshots import LocalSnapshotManager
    from ..storage.snapshots import SnapshotFiles
    from .positions import resolve_start

    files = SnapshotFiles(LocalSnapshotManager(meta.path, meta.branch))
    try:
        resolved = resolve_start(o.start, files)
        if resolved is not None and resolved.full_snapshot_id is not None:
            return None  # a full read
        next_id = resolved.next_snapshot_id if resolved is not None else 1
        if files.read(next_id) is not None:
            return None  # something to read
        earliest = files.earliest_id()
        if earliest is not None and earliest > next_id:
            return None  # expired under us: the follower reports the gap
    except (PaimonTailError, OSError, ValueError):
        return None  # the follower says what is wrong
    finally:
        files.close()
    return NothingToRead(meta.data_fields(list(names)), o)


__all__ = ["NothingToRead", "nothing_to_read"]
