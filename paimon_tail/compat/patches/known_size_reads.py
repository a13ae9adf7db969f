"""Shim: manifest lists and manifests of known size read from S3 with one GET, not HEAD + GET.

Patches
    ``_open_input_stream_with_known_size`` as imported by ``pypaimon.manifest.manifest_list_manager`` and
    ``pypaimon.manifest.manifest_file_manager``

Why
    Paimon's metadata carries the size of every manifest list (in the snapshot) and manifest (in the manifest
    list), and pypaimon passes it down, but uses it only for its local block cache: pyarrow's S3 file system
    then asks the object store for the size again (a HEAD) before the GET. Following a table reads one manifest
    list and one or more manifests per commit, so this halves the requests and the round trips of every
    commit's planning (docs/object-stores.md). With ``paimon_tail.storage.s3.S3Client`` available for the
    warehouse (S3 with static credentials) a known-size file is fetched whole with one GET; everything else
    goes to pypaimon's function unchanged.

Delete when
    pypaimon opens files of known size without a HEAD (pyarrow ``OpenInputFile(FileInfo)`` with the size).
"""
from __future__ import annotations

import io

from pypaimon.filesystem import caching_file_io
from pypaimon.manifest import manifest_file_manager, manifest_list_manager

from ...storage.s3 import S3Client, split_path

NAME = "known_size_reads"
_ORIGINAL = caching_file_io._open_input_stream_with_known_size
_MODULES = (manifest_list_manager, manifest_file_manager)


def _open_known_size(file_io, path, file_size):
    if file_size is not None and file_size > 0:
        client = S3Client.for_file_io(file_io)
        if client is not None:
            data = client.get(*split_path(file_io, path))
            if data is None:
                raise FileNotFoundError(f"{path} does not exist")
            return io.BytesIO(data)
    return _ORIGINAL(file_io, path, file_size)


def install() -> None:
    for module in _MODULES:
        module._open_input_stream_with_known_size = _open_known_size


def uninstall() -> None:
    for module in _MODULES:
        module._open_input_stream_with_known_size = _ORIGINAL
