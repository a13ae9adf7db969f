"""Shim: manifest entries without ``_VALUE_STATS_COLS`` (Paimon < 1.0).

Patches
    ``pypaimon.manifest.manifest_file_manager.ManifestFileManager._get_value_stats_fields``

Why
    Paimon 1.0 added the nullable field ``_VALUE_STATS_COLS`` to the ``_FILE``
    record of manifest entries (``DataFileMeta``).  Manifests written by Paimon
    0.9 (and older) do not have it, and pypaimon 2.1 indexes it with
    ``file_dict['_VALUE_STATS_COLS']``, so planning *any* scan of such a table
    fails with ``KeyError: '_VALUE_STATS_COLS'``.  In the old format an absent
    field means the value stats cover all columns of the file's schema, which
    is exactly what pypaimon does for ``_VALUE_STATS_COLS = None``; the wrapper
    supplies that ``None`` when the key is missing and leaves everything else
    to pypaimon.

Delete when
    pypaimon reads the field with ``file_dict.get('_VALUE_STATS_COLS')`` (as it
    already does for ``_EXTERNAL_PATH``/``_WRITE_COLS``), i.e. when upstream
    pypaimon's ``_get_value_stats_fields`` tolerates manifests from Paimon < 1.0.
"""

from __future__ import annotations

import functools

from pypaimon.manifest.manifest_file_manager import ManifestFileManager

NAME = "value_stats_cols"
_ORIGINAL = ManifestFileManager.__dict__["_get_value_stats_fields"]


@functools.wraps(_ORIGINAL)
def _get_value_stats_fields(self, file_dict, file_schema):
    if "_VALUE_STATS_COLS" not in file_dict:
        file_dict = dict(file_dict)
        file_dict["_VALUE_STATS_COLS"] = None
    return _ORIGINAL(self, file_dict, file_schema)


def install() -> None:
    ManifestFileManager._get_value_stats_fields = _get_value_stats_fields


def uninstall() -> None:
    ManifestFileManager._get_value_stats_fields = _ORIGINAL
