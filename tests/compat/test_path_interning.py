"""``compat/patches/path_interning.py``: the paths pypaimon's local file IO builds are not interned (CPython's table of
interned strings does not take every data file's name), and its file operations work as before."""
from __future__ import annotations

import os
import uuid

import pytest
from pypaimon.filesystem.local_file_io import LocalFileIO

from paimon_tail.compat.patches import path_interning


@pytest.fixture
def shim():
    was = path_interning.installed()
    path_interning.install()
    yield
    if not was:
        path_interning.uninstall()


def _is_interned(part: str) -> bool:
    """Whether ``part`` is the interned instance of its text (an equal string built apart finds it)."""
    twin = "".join(list(part))
    assert twin is not part
    return __import__("sys").intern(twin) is part


def test_without_the_shim_pypaimon_interns_every_file_name(tmp_path):
    was = path_interning.installed()
    path_interning.uninstall()
    try:
        path = LocalFileIO()._to_file(str(tmp_path / f"data-{uuid.uuid4()}-0.parquet"))
        assert _is_interned(path.parts[-1]) and _is_interned(path.parts[-2])
    finally:
        if was:
            path_interning.install()


def test_with_the_shim_no_part_is_interned(tmp_path, shim):
    path = LocalFileIO()._to_file(str(tmp_path / f"data-{uuid.uuid4()}-0.parquet"))
    assert not _is_interned(path.parts[-1])
    assert path.name.startswith("data-") and path.parent == tmp_path


def test_file_operations_work_as_before(tmp_path, shim):
    io = LocalFileIO()
    target = str(tmp_path / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet")
    with io.new_output_stream(target) as out:
        out.write(b"rows")
    assert io.exists(target)
    with io.new_input_stream(target) as f:
        assert f.read() == b"rows"
    assert io.get_file_status(target).size == 4
    assert [os.path.basename(s.path) for s in io.list_status(str(tmp_path / "bucket-0"))] == [os.path.basename(target)]
    assert sorted(p.name for p in tmp_path.glob("*/*.parquet")) == [os.path.basename(target)]  # sys.audit reached


def test_install_is_idempotent_and_uninstall_restores_pathlib():
    import pathlib
    import sys

    was = path_interning.installed()
    path_interning.install()
    path_interning.install()
    assert pathlib.sys is not sys and pathlib.sys.intern("x") == "x" and pathlib.sys.platform == sys.platform
    path_interning.uninstall()
    assert pathlib.sys is sys
    if was:
        path_interning.install()
