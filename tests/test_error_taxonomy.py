"""The error taxonomy (docs/errors.md#the-taxonomy): what the libraries under us raise on bad input is a runtime
line in their words, "unexpected error" is left for bugs, and every line is safe on a terminal.

The errors are raised by the libraries themselves (json, yaml, pyarrow, grpc, ssl, the file system), on real bad
input, and go through the CLI's one error boundary.
"""
from __future__ import annotations

import json
import os

import pytest

from paimon_tail.cli.common import error_boundary
from paimon_tail.errors import EXIT_RUNTIME, PaimonTailError, UnreadableFile, library_failure, safe_text

from tests.conftest import append_rows
from tests.terminal import Terminal


def _raised(fn):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - the error under test
        return e
    raise AssertionError("did not raise")


def _garbage_parquet(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 not a parquet file")
    return lambda: pq.read_table(str(path))


def _grpc_call():
    import grpc

    with grpc.insecure_channel("127.0.0.1:1") as channel:
        channel.unary_unary("/x.Y/Z")(b"", timeout=0.5)


@pytest.mark.parametrize("family, make, says", [
    ("json", lambda tmp: lambda: json.loads("{"), "(not valid JSON)"),
    ("utf-8", lambda tmp: lambda: b"\xff".decode("utf-8"), "(not UTF-8 text)"),
    ("yaml", lambda tmp: lambda: __import__("yaml").safe_load("a: [unclosed"), "(not valid YAML)"),
    ("arrow", _garbage_parquet, "Arrow error: "),
    ("grpc", lambda tmp: _grpc_call, "gRPC error: "),
    ("tls", lambda tmp: lambda: __import__("ssl").create_default_context(cafile=os.devnull), "TLS error: "),
    ("file system", lambda tmp: lambda: open(tmp / "nope"), "nope: No such file or directory"),
    ("disk", lambda tmp: lambda: open("/proc/self/mem").read(), "Input/output error"),
])
def test_library_errors_are_runtime_lines_in_their_words(family, make, says, tmp_path, capfd):
    error = _raised(make(tmp_path))
    failure = library_failure(error)
    assert isinstance(failure, PaimonTailError) and says in str(failure), (type(error), error)

    def main():
        raise error

    assert error_boundary(main, lambda: False) == EXIT_RUNTIME
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and says in err and "unexpected error" not in err, err


def test_a_library_wrapping_ours_shows_ours(tmp_path, capfd):
    """pypaimon wraps what our shims raise (``RuntimeError("Failed to load schema …") from UnreadableFile``)."""
    ours = UnreadableFile("schema", "/wh/db.db/t/schema/schema-0", "it is empty")
    try:
        try:
            raise ours
        except UnreadableFile as inner:
            raise RuntimeError("Failed to load schema from path: /wh/db.db/t/schema") from inner
    except RuntimeError as e:
        wrapped = e
    assert library_failure(wrapped) is ours


@pytest.mark.parametrize("bug", [ValueError("x"), TypeError("y"), KeyError("z"), AttributeError("w")])
def test_bugs_stay_unexpected(bug, capfd):
    assert library_failure(bug) is None

    def main():
        raise bug

    assert error_boundary(main, lambda: False) == EXIT_RUNTIME
    assert "unexpected error: " in capfd.readouterr().err


def test_safe_text_escapes_what_a_terminal_would_run():
    assert safe_text("db.k\x1b[31mv") == "db.k\\x1b[31mv"
    assert safe_text("\x1b]0;title\x07") == "\\x1b]0;title\\x07"
    assert safe_text("a\x9b31m\x7f") == "a\\x9b31m\\x7f"  # C1 CSI, DEL
    assert safe_text("x\udcffy") == "x\\udcffy"  # a byte of argv that is not UTF-8
    assert safe_text("evil\u202etxt") == "evil\\u202etxt"  # a bidirectional override
    assert safe_text("a\nb\tc") == "a\\nb\\tc"  # one line
    assert safe_text("日本語 é ü – ok") == "日本語 é ü – ok"  # printable text of any script is kept


def test_a_name_with_an_escape_reaches_the_terminal_escaped(tmp_path):
    """On a real terminal (a pty, its screen emulated): the table name's ESC [2J would clear the screen and
    ESC ] 0 would set the window title; they are shown as text instead."""
    from tests.conftest import TestWarehouse

    wh = TestWarehouse(str(tmp_path / "wh"))
    wh.create("log")
    wh.commit("log", append_rows(0, 2))
    term = Terminal(["follow", "db.log\x1b[2J\x1b]0;pwned\x07", "-w", wh.path, "-e"])
    try:
        assert term.wait_exit(60) == 1
        screen = term.history()
    finally:
        term.close()
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in screen, screen
    assert all("\x1b" not in chunk for chunk in term.raw if "pwned" in chunk), term.raw
