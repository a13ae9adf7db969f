"""Shim: a table's latest schema found with one listing and one read, not six requests.

Patches
    ``pypaimon.schema.schema_manager.SchemaManager._list_versioned_files`` and ``.get_schema``

Why
    Every table open (and every reload after a schema change) asks ``SchemaManager.latest()``, which checks that
    the ``schema/`` directory exists (on S3: a HEAD and a LIST), lists it, checks that the newest schema file
    exists (a HEAD) and reads it (HEAD + GET): six round trips at start-up on an object store. A listing of a
    missing directory is already empty, and reading a missing file already fails, so the checks are dropped:
    one LIST and one read (a GET with ``storage.s3``). Same results on every file system.

Delete when
    pypaimon's ``SchemaManager`` lists and reads without the ``exists`` checks.
"""
from __future__ import annotations

from pypaimon.schema.schema_manager import SchemaManager
from pypaimon.schema.table_schema import TableSchema

from ...storage.files import reading
from ...storage.s3 import read_text

NAME = "schema_reads"
_ORIGINAL = (SchemaManager.__dict__["_list_versioned_files"], SchemaManager.__dict__["get_schema"])


def _list_versioned_files(self):
    try:
        statuses = self.file_io.list_status(self.schema_path) or ()
    except FileNotFoundError:
        return []
    versions = []
    for status in statuses:
        name = status.path.rstrip("/").split("/")[-1]
        if name.startswith(self.schema_prefix) and name[len(self.schema_prefix):].isdigit():
            versions.append(int(name[len(self.schema_prefix):]))
    return versions


def get_schema(self, schema_id: int):
    if schema_id not in self.schema_cache:
        path = self._to_schema_path(schema_id)
        with reading("schema", path):  # an empty, cut or overwritten schema file is named (storage/files.py)
            text = read_text(self.file_io, path)
            if text is None:
                return None
            self.schema_cache[schema_id] = TableSchema.from_json(text)
    return self.schema_cache[schema_id]


def install() -> None:
    SchemaManager._list_versioned_files = _list_versioned_files
    SchemaManager.get_schema = get_schema


def uninstall() -> None:
    SchemaManager._list_versioned_files, SchemaManager.get_schema = _ORIGINAL
