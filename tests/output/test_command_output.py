"""One ``Output`` per command (output/command_output.py): the "terminal or pipe" decision in one place, and an
``output/`` package without import circles."""
from __future__ import annotations

import ast
import io
import json
import os
import pathlib

import pytest

from paimon_tail.errors import UsageError
from paimon_tail.output.command_output import Output
from tests import REPO

OUTPUT = REPO / "paimon_tail" / "output"


@pytest.fixture
def terminal():
    """A real pseudo-terminal as the command's stdout (isatty() is True)."""
    leader, follower = os.openpty()
    stream = os.fdopen(follower, "w")
    yield stream
    stream.close()
    os.close(leader)


def test_auto_is_a_table_on_a_terminal_and_json_lines_piped(terminal):
    piped = Output.choose("auto", io.StringIO())
    assert (piped.fmt, piped.terminal, piped.takes_values) == ("jsonl", False, True)
    shown = Output.choose("auto", terminal)
    assert (shown.fmt, shown.terminal, shown.takes_values) == ("table", True, True)
    assert Output.choose("csv", terminal).fmt == "csv" and not Output.choose("csv", terminal).takes_values
    assert Output.choose("table", io.StringIO()).terminal  # asked for: a table even when piped


def test_a_binary_format_is_refused_on_a_terminal_unless_forced(terminal):
    with pytest.raises(UsageError, match="binary and stdout is a terminal"):
        Output.choose("arrow", terminal)
    assert Output.choose("arrow", terminal, force_binary=True).fmt == "arrow"
    assert Output.choose("arrow", io.StringIO()).fmt == "arrow"
    with pytest.raises(UsageError, match="unknown format"):
        Output.choose("yaml", io.StringIO())


def test_records_and_reports_go_to_the_commands_stream():
    sink = io.StringIO()
    out = Output.choose("jsonl", sink)
    out.records([{"consumer": "a", "behind": 0}, {"consumer": "b", "behind": 2}])
    out.json({"executors": [1, 2]})
    assert [json.loads(line) for line in sink.getvalue().splitlines()] == [
        {"consumer": "a", "behind": 0}, {"consumer": "b", "behind": 2}, {"executors": [1, 2]}]
    screen = io.StringIO()
    out = Output("table", screen)
    out.say("[bold]shop.orders[/] served")
    out.report(("consumer", "next snapshot"), [["job-1", "7"]], title="shop.orders (latest 9)")
    text = screen.getvalue()
    assert text.startswith("shop.orders served\n") and "[bold]" not in text
    assert "shop.orders (latest 9)" in text and "job-1" in text and "next snapshot" in text


def _imports(path: pathlib.Path) -> set:
    """The ``output`` modules a module imports, at any depth (a lazy import inside a function closes a circle
    as surely as one at the top)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return {name for name in found if (OUTPUT / f"{name}.py").exists()}


def test_no_import_circle_in_output():
    graph = {p.stem: _imports(p) for p in OUTPUT.glob("*.py") if p.stem != "__init__"}
    assert graph["cdc"] and graph["live_table"]  # the walk sees imports (the check can fail)

    def reaches(start: str, goal: str, seen: set) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(m for m in graph if reaches(m, m, {m}))
    assert not circles, {m: sorted(graph[m]) for m in circles}
