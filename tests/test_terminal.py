"""The live table as a person sees it: ``follow`` in a real pseudo-terminal, screen read back with pyte-less parsing."""
from __future__ import annotations

import sys

import pytest

from .conftest import BackgroundWriter, append_rows

pexpect = pytest.importorskip("pexpect")


def test_live_table_renders_and_updates(wh):
    wh.create("log")
    for c in range(3):
        wh.commit("log", append_rows(c, 3))
    child = pexpect.spawn(sys.executable, ["-m", "paimon_tail", "follow", "db.log", "-w", wh.path,
                                           "--from", "earliest"],
                          dimensions=(30, 120), timeout=30, encoding="utf-8", env={"TERM": "xterm-256color", "COLUMNS": "120",
                                                                 "LINES": "30", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    try:
        # the table header and the footer
        child.expect("writer")
        child.expect(r"snapshot 3 · latest 3")
        child.expect("live")
        writer = BackgroundWriter(wh, "log", commits=2, first=3, pause=0.3)
        writer.start()
        child.expect(r"snapshot 5 · latest 5", timeout=30)
        writer.join()
        screen = child.before + child.after
        assert "4002" in screen or "4001" in screen or "4000" in screen  # rows of the newest commit are shown
        child.sendintr()
        child.expect(pexpect.EOF, timeout=20)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130 or child.signalstatus is not None


def test_empty_table_footer_says_waiting(wh):
    wh.create("log")
    child = pexpect.spawn(sys.executable, ["-m", "paimon_tail", "follow", "db.log", "-w", wh.path],
                          dimensions=(20, 100), timeout=30, encoding="utf-8", env={"TERM": "xterm", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    try:
        child.expect("waiting for the first snapshot")
        wh.commit("log", append_rows(7, 2))
        child.expect("7001")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
