"""Data source options → what to open, where to start, how much per trigger. No PySpark import here.

Option names follow Paimon's own Spark connector where it has one (``scan.mode``, ``scan.snapshot-id``,
``scan.timestamp-millis``, ``consumer-id``, ``read.changelog``, ``read.stream.maxRowsPerTrigger``, ...).
Spark hands a Python data source its options with lower-cased keys, so every lookup here is lower-case.

Catalog options: ``warehouse`` and ``metastore``/``uri``/``token`` directly, any other catalog option as
``catalog.<key>``, a pypaimon-style YAML file as ``config``, or all of them as JSON in ``catalog-options``.
Spark lower-cases ``catalog.fs.s3.accessKeyId``; pypaimon's mixed-case keys are restored (``canonical_option_key``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

from ..catalog import catalog_config, split_identifier
from ..errors import UsageError
from ..stream.positions import StartPosition, parse_start, parse_timestamp

_DIRECT_CATALOG_KEYS = ("warehouse", "metastore", "uri", "token", "token.provider", "dlf.region")
_SCAN_MODES = {
    "default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp",
    "compacted-full",
}
# Batch time travel: handed to pypaimon as dynamic table options.
_TIME_TRAVEL_KEYS = ("scan.snapshot-id", "scan.timestamp-millis", "scan.timestamp", "scan.tag-name")


def _bool(value: Optional[str], name: str, default: bool = False) -> bool:
    if value is None:
        return default
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise UsageError(f"option {name}={value!r} is not true or false")


def _positive_int(value: Optional[str], name: str) -> Optional[int]:
    if value is None or str(value).strip() == "":
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        raise UsageError(f"option {name}={value!r} is not an integer") from None
    if n < 1:
        raise UsageError(f"option {name}={value!r} must be at least 1")
    return n


def _size(value: Optional[str], name: str, default: int) -> int:
    """Paimon memory sizes: ``128mb``, ``4 MB``, ``1048576``."""
    if value is None:
        return default
    text = str(value).strip().lower().replace(" ", "")
    units = {"kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20, "gb": 1 << 30, "g": 1 << 30, "b": 1}
    for unit, factor in units.items():
        if text.endswith(unit) and text[: -len(unit)].isdigit():
            return int(text[: -len(unit)]) * factor
    if text.isdigit():
        return int(text)
    raise UsageError(f"option {name}={value!r} is not a size like 128mb")


def _list(value: Optional[str]) -> Tuple[str, ...]:
    if not value:
        return ()
    return tuple(v.strip() for v in str(value).split(",") if v.strip())


@dataclass(frozen=True)
class SourceOptions:
    catalog: Dict[str, str]
    table: str
    # reading
    select: Tuple[str, ...] = ()
    where: Optional[str] = None
    row_kind: bool = False
    time_travel: Dict[str, str] = field(default_factory=dict)
    start: StartPosition = StartPosition("latest-full")
    consumer_id: Optional[str] = None
    max_rows: Optional[int] = None
    max_files: Optional[int] = None
    max_bytes: Optional[int] = None
    max_snapshots: Optional[int] = None
    min_rows: Optional[int] = None  # with max_delay_ms: wait for this many rows, at most that long
    max_delay_ms: Optional[int] = None
    target_split_size: int = 128 << 20
    batch_size: int = 65536  # rows per Arrow batch read (pypaimon's read.batch-size)
    open_file_cost: int = 4 << 20
    filter_pushdown: bool = True
    read_overwrite: Optional[bool] = None  # Paimon's streaming-read-overwrite (None: the table's own option)
    # writing
    commit_user: Optional[str] = None
    primary_keys: Tuple[str, ...] = ()
    partition_keys: Tuple[str, ...] = ()
    table_options: Dict[str, str] = field(default_factory=dict)


def _mixed_case_keys() -> Dict[str, str]:
    """pypaimon's catalog option keys that are not all lower-case (``fs.s3.accessKeyId``…), by their lower case."""
    import inspect

    from pypaimon.common.options import config
    from pypaimon.common.options.config_option import ConfigOption

    keys = {}
    for _, cls in inspect.getmembers(config, inspect.isclass):
        for value in vars(cls).values():
            if isinstance(value, ConfigOption) and value.key() != value.key().lower():
                keys[value.key().lower()] = value.key()
    return keys


_MIXED_CASE: Optional[Dict[str, str]] = None


def canonical_option_key(key: str) -> str:
    """Spark lower-cases data source option keys; pypaimon reads some keys in camelCase and ignores the lower-case
    spelling (silently falling back to other credentials). Restore pypaimon's spelling of the keys it knows."""
    global _MIXED_CASE
    if _MIXED_CASE is None:
        _MIXED_CASE = _mixed_case_keys()
    return _MIXED_CASE.get(key.lower(), key)


def table_location(value: Optional[str]) -> Optional[Tuple[str, str]]:
    """``<warehouse>/<db>.db/<table>`` (a table's location, as paimon-spark's ``load(path)`` takes it) →
    (warehouse, ``db.table``); None for a ``db.table`` name."""
    if not value or ("/" not in value and "://" not in value):
        return None
    parent, _, table = str(value).rstrip("/").rpartition("/")
    warehouse, _, database = parent.rpartition("/")
    if not table or not database.endswith(".db") or len(database) <= 3 or not warehouse.strip("/:"):
        raise UsageError(f"{value!r} is not a table location (<warehouse>/<database>.db/<table>)",
                         hint='or load("db.table") with .option("warehouse", PATH)')
    if warehouse.startswith("file:") and not warehouse.startswith("file://"):  # Hadoop's file:/path
        warehouse = warehouse[len("file:"):]
    return warehouse, f"{database[:-3]}.{table}"


def _same_place(a: str, b: str) -> bool:
    def norm(p: str) -> str:
        p = p[len("file://"):] if p.startswith("file://") else p[len("file:"):] if p.startswith("file:") else p
        return p.rstrip("/") or "/"

    return norm(a) == norm(b)


def catalog_options(options: Mapping[str, str]) -> Dict[str, str]:
    o = {str(k).lower(): v for k, v in options.items()}
    merged: Dict[str, str] = {}
    for key in _DIRECT_CATALOG_KEYS:
        if o.get(key) is not None:
            merged[key] = o[key]
    location = table_location(o.get("table") or o.get("path"))
    if location is not None:
        if merged.get("warehouse") and not _same_place(merged["warehouse"], location[0]):
            raise UsageError(f"the table location {o.get('table') or o.get('path')} is not in warehouse "
                             f"{merged['warehouse']}")
        merged.setdefault("warehouse", location[0])
    for key, value in o.items():
        if key.startswith("catalog.") and key != "catalog.options":
            merged[canonical_option_key(key[len("catalog."):])] = value
    if o.get("catalog-options"):
        try:
            extra = json.loads(o["catalog-options"])
        except ValueError as e:
            raise UsageError(f"option catalog-options is not JSON: {e}") from None
        if not isinstance(extra, dict):
            raise UsageError("option catalog-options must be a JSON object")
        merged.update({str(k): str(v) for k, v in extra.items()})
    warehouse = merged.pop("warehouse", None)
    config = catalog_config(warehouse=warehouse, options=merged, config_file=o.get("config"))
    if not config.options.get("warehouse") and config.options.get("metastore", "filesystem") == "filesystem":
        raise UsageError("no warehouse given", hint='pass .option("warehouse", PATH)')
    return dict(config.options)


def table_identifier(options: Mapping[str, str]) -> str:
    o = {str(k).lower(): v for k, v in options.items()}
    ident = o.get("table") or o.get("path")
    if not ident:
        raise UsageError(
            "no table given", hint='pass .option("table", "db.table") or .load("db.table") / .save("db.table")'
        )
    location = table_location(ident)
    if location is not None:
        ident = location[1]
    elif o.get("database") and "." not in ident:  # paimon-spark's database + table options
        ident = f"{o['database']}.{ident}"
    split_identifier(ident)
    return ident


# paimon-spark options that would change what a job does, and that this source does not do: refused, so a job
# switched from the connector by its format name fails at once instead of doing something else.
_UNSUPPORTED = {
    "write.merge-schema": "schema merging on write is not supported; evolve the table first (ALTER TABLE)",
    "write.merge-schema.explicit-cast": "schema merging on write is not supported",
    "catalog": "a Spark catalog name cannot be used here; give the catalog options (warehouse, catalog.<key>, "
               "config) instead",
}


def _refuse_unsupported(o: Mapping[str, str]) -> None:
    for key, why in _UNSUPPORTED.items():
        value = o.get(key)
        if value is None or (key != "catalog" and str(value).strip().lower() in ("false", "0", "no", "")):
            continue
        raise UsageError(f"option {key}={value} is not supported by paimon-tail's source: {why}")


def start_position(options: Mapping[str, str]) -> StartPosition:
    """Paimon's scan.mode (+ scan.snapshot-id / scan.timestamp-millis), or paimon-tail's ``from`` grammar."""
    o = {str(k).lower(): v for k, v in options.items()}
    mode = (o.get("scan.mode") or "default").strip().lower()
    sid, ts_ms, ts_text = o.get("scan.snapshot-id"), o.get("scan.timestamp-millis"), o.get("scan.timestamp")
    if o.get("from"):
        if mode != "default" or sid or ts_ms or ts_text:
            raise UsageError("option from cannot be combined with scan.mode / scan.snapshot-id / scan.timestamp")
        return parse_start(o["from"])
    if mode not in _SCAN_MODES:
        raise UsageError(
            f"unsupported scan.mode {mode!r}", hint=f"use one of {', '.join(sorted(_SCAN_MODES))}, or the option from"
        )
    if mode == "default":
        mode = "from-snapshot" if sid else "from-timestamp" if (ts_ms or ts_text) else "latest-full"
    if mode in ("latest-full", "full"):
        return StartPosition("latest-full")
    if mode == "latest":
        return StartPosition("latest")
    if mode == "compacted-full":
        return StartPosition("compacted-full")
    if mode in ("from-snapshot", "from-snapshot-full"):
        if not sid:
            raise UsageError(f"scan.mode {mode} needs scan.snapshot-id")
        n = _positive_int(sid, "scan.snapshot-id")
        return StartPosition("snapshot" if mode == "from-snapshot" else "snapshot-full", snapshot_id=n)
    if ts_ms:
        try:
            return StartPosition("timestamp", timestamp_ms=int(ts_ms))
        except ValueError:
            raise UsageError(f"option scan.timestamp-millis={ts_ms!r} is not an integer") from None
    if ts_text:
        return StartPosition("timestamp", timestamp_ms=parse_timestamp(ts_text))
    raise UsageError("scan.mode from-timestamp needs scan.timestamp-millis or scan.timestamp")


def parse_options(options: Mapping[str, str], *, need_catalog: bool = True) -> SourceOptions:
    o = {str(k).lower(): v for k, v in options.items()}
    time_travel = {k: str(o[k]) for k in _TIME_TRAVEL_KEYS if o.get(k) is not None}
    table_options = {}
    for key, value in o.items():
        if key.startswith("table."):
            table_options[key[len("table."):]] = str(value)
    if o.get("bucket") is not None:
        table_options["bucket"] = str(o["bucket"])
    if o.get("rowkind.field") is not None:
        table_options["rowkind.field"] = str(o["rowkind.field"])
    _refuse_unsupported(o)
    consumer = o.get("consumer-id") or None
    if consumer:
        from ..stream.consumer import ConsumerStore

        ConsumerStore.validate_id(consumer)
    if (o.get("read.stream.minrowspertrigger") is None) != (o.get("read.stream.maxtriggerdelayms") is None):
        raise UsageError("read.stream.minRowsPerTrigger and read.stream.maxTriggerDelayMs go together")
    return SourceOptions(
        catalog=catalog_options(o) if need_catalog else {},
        table=table_identifier(o),
        select=_list(o.get("select")),
        where=o.get("where") or None,
        row_kind=_bool(o.get("read.changelog"), "read.changelog"),
        time_travel=time_travel,
        start=start_position(o),
        consumer_id=consumer,
        max_rows=_positive_int(o.get("read.stream.maxrowspertrigger"), "read.stream.maxRowsPerTrigger"),
        max_files=_positive_int(o.get("read.stream.maxfilespertrigger"), "read.stream.maxFilesPerTrigger"),
        max_bytes=_positive_int(o.get("read.stream.maxbytespertrigger"), "read.stream.maxBytesPerTrigger"),
        max_snapshots=_positive_int(
            o.get("read.stream.maxsnapshotspertrigger"), "read.stream.maxSnapshotsPerTrigger"
        ),
        min_rows=_positive_int(o.get("read.stream.minrowspertrigger"), "read.stream.minRowsPerTrigger"),
        max_delay_ms=_positive_int(o.get("read.stream.maxtriggerdelayms"), "read.stream.maxTriggerDelayMs"),
        batch_size=_positive_int(o.get("read.batch-size"), "read.batch-size") or 65536,
        target_split_size=_size(o.get("source.split.target-size"), "source.split.target-size", 128 << 20),
        open_file_cost=_size(o.get("source.split.open-file-cost"), "source.split.open-file-cost", 4 << 20),
        filter_pushdown=_bool(o.get("filterpushdown"), "filterPushdown", default=True),
        read_overwrite=(_bool(o.get("streaming-read-overwrite"), "streaming-read-overwrite")
                        if o.get("streaming-read-overwrite") is not None else None),
        commit_user=o.get("commit.user") or None,
        primary_keys=_list(o.get("primary-key")),
        partition_keys=_list(o.get("partition")),
        table_options=table_options,
    )
