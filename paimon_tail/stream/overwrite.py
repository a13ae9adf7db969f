"""OVERWRITE snapshots: what one replaced (for the line a follower prints when it skips one), and its net change.

Paimon's streaming read skips OVERWRITE snapshots (``INSERT OVERWRITE``, a truncated or dropped partition, a
rewrite): its follow-up scanners read APPEND snapshots (or changelog), and an overwrite carries neither. With
``streaming-read-overwrite=true`` Paimon Java reads one as its changes (``OverwriteFollowUpScanner``:
``SnapshotReader.readChanges``): every record of the files it removed with its kind reversed, then every record
of the files it added. Here the same, bucket by bucket (``ReplaceSplit``), with the files of each side merged
as a primary-key table's reader merges them: ``-D`` for each row the overwrite removed, ``+I`` for each row it
added. Folding the output (by key, or as a multiset of rows for append tables) gives the table after the
overwrite. Java passes on the unmerged records instead (a key with two versions in the removed files gives two
``-D``); both fold to the same table.

The removed side is planned over the snapshot before the overwrite (its deletion vectors apply); when that one
has expired, over the overwrite's base manifests (the same files; deletion vectors of the replaced files are then
not known).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

OVERWRITE = "OVERWRITE"
READ_OPTION = "streaming-read-overwrite"


@dataclass
class ReplaceSplit:
    """A pseudo split: one bucket's rows an overwrite removed (``before``, read as ``-D``) and added (``after``,
    read as ``+I``); ``partition`` and ``bucket`` as on a split."""

    partition: object
    bucket: int
    before: List = field(default_factory=list)
    after: List = field(default_factory=list)

    @property
    def files(self) -> list:
        return [f for split in self.before + self.after for f in split.files]

    @property
    def row_count(self) -> int:
        return sum(int(split.row_count) for split in self.before + self.after)


@dataclass(frozen=True)
class OverwriteSummary:
    """What an OVERWRITE snapshot replaced: its partitions (``k=v/...``; none for an unpartitioned table), and the
    data files and rows (records, for a primary-key table) it removed and added."""

    snapshot_id: int
    partitions: Tuple[str, ...]
    files_removed: int
    rows_removed: int
    files_added: int
    rows_added: int
    partitioned: bool

    def describe(self) -> str:
        if not self.partitioned:
            where = "the whole table"
        elif not self.partitions:
            where = "no partition"
        else:
            shown = ", ".join(self.partitions[:5])
            more = len(self.partitions) - 5
            where = f"{'partition' if len(self.partitions) == 1 else 'partitions'} {shown}" + \
                (f" and {more} more" if more > 0 else "")
        return (f"snapshot {self.snapshot_id} is an OVERWRITE of {where}: {_count(self.rows_removed, 'row')} in "
                f"{_count(self.files_removed, 'file')} replaced by {_count(self.rows_added, 'row')} in "
                f"{_count(self.files_added, 'file')}")

    def skipped(self) -> str:
        """The line a follower prints when it skips this overwrite."""
        return (f"{self.describe()}; skipped, as Paimon's streaming read skips overwrites (read it as -D/+I "
                f"changes with -O {READ_OPTION}=true)")


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def overwrite_entries(table, snapshot, manifest_lists) -> Tuple[list, list]:
    """The manifest entries of the files ``snapshot`` removed and added (its delta manifests, both kinds: the
    reconciling reader pypaimon's scans use drops the removals). A file both removed and added is neither."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    manifests = ManifestFileManager(table)
    removed, added = [], []
    for meta in manifest_lists.read_delta(snapshot):
        for entry in manifests.read(meta.file_name, drop_stats=True, file_size=meta.file_size):
            (added if entry.kind == 0 else removed).append(entry)
    both = {_entry_key(e) for e in removed} & {_entry_key(e) for e in added}
    if both:
        removed = [e for e in removed if _entry_key(e) not in both]
        added = [e for e in added if _entry_key(e) not in both]
    return removed, added


def _entry_key(entry) -> tuple:
    return tuple(entry.partition.values), entry.bucket, entry.file.file_name


def summarize(table, snapshot, removed: Sequence, added: Sequence) -> OverwriteSummary:
    keys = list(table.partition_keys)
    partitions = sorted({tuple(e.partition.values) for e in list(removed) + list(added)})
    return OverwriteSummary(
        snapshot.id,
        tuple("/".join(f"{k}={v}" for k, v in zip(keys, values)) for values in partitions) if keys else (),
        len(removed), sum(int(e.file.row_count) for e in removed),
        len(added), sum(int(e.file.row_count) for e in added),
        bool(keys),
    )


def replace_splits(before: Sequence, after: Sequence) -> List[ReplaceSplit]:
    """``before``'s and ``after``'s splits paired by (partition, bucket), in a stable order."""
    buckets: Dict[tuple, ReplaceSplit] = {}
    for side, splits in ((0, before), (1, after)):
        for split in splits:
            key = (tuple(split.partition.values), split.bucket)
            r = buckets.setdefault(key, ReplaceSplit(split.partition, split.bucket))
            (r.before if side == 0 else r.after).append(split)
    return [buckets[key] for key in sorted(buckets, key=repr)]


def read_overwrite_option(table, override: Optional[bool]) -> bool:
    """``streaming-read-overwrite``: ``override`` (``-O``, a Spark read option) when given, else the table's."""
    if override is not None:
        return override
    value = table.options.options.to_map().get(READ_OPTION)
    return str(value).strip().lower() == "true" if value is not None else False


__all__ = ["OVERWRITE", "OverwriteSummary", "READ_OPTION", "ReplaceSplit", "overwrite_entries",
           "read_overwrite_option", "replace_splits", "summarize"]
