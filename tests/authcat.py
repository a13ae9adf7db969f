"""A catalog that answers REST query auth as a REST catalog would: a filesystem catalog whose tables carry
``query-auth.enabled`` and whose ``auth_table_query`` returns a row filter and column masks (no REST server is
reachable in these tests). Registered as ``metastore=authtest``; the rules come from the environment variable
``PAIMON_TAIL_TEST_AUTH`` (JSON: ``{"filter": [predicate JSON, ...], "masks": {column: transform JSON}}``), so a
CLI run in a child process (``CLI``) and a Spark task's code run here answer alike.
"""
from __future__ import annotations

import json
import os
import sys

from pypaimon.catalog.catalog_environment import CatalogEnvironment
from pypaimon.catalog.catalog_factory import CatalogFactory
from pypaimon.catalog.filesystem_catalog import FileSystemCatalog
from pypaimon.catalog.table_query_auth import TableQueryAuthResult

ENV = "PAIMON_TAIL_TEST_AUTH"
#: the CLI, with this catalog registered first
CLI = [sys.executable, "-c", "import sys; sys.argv[0] = 'paimon-tail'; import tests.authcat; "
       "from paimon_tail.cli import main; main()"]


def rules(filter_rules=None, masks=None) -> str:
    return json.dumps({"filter": list(filter_rules or []), "masks": dict(masks or {})})


def leaf(column: str, paimon_type: str, function: str, *literals) -> str:
    """A row filter rule as Paimon's REST API sends it (predicate JSON)."""
    return json.dumps({"kind": "LEAF", "transform": {"name": "FIELD_REF", "fieldRef": {
        "index": 0, "name": column, "type": paimon_type}}, "function": function, "literals": list(literals)})


def constant_mask(text: str) -> str:
    """A column mask that shows ``text`` instead of the value."""
    return json.dumps({"name": "CONCAT", "inputs": [text]})


class _Loader:
    def __init__(self, catalog) -> None:
        self.catalog = catalog

    def load(self):
        return self.catalog

    def context(self):
        return self.catalog.catalog_context


class AuthCatalog(FileSystemCatalog):
    """Tables with ``query-auth.enabled`` (a REST catalog sets it in the table's options; here the test creates the
    table with it) read under the rules in ``PAIMON_TAIL_TEST_AUTH``, asked of this catalog as pypaimon asks a
    REST catalog."""

    def _load_data_table(self, identifier):
        table = super()._load_data_table(identifier)
        table.catalog_environment = CatalogEnvironment(identifier=identifier, catalog_loader=_Loader(self))
        return table

    def auth_table_query(self, identifier, select):
        spec = json.loads(os.environ.get(ENV) or "{}")
        return TableQueryAuthResult(spec.get("filter") or None, spec.get("masks") or None)


CatalogFactory.CATALOG_REGISTRY["authtest"] = AuthCatalog
