"""The terminal views as a person sees them: commands in a real pseudo-terminal of 80 or 200 columns, the screen
read back through a terminal emulator (tests/terminal.py)."""
from __future__ import annotations

import datetime
import decimal
import json
import re
import signal
import sys

import pyarrow as pa
import pytest

from tests.conftest import CLI, ORDERS, BackgroundWriter, append_rows, run_cli
from tests.processes import CliProcess
from tests.terminal import Terminal, widest_line

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


# ------------------------------------------------------------------ any width, idleness, an end, binary output
WIDE = pa.schema([("id", pa.int64()), ("customer", pa.string()), ("status", pa.string()), ("note", pa.string()),
                  ("created_at", pa.timestamp("us")), ("region", pa.string()), ("amount", pa.decimal128(10, 2)),
                  ("last_column", pa.string())])


def wide_rows(commit_no: int, size: int = 5) -> list:
    return [{"id": commit_no * 1000 + i, "customer": f"customer-{i:03d}-of-the-shop", "status": "delivered",
             "note": "a note that takes thirty cells", "created_at": datetime.datetime(2026, 11, 1, 12, 0, i),
             "region": "eu-central", "amount": decimal.Decimal("123.45"), "last_column": f"last-{i}"}
            for i in range(size)]


@pytest.mark.parametrize("columns", [80, 200])
def test_live_table_fits_any_width(wh, columns):
    """Columns that do not fit are named under the table, never squeezed to 'cu…'; every line fits the width."""
    wh.create("wide", WIDE)
    for c in range(2):
        wh.commit("wide", wide_rows(c))
    with Terminal(["follow", "db.wide", "-w", wh.path, "--from", "earliest"], columns, 30) as t:
        screen = t.wait_for(r"last-4|not shown")
        screen = t.wait_for(r"1004")
        t.interrupt()
        assert t.wait_exit() == 130
        screen = t.screen()
    assert widest_line(screen) <= columns, screen
    assert "…" not in screen, screen
    header = next(line for line in screen.splitlines() if "┃ id" in line)
    if columns == 80:
        assert "customer" in header and "last_column" not in header, screen
        assert "not shown (too narrow): " in screen and "last_column" in screen.split("not shown")[1], screen
        assert "customer-004-of-the-shop" in screen  # the columns shown are whole
    else:
        assert all(name in header for name in WIDE.names) and "not shown" not in screen, screen


def test_idle_table_says_so_and_the_rate_is_recent(wh):
    """No commit for a while: 'idle: no commit for N s', and rows/s over the last seconds (0), not the average
    since the start; a commit makes it live again; Ctrl-C leaves a last frame that says stopped."""
    wh.create("log")
    for c in range(3):
        wh.commit("log", append_rows(c, 20))
    with Terminal(["follow", "db.log", "-w", wh.path, "--from", "earliest"], 160, 30) as t:
        t.wait_for(r"60 rows · \d+ rows/s · live")
        screen = t.wait_for(r"60 rows · 0 rows/s · idle: no commit for 1\d s", timeout=40)
        assert "· live" not in screen
        wh.commit("log", append_rows(3, 20))
        t.wait_for(r"80 rows · [1-9]\d* rows/s · live")
        t.interrupt()
        assert t.wait_exit() == 130
        assert re.search(r"80 rows · \d+ rows/s · stopped", t.screen()), t.screen()


@pytest.mark.parametrize("columns", [80, 200])
def test_exit_at_end_on_a_terminal_prints_every_row(wh, columns):
    """-e on a terminal: every row stays in the terminal's history (not the last screenful), fitting the width: a
    table at 200 columns, a record per row at 80 (every value whole); the last frame says done."""
    wh.create("wide", WIDE)
    expected = set()
    for c in range(6):
        rows = wide_rows(c, 50)
        wh.commit("wide", rows)
        expected |= {r["id"] for r in rows}
    with Terminal(["follow", "db.wide", "-w", wh.path, "--from", "earliest", "-e"], columns, 20) as t:
        assert t.wait_exit() == 0
        shown = t.history()
    row = r"^(\d+) +customer-" if columns == 200 else r"^\[ id (\d+) \] ─"
    ids = [int(m.group(1)) for m in re.finditer(row, shown, re.M)]
    assert sorted(ids) == sorted(expected), sorted(expected - set(ids))[:10]
    assert widest_line(shown) <= columns
    lines = [line for line in shown.splitlines() if line.strip()]
    assert "300 rows" in lines[-1] and "done: caught up" in lines[-1], lines[-1]
    assert not any(line.startswith("snapshot") for line in lines[:-1]), "a footer frame left in the history"
    assert all(v in shown for v in ("customer-049-of-the-shop", "last-49", "2026-11-01 12:00:49")), shown[-2000:]


def test_binary_formats_refuse_a_terminal(wh):
    wh.create("log")
    wh.commit("log", append_rows(0, 3))
    for args in (["follow", "db.log", "-w", wh.path, "-e", "-f", "arrow"],
                 ["lookup", "db.log", "1", "-w", wh.path, "-f", "arrow"]):
        with Terminal(args, 120, 10) as t:
            assert t.wait_exit() == 2
            said = "".join(t.raw).strip()
        assert said == "paimon-tail: -f arrow is binary and stdout is a terminal (redirect or pipe it, or add " \
                       "--force-binary)", said
    with Terminal(["follow", "db.log", "-w", wh.path, "-e", "-f", "arrow", "--force-binary"], 100, 10) as t:
        assert t.wait_exit() == 0
        assert "paimon-tail:" not in "".join(t.raw)
    piped = run_cli(["follow", "db.log", "-w", wh.path, "-e", "-f", "arrow"])
    assert piped.returncode == 0 and pa.ipc.open_stream(piped.stdout).read_all().num_rows == 3


TIMED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("at", pa.timestamp("us")), ("op", pa.string())])
AT = datetime.datetime(2026, 11, 1, 12, 0, 0, 123456)


@pytest.fixture
def served(wh):
    """db.kv and db.timed served by two executors (the status of the issue: 37 lines at 80 columns)."""
    wh.create("kv", ORDERS, primary_keys=["id"], options={"bucket": "2"})
    wh.commit("kv", [{"id": i, "status": "s" * 70 if i == 1 else "paid", "amount": decimal.Decimal("1.50"),
                      "op": "+I"} for i in range(1, 6)])
    wh.create("timed", TIMED, primary_keys=["id"], options={"bucket": "2"})
    wh.commit("timed", [{"id": 1, "at": AT, "op": "+I"}])
    serve = CliProcess(CLI + ["serve", "db.kv", "db.timed", "-w", wh.path, "--executors", "2"], "ready in")
    try:
        assert serve.announced.wait(120), serve.log()
        yield wh
    finally:
        serve.kill_all(signal.SIGTERM, timeout=60)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_reports_fit_any_width(served, size):
    """service status, consumers and lookup: a table when it fits, else a record per row with every value whole
    (psql's expanded display), never columns cut to 'ex… ┃ ad…'."""
    wh = served
    columns, lines = size
    status = json.loads(run_cli(["service", "status", "db.kv", "-w", wh.path, "--json"]).stdout)
    address = status["executor"][0]["address"]
    consumer = "a-consumer-with-a-long-name-" + "x" * 40
    assert run_cli(["follow", "db.kv", "-w", wh.path, "-e", "--consumer-id", consumer]).returncode == 0
    for args, whole in ((["service", "status", "db.kv", "-w", wh.path], address),
                        (["consumers", "db.kv", "-w", wh.path], consumer),
                        (["lookup", "db.kv", "1", "2", "-w", wh.path], "s" * 70)):
        with Terminal(args, columns, lines) as t:
            assert t.wait_exit() == 0, t.screen()
            screen = t.screen()
        assert widest_line(screen) <= columns, screen
        assert whole in "".join(screen.split()) and "…" not in screen, screen  # whole, folded over lines or not
        records = re.search(r"^\[ \S+ .* \] ─", screen, re.M)
        # service status at 80 columns: the columns that matter at a glance, the others named under them
        assert bool(records) == (columns == 80 and args[0] != "service"), screen
        if args[0] == "service" and columns == 80:  # the header stays on the screen
            assert screen.startswith("db.kv served by "), screen
            assert re.search(r"^ executor +┃ address +┃ alive +┃ snapshot +┃ lag +┃.* keys\b", screen, re.M), screen
            assert "not shown: host, schema, restarts, keys/s, channels, memory" in " ".join(screen.split()), screen
            assert len(screen.rstrip().splitlines()) <= 8 and len(re.findall(r"127\.0\.0\.1:\d+ │ yes", screen)) == 2
        if columns == 200:
            first = args[0] if args[0] != "service" else "executor"
            header = {"executor": ("executor", "restarts"), "consumers": ("consumer", "snapshots behind"),
                      "lookup": ("id", "op")}[first]
            assert any(all(h in line for h in header) for line in screen.splitlines()), screen


def test_pace_is_recent_and_trusts_what_it_saw_over_a_clock_behind():
    """The footer's numbers from a real FollowStats: the rate over the last 10 s, not since the start; idle from
    the latest commit's time, or from when this view saw it appear when the writer's clock is behind ours."""
    from paimon_tail.output.status import Pace
    from paimon_tail.stream.follower import FollowStats

    stats = FollowStats(started=0.0)
    pace = Pace(stats)
    stats.rows = 1000
    assert pace.rate(now=5.0) == 200.0  # 1000 rows in the first 5 s
    for t in range(6, 30):
        pace.rate(now=float(t))
    assert pace.rate(now=30.0) == 0.0  # nothing in the last 10 s (the average since the start: 33/s)
    stats.latest_id, stats.latest_time_ms = 7, 1_000_000  # committed at wall time 1000 s
    assert pace.idle(now=30.0, wall=1005.0) is None  # 5 s ago: live
    assert pace.idle(now=31.0, wall=1042.0) == 42.0
    stats.latest_id, stats.latest_time_ms = 8, 900_000  # a writer whose clock is 100 s behind commits now
    assert pace.idle(now=32.0, wall=1043.0) is None  # seen just now, whatever its commit time says
    assert pace.idle(now=45.0, wall=1056.0) == 13.0


def test_printed_rows_stay_one_line_and_cannot_drive_the_terminal(wh):
    """A value with a newline or an escape sequence, printed by -e on a terminal: shown escaped, on its row."""
    wh.create("log")
    wh.commit("log", [{"id": 1, "writer": "two\nlines", "n": 1}, {"id": 2, "writer": "\x1b[2Jred\x1b[31m", "n": 2}])
    with Terminal(["follow", "db.log", "-w", wh.path, "-e"], 100, 20) as t:
        assert t.wait_exit() == 0
        shown = t.history()
    assert re.search(r"^1 +two\\nlines +1$", shown, re.M), shown
    assert re.search(r"^2 +\\x1b\[2Jred\\x1b\[31m +2$", shown, re.M), shown


STATUS = pa.schema([("id", pa.int64()), ("customer", pa.string()), ("status", pa.string()),
                    ("at", pa.timestamp("us"))])


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_exit_at_end_prints_the_header_once_as_values_widen(wh, size):
    """-e on a terminal, snapshot by snapshot, while values get longer ("paid" → "shipped" → "delivered", ids of
    1 to 3 digits): the columns had room to grow, so the header is printed once, not again at each widening, and
    every row is in one table."""
    wh.create("orders", STATUS)
    statuses = ["paid", "packed", "shipped", "delivered"]
    at = datetime.datetime(2026, 11, 1, 12, 0, 0)
    ids = []
    for c, status in enumerate(statuses * 2):
        rows = [{"id": c * 30 + i + 1, "customer": ["ada", "grace", "barbara"][i % 3], "status": status, "at": at}
                for i in range(6)]
        wh.commit("orders", rows)
        ids += [r["id"] for r in rows]
    columns, lines = size
    with Terminal(["follow", "db.orders", "-w", wh.path, "--from", "earliest", "-e"], columns, lines) as t:
        assert t.wait_exit() == 0
        shown = t.history()
    assert max(ids) >= 100 and len(shown.splitlines()) > lines  # values widen, and the rows scrolled
    assert len(re.findall(r"^id +customer +status +at$", shown, re.M)) == 1, shown
    printed = [int(m.group(1)) for m in re.finditer(r"^(\d+) +(ada|grace|barbara) +\w+ +2026-11-01", shown, re.M)]
    assert printed == ids, shown
    assert widest_line(shown) <= columns


def test_lookup_and_follow_show_a_timestamp_alike_and_json_is_jsonl(served):
    """The same timestamp, to the millisecond, in lookup's table and in follow's (lookup showed microseconds);
    JSON lines keep every digit, and lookup -f json is -f jsonl."""
    wh = served
    cells = []
    for args in (["lookup", "db.timed", "1"], ["follow", "db.timed", "-e"]):
        with Terminal([*args, "-w", wh.path], 80, 24) as t:
            assert t.wait_exit() == 0
            cells += re.findall(r"2026-11-01[ T][\d:.]+", t.history())
    assert cells == ["2026-11-01 12:00:00.123", "2026-11-01 12:00:00.123"], cells
    jsonl, json_ = (run_cli(["lookup", "db.timed", "1", "-w", wh.path, "-f", fmt]) for fmt in ("jsonl", "json"))
    assert json_.returncode == 0 and json_.stdout == jsonl.stdout == \
        b'{"id":1,"at":"2026-11-01T12:00:00.123456","op":"+I"}\n', (jsonl.stdout, json_.stderr)
