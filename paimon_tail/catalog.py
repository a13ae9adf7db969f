"""Warehouse, catalog options, config file and named catalogs → a pypaimon catalog and table.

The config file has the same flat YAML form as pypaimon's own CLI (``paimon.yaml``): ``warehouse``,
``metastore`` (filesystem | rest | jdbc) and any other catalog option; a named catalog (``catalogs.py``) holds
the same keys. Precedence: the command's flags, then the environment, then the user's default catalog
(``catalog_config``).

Why one module: it is every command's first step in the order a reader follows it (config, options checked,
names, the table opened) and its parts share one translation of what goes wrong (``root_cause``); each is small.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .errors import PaimonTailError, TableNotFound, UsageError, WarehouseError

_IDENT = re.compile(r"^[^.\s]+\.[^.\s]+$")


@dataclass(frozen=True)
class CatalogConfig:
    """Everything needed to open a catalog again (in another process, thread or Spark task)."""

    options: Mapping[str, str] = field(default_factory=dict)
    # where the options came from, for messages and hints: "-w", "PAIMON_WAREHOUSE", "catalog demo", ...
    source: str = field(default="", compare=False)

    @property
    def warehouse(self) -> str | None:
        return self.options.get("warehouse")

    @property
    def warehouse_id(self) -> str:
        """The warehouse as one comparable string: a local path made absolute, a URI as given (no trailing /)."""
        warehouse = (self.warehouse or "").rstrip("/")
        if warehouse and "://" not in warehouse:
            return os.path.abspath(warehouse)
        return warehouse[len("file://"):] if warehouse.startswith("file://") else warehouse

    def resolved(self) -> "CatalogConfig":
        """These options for another process in another directory (a Spark task on a worker, which runs in its
        own work directory): a relative local warehouse made absolute here."""
        warehouse = self.warehouse
        if not warehouse or "://" in warehouse or os.path.isabs(warehouse):
            return self
        return CatalogConfig({**self.options, "warehouse": os.path.abspath(warehouse)}, self.source)

    def read_options(self) -> tuple:
        """(these options without Paimon's table read options ``-O`` may carry (``READ_OPTIONS``), those
        options): a follow applies the latter to the tables it reads, the catalog never sees them."""
        read = {k: v for k, v in self.options.items() if k in READ_OPTIONS}
        if not read:
            return self, {}
        return CatalogConfig({k: v for k, v in self.options.items() if k not in READ_OPTIONS}), read

    def open(self):
        """Open the pypaimon catalog these options describe."""
        from pypaimon import CatalogFactory

        from .compat import patches

        patches.install()
        options = dict(self.options)
        metastore = options.setdefault("metastore", "filesystem")
        if metastore == "filesystem":
            warehouse = options.get("warehouse")
            if not warehouse:
                raise UsageError("no warehouse given", hint=NO_WAREHOUSE_HINT)
            check_local_dir(warehouse, "warehouse")
        try:
            catalog = CatalogFactory.create(options)
        except ValueError as e:
            raise UsageError(f"bad catalog options: {e}") from e
        except Exception as e:  # network, auth, unreadable warehouse
            raise _storage_error(e, "cannot open catalog", None) from e
        return catalog


def _storage_error(e: BaseException, context: str, file_io) -> PaimonTailError:
    """The error to show for ``e``: its storage root cause when storage is to blame (``storage.diagnosis``)."""
    from .storage.diagnosis import StorageError, diagnose, endpoint_of

    diagnosis = diagnose(e, endpoint_of(file_io) if file_io is not None else "the object store")
    if diagnosis is not None:
        return StorageError(f"{context}: {diagnosis.message}")
    from .storage.diagnosis import chain

    named = next((c for c in chain(e) if isinstance(c, PaimonTailError)), None)
    if named is not None:  # e.g. a schema file that cannot be read (storage/files.py): its message names it
        return named
    return WarehouseError(f"{context}: {root_cause(e)}")


def _check_bucket(catalog) -> None:
    """When a database or table is not found on an object store: is it the bucket, the credentials or the
    endpoint (one HeadBucket request, named in one line), rather than "database does not exist"?"""
    import pyarrow.fs as pafs

    from .storage.diagnosis import StorageError, endpoint_of

    file_io = getattr(catalog, "file_io", None)
    filesystem = getattr(file_io, "filesystem", None)
    if not isinstance(filesystem, pafs.S3FileSystem):
        return
    warehouse = file_io.properties.to_map().get("warehouse", "")
    bucket = file_io.to_filesystem_path(warehouse).split("/", 1)[0]
    try:
        info = filesystem.get_file_info(bucket)
    except Exception as e:
        raise _storage_error(e, f"cannot open warehouse {warehouse}", file_io) from e
    if info.type == pafs.FileType.NotFound:
        raise StorageError(f"cannot open warehouse {warehouse}: bucket {bucket} does not exist at "
                           f"{endpoint_of(file_io)}")


def check_local_dir(path: str, what: str) -> None:
    """A local directory we are about to read: say what is wrong with it (pypaimon reports a file, an unreadable
    directory and a missing one alike: as a database or table that does not exist). Remote paths pass."""
    problem = _local_dir_problem(path)
    if problem is not None:
        raise WarehouseError(f"{what} {path} {problem}")


_MISSING = "does not exist"


def _local_dir_problem(path: str) -> str | None:
    from .atomic_file import local_path

    local = local_path(path)
    if local is None:
        return None
    if not os.path.exists(local):
        return _MISSING
    if not os.path.isdir(local):
        return "is not a directory"
    try:
        os.listdir(local)
    except PermissionError:
        return "is not readable (permission denied)"
    return None


_CONFIG_MAX = 1 << 20


def load_config_file(path: str) -> dict[str, str]:
    """Read a pypaimon-style YAML catalog config file."""
    import yaml

    try:
        with open(path, "rb") as f:
            raw = f.read(_CONFIG_MAX + 1)  # a device or a huge file by mistake is not read to the end
        if len(raw) > _CONFIG_MAX:
            raise UsageError(f"config file {path} is larger than {_CONFIG_MAX >> 20} MiB: not a catalog config")
        data = yaml.safe_load(raw.decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"config file {path} not found") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"config file {path} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at {e.start})") \
            from None
    except OSError as e:
        raise UsageError(f"cannot read config file {path}: {e.strerror or e}") from None
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
            raise UsageError(f"catalog option -O {pair!r} is not key=value")
        out[key.strip()] = value
    return out


NO_WAREHOUSE_HINT = "pass -w PATH or --catalog NAME, or set PAIMON_WAREHOUSE: docs/catalogs.md"


def catalog_config(
    warehouse: str | None = None,
    options: Sequence[str] | Mapping[str, str] = (),
    config_file: str | None = None,
    catalog: str | None = None,
) -> CatalogConfig:
    """The catalog a command opens: what its flags say, else what the environment says, else the user's default
    catalog (``catalogs.py``); flags, highest first: ``-O key=value``, ``--warehouse``, ``--config FILE`` or
    ``--catalog NAME``.

    ``PAIMON_WAREHOUSE`` is left aside when ``--warehouse``, ``--config`` or ``--catalog`` is given, and the
    default catalog also when ``PAIMON_WAREHOUSE`` is set or ``-O metastore=...`` names a catalog of another
    kind. Otherwise ``-O`` adds to (or overrides keys of) the catalog in effect: ``-O s3.endpoint=...``.
    """
    given = dict(options) if isinstance(options, Mapping) else check_option_names(parse_options(options), "-O")
    if config_file and catalog:
        raise UsageError("--config and --catalog go one at a time")
    merged: dict[str, str] = {}
    source = ""
    env = os.environ.get("PAIMON_WAREHOUSE")
    if config_file:
        merged.update(check_option_names(load_config_file(config_file), f"config file {config_file}"))
        source = f"--config {config_file}"
    elif catalog:
        from . import catalogs

        named = catalogs.load()
        merged.update(check_option_names(named.get(catalog), f"catalog {catalog} of {named.path}"))
        source = f"catalog {catalog}"
    elif not warehouse and env:
        merged["warehouse"], source = env, "PAIMON_WAREHOUSE"
    elif not warehouse and "metastore" not in given:
        from . import catalogs

        named = catalogs.load()
        default = named.default_options()
        if default is not None:
            merged.update(check_option_names(default, f"catalog {named.default} of {named.path}"))
            source = f"default catalog {named.default}"
    if warehouse:
        merged["warehouse"], source = warehouse, source or "--warehouse"
    merged.update(given)
    return CatalogConfig(merged, source or ("-O" if given else ""))


# Paimon table options of a streaming read that ``-O`` may give for the tables a follow reads (as a Flink or Spark
# job passes them as dynamic options); pypaimon declares none of them.
READ_OPTIONS = ("streaming-read-overwrite",)

# Option families pypaimon (and the file systems under it) read by prefix; any key under them is passed on.
_OPTION_PREFIXES = ("fs.", "dfs.", "hadoop.", "ipc.", "io.", "hdfs.", "s3.", "oss.", "gcs.", "dlf.", "jdbc.",
                    "header.", "table-default.", "security.", "rest.", "lock.", "client-pool", "cache.",
                    "file-io.", "fuse.")


def check_option_names(options: dict[str, str], source: str) -> dict[str, str]:
    """Refuse a key pypaimon does not know (``warehous:`` would be ignored, and the catalog opened without it)."""
    if not options.keys() - {"warehouse", "metastore", "uri", "token"}:
        return options
    known = _known_options()
    for key in options:
        if key in known:
            _check_option_value(known[key], key, options[key], source)
            continue
        if key in READ_OPTIONS or key.startswith(_OPTION_PREFIXES):
            continue
        import difflib

        close = difflib.get_close_matches(key, sorted(known), n=1)
        raise UsageError(f"unknown catalog option {key!r} in {source}",
                         hint=f"did you mean {close[0]}?" if close else "pypaimon would ignore it")
    return options


def _check_option_value(option, key: str, value: str, source: str) -> None:
    """A value pypaimon cannot read as its option's type (a size, a duration, a number, a boolean) is refused
    now, naming the option: pypaimon reads it later, deep in a read, and says only what it expected."""
    from pypaimon.common.options.options_utils import OptionsUtils

    try:
        OptionsUtils.convert_value(value, option.get_clazz())
    except Exception as e:  # noqa: BLE001 - whatever pypaimon's parser raises is a bad value
        raise UsageError(f"bad value for catalog option {key}={value!r} in {source}: {_one_line(e)}") from None


def _known_options() -> dict:
    """Every option pypaimon declares (catalog, file system and table options), by key."""
    import inspect

    from pypaimon.common.options import config, core_options
    from pypaimon.common.options.config_option import ConfigOption

    known = {}
    for module in (config, core_options):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            known.update((v.key(), v) for v in vars(cls).values() if isinstance(v, ConfigOption))
    return known


def split_identifier(identifier: str) -> tuple[str, str]:
    if not _IDENT.match(identifier or ""):
        raise UsageError(f"table {identifier!r} is not of the form DATABASE.TABLE")
    db, table = identifier.split(".")
    return db, table


# -- names: branches and system tables ---------------------------------------------------------------------------
#: system tables a follow reads as they change (``stream/system.py``); the others pypaimon 2.1 builds are read once
STREAMED_SYSTEM_TABLES = ("audit_log", "binlog", "snapshots")
#: system tables Paimon defines that pypaimon 2.1 cannot build, and what to use instead
UNREADABLE_SYSTEM_TABLES = {
    "ro": "--from compacted-full reads the table as of its latest compaction",
    "read_optimized": "--from compacted-full reads the table as of its latest compaction",
    "statistics": "", "aggregation_fields": "", "row_tracking": "", "file_monitor": "",
    "all_table_options": "", "catalog_options": "", "all_partitions": "", "all_tables": "",
    "table_lineage": "", "source_table_lineage": "", "sink_table_lineage": "",
}


@dataclass(frozen=True)
class TableName:
    """``TABLE``, ``TABLE$branch_NAME``, ``TABLE$SYSTEM`` or ``TABLE$branch_NAME$SYSTEM`` (Paimon's names)."""

    database: str
    table: str
    branch: str | None = None
    system: str | None = None

    @classmethod
    def parse(cls, identifier: str) -> "TableName":
        database, obj = split_identifier(identifier)
        parts = obj.split("$")
        table, branch, system = parts[0], None, None
        rest = parts[1:]
        if rest and rest[0].startswith("branch_"):
            branch = rest.pop(0)[len("branch_"):]
            if not branch:
                raise UsageError(f"table {identifier!r}: $branch_ needs a branch name")
        if rest:
            system = rest.pop(0).lower()
        if rest or not table:
            raise UsageError(f"table {identifier!r} is not of the form DATABASE.TABLE[$branch_NAME][$SYSTEM_TABLE]")
        return cls(database, table, branch, system)

    @property
    def base(self) -> str:
        """``db.table`` with the branch, without the system table."""
        return f"{self.database}.{self.table}" + (f"$branch_{self.branch}" if self.branch else "")

    def check_system(self, readable) -> None:
        """Refuse a system table that cannot be read, in one line that says why."""
        name = self.system
        if name is None or name in STREAMED_SYSTEM_TABLES or name in readable:
            return
        if name in UNREADABLE_SYSTEM_TABLES:
            instead = UNREADABLE_SYSTEM_TABLES[name]
            raise UsageError(f"{self.base}${name}: pypaimon 2.1 cannot read the {name} system table",
                             hint=instead or None)
        known = sorted(set(STREAMED_SYSTEM_TABLES) | set(readable))
        raise UsageError(f"{self.base}${name}: Paimon has no system table {name}", hint=f"system tables: "
                         f"{', '.join(known)}; a branch is $branch_NAME")


@dataclass(frozen=True)
class SystemView:
    """A system table read from its table's data (``$audit_log``, ``$binlog``) or snapshots (``$snapshots``):
    ``base`` is the pypaimon table (of the branch named), ``name`` the system table."""

    base: Any
    name: str

    @property
    def identifier(self):
        from pypaimon.common.identifier import Identifier

        ident = self.base.identifier
        return Identifier.create(ident.get_database_name(), ident.get_table_name(), branch=ident.get_branch_name(),
                                 system_table=self.name)


def pypaimon_system_tables() -> tuple:
    """The system tables pypaimon 2.1 builds (read once by ``follow``)."""
    from pypaimon.table.system.system_table_loader import SYSTEM_TABLES

    return tuple(SYSTEM_TABLES)


def open_table(identifier: str, catalog: CatalogConfig | Any | None = None, **kwargs: Any):
    """Open ``db.table`` (also ``db.table$branch_NAME`` and system tables: ``db.table$snapshots``, ...);
    ``catalog`` is a CatalogConfig, a pypaimon catalog, or None (then kwargs build one).

    A streamed system table comes as a ``SystemView`` (``$snapshots`` and the others pypaimon builds: pypaimon's
    system table); a missing table, branch or system table is named in a ``TableNotFound`` or ``UsageError``.

    >>> open_table("shop.orders", warehouse="/tmp/warehouse")  # doctest: +SKIP
    """
    from pypaimon.catalog.catalog_exception import DatabaseNotExistException, TableNotExistException

    from .compat import patches

    patches.install()
    name = TableName.parse(identifier)
    if name.system is not None:
        name.check_system(pypaimon_system_tables())
    if catalog is None:
        catalog = catalog_config(**kwargs)
    cat = catalog.open() if isinstance(catalog, CatalogConfig) else catalog
    try:
        if name.system in STREAMED_SYSTEM_TABLES:
            return SystemView(cat.get_table(name.base), name.system)
        return cat.get_table(identifier)
    except DatabaseNotExistException:
        _check_bucket(cat)  # on an object store: the bucket, credentials or endpoint may be to blame
        database = identifier.split('.')[0]
        raise TableNotFound(f"database {database} does not exist",
                            hint=did_you_mean(database, lambda: cat.list_databases())) from None
    except TableNotExistException:
        _check_bucket(cat)
        database = name.database
        plain = f"{database}.{name.table}"
        _check_table_dirs(cat, plain)
        try:
            cat.get_database(database)
        except DatabaseNotExistException:
            raise TableNotFound(f"database {database} does not exist",
                                hint=did_you_mean(database, lambda: cat.list_databases())) from None
        except Exception:
            pass
        if name.branch is not None:
            _check_branch(cat, name)
        hint = did_you_mean(name.table, lambda: cat.list_tables(database))
        raise TableNotFound(f"table {plain} does not exist",
                            hint=hint and hint.replace("did you mean ", f"did you mean {database}.")) from None
    except ValueError as e:  # pypaimon refuses the name itself
        raise UsageError(f"table {identifier!r}: {_one_line(e)}") from None
    except Exception as e:
        raise _storage_error(e, f"cannot open table {identifier}", getattr(cat, "file_io", None)) from e


def check_qualified(identifiers: Sequence[str], catalog: CatalogConfig | Any) -> None:
    """A table named without its database (``follow orders``): a usage error that names the tables of that name
    in the catalog's databases ("did you mean shop.orders?"), listed only then."""
    for identifier in identifiers:
        if "." in identifier or not identifier or set("*?[") & set(identifier):
            continue  # a glob without its database is refused where globs are read (stream/tables.py)
        found: list = []
        try:
            cat = catalog.open() if isinstance(catalog, CatalogConfig) else catalog
            for database in sorted(cat.list_databases()):
                if identifier in cat.list_tables(database):
                    found.append(f"{database}.{identifier}")
        except Exception:  # the suggestion is best effort; the error stands without it
            pass
        raise UsageError(f"table {identifier!r} is not of the form DATABASE.TABLE",
                         hint=f"did you mean {' or '.join(found)}?" if found else None)


def _check_branch(catalog, name: TableName) -> None:
    """The table is there but not the branch: say so, with the branches there are."""
    from pypaimon.catalog.catalog_exception import TableNotExistException

    try:
        table = catalog.get_table(f"{name.database}.{name.table}")
    except TableNotExistException:
        return  # the table itself is missing: said by the caller
    try:
        branches = sorted(table.branch_manager().branches())
    except Exception:
        branches = []
    hint = did_you_mean(name.branch, lambda: branches) or \
        (f"branches: {', '.join(branches)}" if branches else "the table has no branch")
    raise TableNotFound(f"branch {name.branch} of {name.database}.{name.table} does not exist", hint=hint) from None


def did_you_mean(name: str, names) -> str | None:
    """'did you mean orders?' for a name close to one that exists (a typo), else None; listing is best effort."""
    import difflib

    try:
        close = difflib.get_close_matches(name, list(names()), n=1, cutoff=0.5)
    except Exception:
        return None
    return f"did you mean {close[0]}?" if close else None


def _check_table_dirs(catalog, identifier: str) -> None:
    """A database or table directory that exists but cannot be read is not one that does not exist."""
    warehouse = getattr(catalog, "warehouse", None)
    if not isinstance(warehouse, str):
        return
    database, table = identifier.split(".")
    db_dir = f"{warehouse.rstrip('/')}/{database}.db"
    for path, what in ((db_dir, f"database {database} at"), (f"{db_dir}/{table}", f"table {identifier} at")):
        problem = _local_dir_problem(path)
        if problem == _MISSING:
            return
        if problem is not None:
            raise WarehouseError(f"{what} {path} {problem}")


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def root_cause(e: BaseException) -> str:
    """One line naming what really failed: the innermost exception of the ``__cause__``/``__context__`` chain
    (pypaimon wraps an OSError in a RuntimeError or ValueError of its own), with its type."""
    from .storage.diagnosis import chain

    *_, inner = chain(e)
    return f"{type(inner).__name__}: {_one_line(inner)}"


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
        """The table's name as it was opened (``t$branch_dev``, ``t$audit_log``: Paimon's object name)."""
        ident = table.identifier
        name = ident.get_object_name() if hasattr(ident, "get_object_name") else ident.get_table_name()
        keys = getattr(table, "primary_keys", None)
        keys = () if isinstance(table, SystemView) or callable(keys) else tuple(keys or ())
        return cls(ident.get_database_name(), name, keys)


def table_name(table) -> str:
    """``db.table`` for a pypaimon table (its ``identifier`` prints as ``Identifier(database=…)``)."""
    ident = table.identifier
    return ident.get_full_name() if hasattr(ident, "get_full_name") else str(ident)


def reload_table(table):
    """The same table with its latest schema (after schema evolution); raises if the table is gone."""
    from pypaimon.schema.schema_manager import SchemaManager

    from .errors import TableChanged

    try:
        schema = SchemaManager(table.file_io, table.table_path, branch=table.current_branch()).latest()
    except Exception as e:
        raise TableChanged(f"table {table_name(table)} cannot be reloaded: {_one_line(e)}") from e
    if schema is None:
        raise TableChanged(f"table {table_name(table)} was dropped while being followed")
    return type(table)(table.file_io, table.identifier, table.table_path, schema, table.catalog_environment)
