"""Warehouse, catalog options and config file → a pypaimon catalog and table.

The config file has the same flat YAML form as pypaimon's own CLI (``paimon.yaml``): ``warehouse``,
``metastore`` (filesystem | rest | jdbc) and any other catalog option. Precedence, highest first: ``-O`` options,
``--warehouse`` / ``PAIMON_WAREHOUSE``, the config file.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .errors import TableNotFound, UsageError, WarehouseError

_IDENT = re.compile(r"^[^.\s]+\.[^.\s]+$")


@dataclass(frozen=True)
class CatalogConfig:
    """Everything needed to open a catalog again (in another process, thread or Spark task)."""

    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def warehouse(self) -> str | None:
        return self.options.get("warehouse")

    def open(self):
        """Open the pypaimon catalog these options describe."""
        from pypaimon import CatalogFactory

        from . import compat

        compat.install()
        options = dict(self.options)
        metastore = options.setdefault("metastore", "filesystem")
        if metastore == "filesystem":
            warehouse = options.get("warehouse")
            if not warehouse:
                raise UsageError("no warehouse given", hint="pass --warehouse PATH or set PAIMON_WAREHOUSE")
            if "://" not in warehouse and not os.path.isdir(warehouse):
                raise WarehouseError(f"warehouse {warehouse} does not exist")
        try:
            return CatalogFactory.create(options)
        except ValueError as e:
            raise UsageError(f"bad catalog options: {e}") from e
        except Exception as e:  # network, auth, unreadable warehouse
            raise WarehouseError(f"cannot open catalog: {_one_line(e)}") from e


def load_config_file(path: str) -> dict[str, str]:
    """Read a pypaimon-style YAML catalog config file."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise UsageError(f"config file {path} not found") from None
    except yaml.YAMLError as e:
        raise UsageError(f"config file {path} is not valid YAML: {_one_line(e)}") from None
    if data is None:
        raise UsageError(f"config file {path} is empty")
    if not isinstance(data, dict):
        raise UsageError(f"config file {path} must be a mapping of catalog options")
    return {str(k): str(v) for k, v in data.items()}


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    """Parse repeated ``key=value`` catalog options."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"catalog option {pair!r} is not key=value")
        out[key.strip()] = value
    return out


def catalog_config(
    warehouse: str | None = None,
    options: Sequence[str] | Mapping[str, str] = (),
    config_file: str | None = None,
) -> CatalogConfig:
    """Merge the three sources of catalog options."""
    merged: dict[str, str] = {}
    if config_file:
        merged.update(load_config_file(config_file))
    warehouse = warehouse or os.environ.get("PAIMON_WAREHOUSE")
    if warehouse:
        merged["warehouse"] = warehouse
    merged.update(options if isinstance(options, Mapping) else parse_options(options))
    return CatalogConfig(merged)


def split_identifier(identifier: str) -> tuple[str, str]:
    if not _IDENT.match(identifier or ""):
        raise UsageError(f"table {identifier!r} is not of the form DATABASE.TABLE")
    db, table = identifier.split(".")
    return db, table


def open_table(identifier: str, catalog: CatalogConfig | Any | None = None, **kwargs: Any):
    """Open ``db.table``; ``catalog`` is a CatalogConfig, a pypaimon catalog, or None (then kwargs build one).

    >>> open_table("shop.orders", warehouse="/tmp/warehouse")  # doctest: +SKIP
    """
    from pypaimon.catalog.catalog_exception import DatabaseNotExistException, TableNotExistException

    from . import compat

    compat.install()
    split_identifier(identifier)
    if catalog is None:
        catalog = catalog_config(**kwargs)
    cat = catalog.open() if isinstance(catalog, CatalogConfig) else catalog
    try:
        return cat.get_table(identifier)
    except DatabaseNotExistException:
        raise TableNotFound(f"database {identifier.split('.')[0]} does not exist") from None
    except TableNotExistException:
        database = identifier.split(".")[0]
        try:
            cat.get_database(database)
        except DatabaseNotExistException:
            raise TableNotFound(f"database {database} does not exist") from None
        except Exception:
            pass
        raise TableNotFound(f"table {identifier} does not exist") from None
    except Exception as e:
        raise WarehouseError(f"cannot open table {identifier}: {_one_line(e)}") from e


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@dataclass(frozen=True)
class TableRef:
    """Where rows came from: what a renderer needs to tag them (``_table``) and key change events."""

    database: str
    table: str
    primary_keys: tuple = ()

    @property
    def full_name(self) -> str:
        return f"{self.database}.{self.table}"

    @classmethod
    def of(cls, table) -> "TableRef":
        ident = table.identifier
        return cls(ident.get_database_name(), ident.get_table_name(), tuple(table.primary_keys or ()))


def table_name(table) -> str:
    """``db.table`` for a pypaimon table (its ``identifier`` prints as ``Identifier(database=…)``)."""
    ident = table.identifier
    return ident.get_full_name() if hasattr(ident, "get_full_name") else str(ident)


def reload_table(table):
    """The same table with its latest schema (after schema evolution); raises if the table is gone."""
    from pypaimon.schema.schema_manager import SchemaManager

    from .errors import TableChanged

    try:
        schema = SchemaManager(table.file_io, table.table_path).latest()
    except Exception as e:
        raise TableChanged(f"table {table_name(table)} cannot be reloaded: {_one_line(e)}") from e
    if schema is None:
        raise TableChanged(f"table {table_name(table)} was dropped while being followed")
    return type(table)(table.file_io, table.identifier, table.table_path, schema, table.catalog_environment)
