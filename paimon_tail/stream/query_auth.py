"""REST query auth: the row filter and column masks a REST catalog returns for a table, applied on every read path.

A REST catalog marks a table whose reads it restricts with ``query-auth.enabled``; for each read, pypaimon asks
the catalog (``auth_table_query``) for a row filter and column masks and applies them by wrapping the plan's splits
(``QueryAuthSplit``): its table read filters and masks what it reads from such a split, with the Python reader
(pypaimon's Rust reader cannot, and refuses them). Where paimon-tail plans or reads itself, the same:

* ``follow``'s plans: pypaimon's streaming scan wraps its full and delta plans; the plans made in
  ``compat/adapters/streaming_scan.filtered_plan`` (changelog producers' start, file-creation-time, overwrites) are wrapped
  there the same way; full reads keep pypaimon's Python reader (``compat/adapters/native_reads.py``);
* ``--catch-up diff`` reads its before/after splits through the same wrapped plans; it compares rows by primary
  key, so a mask on a key column is refused (masked keys would pair unrelated rows);
* the Spark source: a split crosses to a task without its wrapping (pypaimon's split serializer writes the data
  split), so each task asks the catalog for the rules itself and wraps the splits it reads (``wrap``);
* the query service's executors read data files themselves (``compat/adapters/kv_files.py``): ``serve`` refuses a table
  with query auth (``refuse``).
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..errors import UsageError


def enabled(table) -> bool:
    """Does the catalog restrict reads of ``table`` (``query-auth.enabled``, set by a REST catalog)?"""
    options = getattr(table, "options", None)
    return bool(getattr(options, "query_auth_enabled", False))


def rules(table, read_type=None):
    """The catalog's row filter and column masks for reading ``read_type`` (pypaimon ``DataField``s; None: every
    column) of ``table``: pypaimon's ``TableQueryAuthResult``, or None when there are none."""
    if not enabled(table):
        return None
    from pypaimon.read.table_scan import authorize

    query = table.catalog_environment.table_query_auth(table.options, table.identifier)
    return authorize(table, query, read_type)


def wrap(splits: Sequence, result) -> list:
    """``splits`` wrapped so that reading them applies ``result`` (None: as they are); wrapped ones stay."""
    if result is None:
        return list(splits)
    from pypaimon.read.plan import Plan
    from pypaimon.read.query_auth_split import QueryAuthSplit

    plain = [s.split if isinstance(s, QueryAuthSplit) else s for s in splits]
    return list(result.convert_plan(Plan(plain)).splits())


def unwrap(split):
    """The data split under a ``QueryAuthSplit`` (what crosses to a Spark task, which wraps it again)."""
    return getattr(split, "split", split) if type(split).__name__ == "QueryAuthSplit" else split


def masked_keys(table, result) -> list:
    """The primary-key columns ``result`` masks."""
    masks = getattr(result, "column_masking", None) or {}
    return [k for k in (table.primary_keys or ()) if k in masks]


def check_diff(table, result) -> None:
    """``--catch-up diff`` pairs rows by primary key: with a key column masked it would pair unrelated rows."""
    masked = masked_keys(table, result)
    if masked:
        raise UsageError(f"--catch-up diff cannot apply the catalog's column mask on primary-key column"
                         f"{'s' if len(masked) > 1 else ''} {', '.join(masked)}: rows are paired by key",
                         hint="use --catch-up replay")


def refuse(table, what: str, why: str, name: Optional[str] = None) -> None:
    """A clear refusal for a path that cannot apply the catalog's rules."""
    if enabled(table):
        label = name or table.identifier.get_full_name()
        raise UsageError(f"{what} cannot apply the REST catalog's row filter and column masks of {label} "
                         f"(query-auth.enabled): {why}")


__all__ = ["check_diff", "enabled", "masked_keys", "refuse", "rules", "unwrap", "wrap"]
