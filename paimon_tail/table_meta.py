"""A table's name, path and latest schema, read without pypaimon's catalog: what a lookup client needs.

``TableMeta`` is what ``service/keys/``, ``service/client/``, ``stream/quick.py``, ``spark/stream.py`` and ``arrow_join.py``
know of a table; it sits low in the layers (it needs only ``atomic_file``) so every one of them can import it, and it
imports neither pyarrow nor pypaimon (the command line's few-keys lookup and ``follow -e``'s quick exit rely on it:
tests/cli/test_startup.py, tests/stream/test_quick_exit.py).

pypaimon 2.1 cannot open a table without importing its whole read path first: ``pypaimon.catalog`` imports the
table, which imports the reader, which imports pandas, ``pyarrow.dataset``, polars and requests at module level
(0.8 s on the machines here; ``python -X importtime -c "from pypaimon import CatalogFactory"``). A lookup client
reads no data file: it needs the primary key, partition and bucket keys, the bucket count and the column types,
all in ``<warehouse>/<db>.db/<table>/schema/schema-<N>`` (the highest N is the latest, as pypaimon's
``SchemaManager.latest`` reads it). So for a local file-system warehouse with no other catalog options, this reads
that JSON directly; every other catalog (object stores, REST, JDBC, options) goes through pypaimon as before
(``TableMeta.of_table``). Delete the local reader when ``from pypaimon import CatalogFactory`` and
``catalog.get_table`` no longer import the read path (tests/cli/test_startup.py then stays green through pypaimon).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .atomic_file import local_path

_SCHEMA_FILE = re.compile(r"^schema-(\d+)$")


@dataclass(frozen=True)
class TableMeta:
    """The parts of a table's latest schema that locate a key: fields as in the schema file, keys, options."""

    name: str  # db.table
    path: str  # the table's directory (a URI for remote warehouses)
    schema_id: int
    fields: List[Dict[str, Any]]  # {"id", "name", "type"} as in the schema file (nested types are objects)
    primary_keys: List[str]
    partition_keys: List[str]
    options: Dict[str, str]
    read_text: Callable[[str], Optional[str]] = field(repr=False, compare=False, default=None)
    table: Any = field(repr=False, compare=False, default=None)  # the pypaimon table, when opened through one
    branch: str = "main"  # db.table$branch_NAME: its schema and snapshots are under <path>/branch/branch-NAME

    @property
    def field_names(self) -> List[str]:
        return [f["name"] for f in self.fields]

    @property
    def bucket_keys(self) -> List[str]:
        """Paimon's rule (``TableSchema.bucketKeys``): the ``bucket-key`` option, else primary minus partition keys."""
        configured = (self.options.get("bucket-key") or "").strip()
        if configured:
            return [k.strip() for k in configured.split(",") if k.strip()]
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def num_buckets(self) -> int:
        return int(self.options.get("bucket", -1))

    def type_name(self, column: str) -> str:
        """The column's Paimon type as written in the schema, e.g. ``BIGINT NOT NULL`` (JSON text for nested)."""
        t = next(f["type"] for f in self.fields if f["name"] == column)
        return t if isinstance(t, str) else json.dumps(t)

    def data_fields(self, names: Optional[List[str]] = None) -> list:
        """pypaimon ``DataField``s (for Arrow types and the vectorised hash; imports pyarrow)."""
        from pypaimon.schema.data_types import DataField

        by_name = {f["name"]: f for f in self.fields}
        return [DataField.from_dict(by_name[n]) for n in (names if names is not None else self.field_names)]

    # -- sources ------------------------------------------------------------------------------------------------
    @classmethod
    def of_table(cls, table) -> "TableMeta":
        """From an opened pypaimon table (any catalog, any file system)."""
        schema = table.table_schema
        file_io = table.file_io
        root = table.table_path

        def read_text(relative: str) -> Optional[str]:
            path = f"{root}/{relative}"
            try:
                if not file_io.exists(path):
                    return None
                return file_io.read_file_utf8(path)
            except FileNotFoundError:
                return None

        branch = table.identifier.get_branch_name() or "main"
        return cls(table.identifier.get_full_name(), str(root), schema.id, [f.to_dict() for f in schema.fields],
                   list(schema.primary_keys), list(schema.partition_keys), dict(schema.options), read_text, table,
                   branch)


def table_meta(table) -> TableMeta:
    """A pypaimon table or a ``TableMeta`` → ``TableMeta`` (what routing and key parsing read)."""
    return table if isinstance(table, TableMeta) else TableMeta.of_table(table)


def read_local(identifier: str, options: Dict[str, str]) -> Optional[TableMeta]:
    """The latest schema of ``db.table`` in a local file-system warehouse, or None when pypaimon must open it (any
    other catalog or option, a missing table: pypaimon then says what is wrong)."""
    if set(options) - {"warehouse", "metastore"} or options.get("metastore", "filesystem") != "filesystem":
        return None
    warehouse = local_path(options.get("warehouse") or "")
    if not warehouse or identifier.count(".") != 1:
        return None
    database, name = identifier.split(".")
    name, _, branch = name.partition("$branch_")  # a branch's schemas are its own, its data files the table's
    if "$" in name or "$" in branch or (_ and not branch):
        return None  # a system table: pypaimon opens it
    root = os.path.join(warehouse.rstrip("/") or "/", f"{database}.db", name)
    schemas = os.path.join(root, "branch", f"branch-{branch}", "schema") if branch else os.path.join(root, "schema")
    try:
        ids = [int(m.group(1)) for m in map(_SCHEMA_FILE.match, os.listdir(schemas)) if m]
        if not ids:
            return None
        with open(os.path.join(schemas, f"schema-{max(ids)}"), encoding="utf-8") as f:
            schema = json.load(f)
        meta = TableMeta(identifier, root, int(schema["id"]), list(schema["fields"]),
                         list(schema.get("primaryKeys") or []), list(schema.get("partitionKeys") or []),
                         {str(k): str(v) for k, v in (schema.get("options") or {}).items()},
                         lambda relative: _read_local_text(os.path.join(root, relative)), branch=branch or "main")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return meta


def _read_local_text(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


__all__ = ["TableMeta", "read_local", "table_meta"]
