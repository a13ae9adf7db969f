"""What ``paimon-tail tables`` and ``paimon-tail describe`` say about tables: plain data, no rendering.

``list_tables`` lists a catalog's tables (all of them, one database's, or those a glob matches), each with its
keys, buckets and latest snapshot; ``describe`` says everything a reader of one table wants to know before
following or serving it: its columns, primary and partition keys, bucket mode and count, options, the latest
snapshot and its time, the snapshots kept, the data files of the latest snapshot (count, bytes, records) and the
consumers. pyiceberg's ``list``/``describe``, kcat's ``-L`` and psql's ``\\dt``/``\\d`` are the models.
"""
from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from .catalog import CatalogConfig, open_table, table_name
from .errors import TableNotFound, UsageError

_GLOB = frozenset("*?[")


@dataclass
class Column:
    name: str
    type: str  # Paimon's type, as in its schema file: BIGINT NOT NULL, DECIMAL(10, 2), ...
    nullable: bool
    comment: Optional[str] = None


@dataclass
class Snapshot:
    id: int
    time_ms: int
    commit_kind: str  # APPEND, COMPACT, OVERWRITE
    total_records: Optional[int]  # records in the table's files at this snapshot (not merged)


@dataclass
class TableSummary:
    """One line of ``tables``."""

    table: str
    primary_keys: List[str]
    partition_keys: List[str]
    bucket_mode: str
    buckets: int  # -1: not fixed (dynamic, unaware, postponed)
    latest: Optional[Snapshot]
    error: Optional[str] = None  # a table that could not be read is listed with why

    def to_json(self) -> Dict[str, Any]:
        """The fields as JSON values; each snapshot's time also as ISO-8601 text (local time, with its offset)."""
        out = asdict(self)
        for value in out.values():
            if isinstance(value, dict) and "time_ms" in value:
                value["time"] = iso_time(value["time_ms"])
        return out


@dataclass
class TableInfo(TableSummary):
    """``describe``."""

    comment: Optional[str] = None
    columns: List[Column] = field(default_factory=list)
    options: Dict[str, str] = field(default_factory=dict)
    schema_id: int = 0
    earliest: Optional[Snapshot] = None
    files: int = 0  # data files of the latest snapshot
    file_bytes: int = 0
    file_records: int = 0
    consumers: Dict[str, int] = field(default_factory=dict)  # consumer id → next snapshot


def describe(table) -> TableInfo:
    """Everything ``describe`` shows of ``table`` (a pypaimon table): reads its schema, its latest and earliest
    snapshots, the latest snapshot's plan (manifests: the data files) and its consumer files."""
    from .stream.consumer import ConsumerStore

    schema = table.table_schema
    summary = summarize(table)
    latest = summary.latest
    files = bytes_ = records = 0
    if latest is not None:
        for split in table.new_read_builder().new_scan().plan().splits():
            for meta in split.files:
                files += 1
                bytes_ += meta.file_size or 0
                records += meta.row_count or 0
    earliest = table.snapshot_manager().try_get_earliest_snapshot() if latest is not None else None
    return TableInfo(
        **{k: getattr(summary, k) for k in TableSummary.__dataclass_fields__},
        comment=schema.comment or None,
        columns=[Column(f.name, str(f.type), bool(f.type.nullable), f.description or None) for f in schema.fields],
        options=dict(schema.options or {}), schema_id=schema.id,
        earliest=_snapshot(earliest), files=files, file_bytes=bytes_, file_records=records,
        consumers=ConsumerStore(table).all(),
    )


def summarize(table) -> TableSummary:
    schema = table.table_schema
    return TableSummary(table_name(table), list(schema.primary_keys or []), list(schema.partition_keys or []),
                        table.bucket_mode().name, int(table.total_buckets),
                        _snapshot(table.snapshot_manager().get_latest_snapshot()))


def iso_time(time_ms: int) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(time_ms / 1000).astimezone().isoformat(timespec="milliseconds")


def _snapshot(snap) -> Optional[Snapshot]:
    if snap is None:
        return None
    return Snapshot(snap.id, snap.time_millis, str(snap.commit_kind), snap.total_record_count)


def table_names(catalog, pattern: Optional[str] = None) -> List[str]:
    """``db.table`` names of a pypaimon catalog: all, one database's (``shop``), the databases a glob matches
    (``sh*``), or the tables a ``DATABASE.TABLE`` pattern matches (either part a glob: ``shop.ord*``, ``*.orders``).
    A database named without a glob must exist; a glob may match nothing."""
    from pypaimon.catalog.catalog_exception import DatabaseNotExistException

    database, _, table = (pattern or "*").partition(".")
    if not database or (pattern and "." in pattern and not table) or table.count("."):
        raise UsageError(f"{pattern!r} is not a database or DATABASE.TABLE (either part may be a glob, quoted in "
                         "the shell: 'shop.*')")
    table = table or "*"
    if _GLOB & set(database):
        databases = [d for d in sorted(catalog.list_databases()) if fnmatch.fnmatchcase(d, database)]
    else:
        databases = [database]
    names = []
    for db in databases:
        try:
            tables = catalog.list_tables(db)
        except DatabaseNotExistException:
            if db != database:
                continue  # dropped between the two listings
            from .catalog import did_you_mean

            raise TableNotFound(f"database {db} does not exist",
                                hint=did_you_mean(db, catalog.list_databases)) from None
        names += [f"{db}.{t}" for t in sorted(tables) if fnmatch.fnmatchcase(t, table)]
    return names


def list_tables(catalog: CatalogConfig, pattern: Optional[str] = None) -> List[TableSummary]:
    """``tables``: a summary of each table ``pattern`` names (``table_names``), in name order."""
    from .compat import patches

    patches.install()
    cat = catalog.open() if isinstance(catalog, CatalogConfig) else catalog
    out = []
    for name in table_names(cat, pattern):
        try:
            out.append(summarize(open_table(name, cat)))
        except Exception as e:  # listed with its reason: one unreadable table does not hide the others
            from .catalog import root_cause

            out.append(TableSummary(name, [], [], "", 0, None, error=str(e) if isinstance(e, TableNotFound)
                                    else root_cause(e)))
    return out


__all__ = ["Column", "Snapshot", "TableInfo", "TableSummary", "describe", "iso_time", "list_tables", "table_names"]
