"""Which tables a multi-table follow covers: names and globs over a catalog (``shop.orders``, ``shop.*``).

A pattern is ``DATABASE.TABLE`` where either part may be a shell-style glob (``*``, ``?``, ``[abc]``), matched
case-sensitively against each part separately, so ``*`` never crosses the dot. A name without glob characters is
one table that must exist; a glob may match nothing yet (a live follow then waits for tables to appear).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Iterable, List, Sequence

from ..catalog import split_identifier
from ..errors import TableNotFound, UsageError

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class TablePattern:
    database: str
    table: str

    @classmethod
    def parse(cls, text: str) -> "TablePattern":
        try:
            database, table = split_identifier(text)
        except UsageError:
            raise UsageError(f"table {text!r} is not of the form DATABASE.TABLE (a glob such as 'shop.*' "
                             "is quoted in the shell)") from None
        if "$" in table and _GLOB_CHARS & set(text):
            raise UsageError(f"table {text!r}: a glob matches tables, not branches or system tables: name the "
                             "table (shop.orders$snapshots)")
        return cls(database, table)

    @property
    def text(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def is_glob(self) -> bool:
        return bool(_GLOB_CHARS & set(self.text))


def parse_patterns(texts: Iterable[str]) -> List[TablePattern]:
    patterns = [TablePattern.parse(t) for t in texts]
    if not patterns:
        raise UsageError("no table given")
    return patterns


def matching_tables(catalog, patterns: Sequence[TablePattern]) -> List[str]:
    """The catalog's ``db.table`` names matched by the glob patterns, in pattern order, each once.

    Names without glob characters are not listed here: they are opened (and reported missing) as they are.
    """
    from pypaimon.catalog.catalog_exception import DatabaseNotExistException

    globs = [p for p in patterns if p.is_glob]
    if not globs:
        return []
    all_databases = None
    found: dict = {}
    for p in globs:
        if _GLOB_CHARS & set(p.database):
            if all_databases is None:
                all_databases = catalog.list_databases()
            databases = [d for d in all_databases if fnmatch.fnmatchcase(d, p.database)]
        else:
            databases = [p.database]
        for database in databases:
            try:
                names = catalog.list_tables(database)
            except DatabaseNotExistException:
                if database == p.database:
                    raise TableNotFound(f"database {database} does not exist") from None
                continue  # dropped between the two listings
            for name in names:
                if fnmatch.fnmatchcase(name, p.table):
                    found.setdefault(f"{database}.{name}", None)
    return list(found)


__all__ = ["TablePattern", "matching_tables", "parse_patterns"]
