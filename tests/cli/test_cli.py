"""The ``paimon-tail`` command as a user runs it: real processes, real pipes, real signals."""
from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from tests.conftest import CLI, append_rows, run_cli, start_cli
from tests.terminal import Terminal


@pytest.fixture
def log(wh):
    wh.create("log")
    for c in range(5):
        wh.commit("log", append_rows(c, 4))
    return wh


def ids_of(rows):
    return sorted(r["id"] for r in rows)


ALL_IDS = sorted(r["id"] for c in range(5) for r in append_rows(c, 4))


def test_jsonl_round_trip(log):
    out = run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e"])
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert ids_of(rows) == ALL_IDS and set(rows[0]) == {"id", "writer", "n"}


def test_arrow_round_trip(log):
    out = run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e", "-f", "arrow", "--meta"])
    assert out.returncode == 0, out.stderr
    table = pa.ipc.open_stream(io.BytesIO(out.stdout)).read_all()
    assert sorted(table.column("id").to_pylist()) == ALL_IDS
    assert table.schema.field("_commit_time").type == pa.timestamp("ms", tz="UTC")
    empty = run_cli(["follow", "db.log", "-w", log.path, "--from", "latest", "-e", "-f", "arrow"])
    assert pa.ipc.open_stream(io.BytesIO(empty.stdout)).read_all().num_rows == 0


@pytest.mark.parametrize("flag, sep", [("--csv", ","), ("--tsv", "\t")])
def test_csv_tsv(log, flag, sep):
    out = run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e", flag, "--select", "id,n"])
    lines = out.stdout.decode().splitlines()
    assert lines[0] == f"id{sep}n" and len(lines) == 21
    assert sorted(int(line.split(sep)[0]) for line in lines[1:]) == ALL_IDS


def test_types_map_faithfully_to_json(wh):
    import datetime
    import decimal

    schema = pa.schema([("d", pa.decimal128(20, 4)), ("ts", pa.timestamp("us")), ("day", pa.date32()),
                        ("b", pa.binary()), ("l", pa.list_(pa.int64())),
                        ("big", pa.int64())])
    wh.create("types", schema)
    wh.commit("types", [{"d": decimal.Decimal("12345678901234.5678"), "ts": datetime.datetime(2026, 11, 1, 12, 0, 0, 1),
                         "day": datetime.date(2026, 11, 1), "b": b"\x00\xff", "l": [1, 2], "big": 2**62}])
    out = run_cli(["follow", "db.types", "-w", wh.path, "-e"])
    row = json.loads(out.stdout)
    assert row == {"d": "12345678901234.5678", "ts": "2026-11-01T12:00:00.000001", "day": "2026-11-01",
                   "b": "AP8=", "l": [1, 2], "big": 2**62}


def test_head_closes_pipe_quietly(log):
    p = subprocess.run(f"{sys.executable} -m paimon_tail follow db.log -w {log.path} --from earliest | head -3",
                       shell=True, capture_output=True, timeout=60, executable="/bin/bash")
    assert len(p.stdout.splitlines()) == 3
    assert p.stderr == b"", p.stderr  # no traceback, no message
    p = subprocess.run(f"set -o pipefail; {sys.executable} -m paimon_tail follow db.log -w {log.path} "
                       f"--from earliest | head -1", shell=True, capture_output=True, timeout=60,
                       executable="/bin/bash")
    assert p.returncode == 0


def test_ctrl_c_exits_130_and_keeps_position(log):
    p = start_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "--consumer-id", "me"])
    printed = b"".join(p.stdout.readline() for _ in range(20))  # every row (a fixed 3 s was short at load 15)
    time.sleep(1)  # then waiting for a commit, its position written
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    out = printed + out
    assert p.returncode == 130, err
    assert b"Traceback" not in err
    assert len(out.splitlines()) == 20
    table_path = f"{log.path}/db.db/log"
    assert json.load(open(f"{table_path}/consumer/consumer-me")) == {"nextSnapshot": 6}


def test_stats_show_the_real_latest_while_catching_up(wh):
    """--stats (and the terminal footer, same FollowStats) during a backlog: latest is the table's latest
    snapshot and the lag is against it and its commit time, not the read-ahead horizon a few snapshots ahead."""
    wh.create("log")
    for c in range(100):
        wh.commit("log", append_rows(c, 50))
        if c == 49:
            time.sleep(2)  # snapshots 51.. are committed 2 s after 1..50
    p = start_cli(["follow", "db.log", "-w", wh.path, "--from", "earliest", "-e", "--stats"])
    time.sleep(3.5)  # stdout unread: the pipe fills and holds the follower in the first half of the backlog
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and len(out.splitlines()) == 5000
    import re

    lines = re.findall(r"snapshot (\d+) latest (\d+) lag (\d+) \(([\d.]+)s\)", err.decode())
    assert lines, err
    for snapshot, latest, lag, seconds in lines:
        assert int(latest) == 100 and int(lag) == 100 - int(snapshot), err
        if int(snapshot) < 50:
            assert float(seconds) >= 1.5, err


def test_max_rows_and_until(log):
    for count in (["-c", "7"], ["--max-rows", "7"]):  # kcat's -c; --max-rows: its name before -n was --last
        out = run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", *count])
        assert out.returncode == 0 and len(out.stdout.splitlines()) == 7
    out = run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "--until", "snapshot:2"])
    assert sorted({json.loads(line)["n"] for line in out.stdout.splitlines()}) == [0, 1]


def test_where_twice_means_both(log):
    # --where A --where B: both must hold (it used to keep B alone: wrong rows, exit 0)
    out = run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e", "--where", "n > 1",
                   "--where", "n < 3"])
    assert out.returncode == 0, out.stderr
    assert ids_of(json.loads(line) for line in out.stdout.splitlines()) == [2000, 2001, 2002, 2003]


def test_consumers_command(log):
    assert run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e", "--consumer-id", "a"]).returncode == 0
    listing = run_cli(["consumers", "db.log", "-w", log.path])
    assert json.loads(listing.stdout) == {"consumer": "a", "next_snapshot": 6, "behind": 0,
                                          "holds_back_expiry": False}
    assert run_cli(["consumers", "db.log", "-w", log.path, "--reset", "a", "--to", "4"]).returncode == 0
    out = run_cli(["follow", "db.log", "-w", log.path, "-e", "--consumer-id", "a"])
    assert sorted({json.loads(line)["n"] for line in out.stdout.splitlines()}) == [3, 4]
    assert run_cli(["consumers", "db.log", "-w", log.path, "--delete", "a"]).returncode == 0
    gone = run_cli(["consumers", "db.log", "-w", log.path, "--delete", "a"])
    assert gone.returncode == 1 and gone.stderr.decode().strip() == "paimon-tail: consumer a does not exist"


# The bad-input catalogue (docs/errors.md) is run by tests/cli/test_catalogue.py.


def test_missing_warehouse_and_env(log, tmp_path):
    out = run_cli(["follow", "db.log", "-w", str(tmp_path / "nowhere"), "-e"])
    assert out.returncode == 1 and out.stderr.decode().strip() == \
        f"paimon-tail: warehouse {tmp_path / 'nowhere'} does not exist"
    out = run_cli(["follow", "db.log", "-e"])
    assert out.returncode == 2 and "no warehouse given" in out.stderr.decode()
    out = run_cli(["follow", "db.log", "-e", "--from", "earliest"], env={"PAIMON_WAREHOUSE": log.path})
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 20
    cfg = tmp_path / "paimon.yaml"
    cfg.write_text(f"warehouse: {log.path}\n")
    out = run_cli(["follow", "db.log", "-e", "--from", "earliest", "--config", str(cfg)])
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 20
    cfg.write_text("warehouse: [unclosed\n")
    out = run_cli(["follow", "db.log", "-e", "--config", str(cfg)])
    assert out.returncode == 2 and "is not valid YAML" in out.stderr.decode()


def _as_other_user(wh_path: str):
    """A run_cli for a user the permissions bite: root reads and writes anything, so as root run as nobody."""
    if os.geteuid() != 0:
        return run_cli
    import shutil

    os.chmod(os.path.dirname(wh_path), 0o755)
    subprocess.run(["chmod", "-R", "a+rX", wh_path], check=True)
    nobody = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]

    def run(args, **kwargs):
        env = {k: v for k, v in os.environ.items() if k != "PAIMON_WAREHOUSE"}
        return subprocess.run(nobody + CLI + list(args), capture_output=True, timeout=60, env=env, **kwargs)

    return run


def test_unreadable_and_read_only_warehouse(tmp_path_factory):
    """File-system errors say what is wrong: an unreadable directory is not a missing one, and a consumer that
    cannot save its position fails before printing a row (not after, as an unexpected PermissionError)."""
    import tempfile

    from tests.conftest import TestWarehouse

    base = tempfile.mkdtemp(prefix="paimon-tail-perm-")  # pytest's own temp dirs are 0700: nobody cannot enter
    try:
        wh = TestWarehouse(f"{base}/wh")
        wh.create("log")
        for c in range(3):
            wh.commit("log", append_rows(c, 4))
        run = _as_other_user(wh.path)
        os.chmod(wh.path, 0o700 if run is not run_cli else 0o000)
        out = run(["follow", "db.log", "-w", wh.path, "-e"])
        assert (out.returncode, out.stderr.decode()) == \
            (1, f"paimon-tail: warehouse {wh.path} is not readable (permission denied)\n")
        os.chmod(wh.path, 0o755)
        table_dir = f"{wh.path}/db.db/log"
        os.chmod(table_dir, 0o700 if run is not run_cli else 0o000)
        out = run(["follow", "db.log", "-w", wh.path, "-e"])
        assert out.returncode == 1 and out.stderr.decode().startswith(
            "paimon-tail: cannot open table db.log: PermissionError: [Errno 13] Permission denied:"), out.stderr
        os.chmod(table_dir, 0o755)
        subprocess.run(["chmod", "-R", "a-w", wh.path], check=True)
        out = run(["follow", "db.log", "-w", wh.path, "-e", "--from", "earliest", "--consumer-id", "me"])
        assert out.returncode == 1 and out.stdout == b""
        assert out.stderr.decode() == (
            f"paimon-tail: cannot write consumer positions in {wh.path}/db.db/log/consumer: Permission denied "
            "(--consumer-id needs write access to the table directory)\n")
        out = run(["follow", "db.log", "-w", wh.path, "-e", "--from", "earliest"])  # reading still works
        assert out.returncode == 0 and len(out.stdout.splitlines()) == 12
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", base], check=True)
        import shutil

        shutil.rmtree(base)


def test_expired_snapshot_suggests_earliest(log):
    snapdir = f"{log.path}/db.db/log/snapshot"
    for n in (1, 2):
        os.remove(f"{snapdir}/snapshot-{n}")
    open(f"{snapdir}/EARLIEST", "w").write("3")
    out = run_cli(["follow", "db.log", "-w", log.path, "--from", "snapshot:1", "-e"])
    assert out.returncode == 1
    assert out.stderr.decode().strip() == \
        "paimon-tail: snapshot 1 has expired (earliest kept is 3) (use --from earliest)"


def test_debug_shows_traceback(log):
    out = run_cli(["--debug", "follow", "db.nope", "-w", log.path])
    assert out.returncode == 1 and "Traceback" in out.stderr.decode()


def test_consumer_resume_after_sigkill_loses_nothing(wh):
    wh.create("log")
    for c in range(30):
        wh.commit("log", append_rows(c, 50))
    expected = sorted(r["id"] for c in range(30) for r in append_rows(c, 50))
    seen = []
    for attempt in range(20):
        p = start_cli(["follow", "db.log", "-w", wh.path, "--from", "earliest", "-e", "--consumer-id", "k",
                       "--read-threads", "1"])
        time.sleep(0.6 + 0.1 * (attempt % 5))
        p.kill()
        out, _ = p.communicate(timeout=20)
        seen += [json.loads(line)["id"] for line in out.splitlines() if line.endswith(b"}")]
    final = run_cli(["follow", "db.log", "-w", wh.path, "-e", "--consumer-id", "k"])
    assert final.returncode == 0
    seen += [json.loads(line)["id"] for line in final.stdout.splitlines()]
    assert set(seen) == set(expected), "rows lost across SIGKILLs"


def test_demo_runs_and_prints_next_steps(demo_dir):
    out = run_cli(["demo", "-w", demo_dir, "--duration", "3", "--interval", "0.3"], timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    tables = {r["_table"] for r in rows}
    assert tables == {"shop.orders", "shop.events"}
    kinds = {r["_row_kind"] for r in rows if r["_table"] == "shop.orders"}
    assert "+I" in kinds and len(rows) > 10
    assert f"{sys.executable} -m paimon_tail follow shop.orders" in out.stderr.decode()  # as it was started
    follow = run_cli(["follow", "shop.orders", "-w", demo_dir, "--from", "earliest", "-e", "--row-kind"])
    assert {json.loads(line)["_row_kind"] for line in follow.stdout.splitlines()} >= {"+I", "+U"}


@pytest.mark.parametrize("on_path", [True, False])
def test_demo_hints_run_as_printed(demo_dir, on_path):
    """The demo's "Try next" lines work when pasted into the same shell: bare `paimon-tail` when that is this
    program on PATH (an activated venv), else the path the demo was started by (e.g. .venv/bin/paimon-tail)."""
    import shlex

    bin_dir = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "PAIMON_WAREHOUSE"}
    paths = [p for p in env["PATH"].split(":") if os.path.realpath(p) != os.path.realpath(bin_dir)]
    env["PATH"] = ":".join(([bin_dir] if on_path else []) + paths)
    out = subprocess.run([os.path.join(bin_dir, "paimon-tail"), "demo", "-w", demo_dir,
                          "--duration", "1", "--interval", "0.2"], capture_output=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    hints = [line.strip() for line in out.stderr.decode().splitlines() if "--consumer-id me" in line]
    assert len(hints) == 1
    script = os.path.join(bin_dir, "paimon-tail")
    programs = ["paimon-tail"] if on_path else [shlex.quote(script), shlex.quote(os.path.relpath(script))]
    assert any(hints[0] == f"{p} follow shop.orders --consumer-id me --nl | head -5" for p in programs), hints
    ran = subprocess.run(["bash", "-c", hints[0]], capture_output=True, env=env, timeout=60)
    assert ran.returncode == 0 and len(ran.stdout.splitlines()) == 5, ran.stderr


def test_demo_stays_healthy(tmp_path):
    """The demo writer compacts and expires: after many rounds a full read opens one file per bucket and two
    manifests, few snapshots are kept, and the compaction is invisible to followers (same rows, nothing new)."""
    from paimon_tail.demo import DemoWriter
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    wh = str(tmp_path / "demo")
    writer = DemoWriter(wh, interval=0, seed=3, compact_every=0, retain=25)
    for _ in range(40):
        writer.step()
    orders = writer.orders
    before = run_cli(["follow", "shop.orders", "-w", wh, "-e", "--from", "earliest", "--row-kind"])
    table_before = run_cli(["follow", "shop.orders", "-w", wh, "-e"])
    latest = orders.snapshot_manager().get_latest_snapshot().id
    consumer = run_cli(["follow", "shop.events", "-w", wh, "-e", "--from", "latest", "--consumer-id", "late"])
    assert consumer.returncode == 0
    run_cli(["consumers", "shop.events", "-w", wh, "--reset", "late", "--to", "10"])
    writer.compact()

    snap = orders.snapshot_manager().get_latest_snapshot()
    assert snap.id == latest + 1 and snap.commit_kind == "COMPACT"
    assert len(ManifestListManager(orders).read_all(snap)) == 2
    splits = orders.new_read_builder().new_scan().plan().splits()
    assert sorted(s.bucket for s in splits) == [0, 1, 2, 3] and all(len(s.files) == 1 for s in splits)
    # the same table, and followers see nothing new
    assert sorted(run_cli(["follow", "shop.orders", "-w", wh, "-e"]).stdout.splitlines()) == \
        sorted(table_before.stdout.splitlines())
    after = run_cli(["follow", "shop.orders", "-w", wh, "-e", "--from", f"snapshot:{snap.id}"])
    assert after.returncode == 0 and after.stdout == b"" and b"OVERWRITE" not in after.stderr
    # not an overwrite: reading overwrites reads nothing more
    after = run_cli(["follow", "shop.orders", "-w", wh, "-e", "--from", f"snapshot:{snap.id}",
                     "-O", "streaming-read-overwrite=true"])
    assert after.returncode == 0 and after.stdout == b""
    # expired: the newest 25 orders snapshots are kept; events keep what consumer "late" still has to read
    assert orders.snapshot_manager().try_get_earliest_snapshot().id == snap.id - 24
    assert writer.events.snapshot_manager().try_get_earliest_snapshot().id == 10
    replay = run_cli(["follow", "shop.orders", "-w", wh, "-e", "--from", "earliest", "--row-kind"])
    assert replay.returncode == 0 and 0 < len(replay.stdout) and len(before.stdout) > 0
    # the writer compacts by itself every compact_every rounds
    writer.compact_every = 5
    for _ in range(5):
        writer.step()
    assert orders.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"


def test_where_reads_bare_words_as_columns_and_double_equals_as_equals(log):
    """SQL's reading: a bare word is a column (never silently the string of that name, which matched no row and
    exited 0); '==' is '='; one line, naming the columns, for what cannot be."""
    def where(text):
        return run_cli(["follow", "db.log", "-w", log.path, "--from", "earliest", "-e", "--where", text])

    single, double = where("n = 2"), where("n == 2")
    assert double.returncode == 0 and double.stdout == single.stdout and len(single.stdout.splitlines()) == 4
    assert where("writer == 'w' AND n==1").stdout.count(b"\n") == 4
    for text, message in (
            ("writer = w", "unknown column w (a bare word is a column, as in SQL: for the string, quote it: 'w'; "
                           "columns are id, writer, n)"),
            ("n = id", "id is a column, and a filter compares a column with a value"),
            ("nn > 1", "unknown column nn (did you mean n? columns are id, writer, n)"),
            ("writer IN ('w', x)", "unknown column x"),
            ("NOT n = 1", "a condition is COLUMN OPERATOR VALUE, not NOT")):
        out = where(text)
        err = out.stderr.decode()
        assert out.returncode == 2 and err.count("\n") == 1 and message in err, (text, err)
        assert out.stdout == b""


def test_did_you_mean_for_a_command_and_a_table(log):
    command = run_cli(["folow", "db.log", "-w", log.path])
    assert command.returncode == 2
    assert command.stderr.decode().startswith("paimon-tail: No such command 'folow'. Did you mean 'follow'? (see:")
    assert command.stderr.decode().count("\n") == 1
    for args in (["follow", "db.lgo"], ["lookup", "db.lgo", "1"], ["consumers", "db.lgo"]):
        out = run_cli([*args, "-w", log.path])
        assert out.returncode == 1 and out.stderr.decode() == \
            "paimon-tail: table db.lgo does not exist (did you mean db.log?)\n", (args, out.stderr)
    database = run_cli(["follow", "dv.log", "-w", log.path])
    assert database.stderr.decode() == "paimon-tail: database dv does not exist (did you mean db?)\n"
    far = run_cli(["follow", "db.zzzzzz", "-w", log.path])
    assert far.stderr.decode() == "paimon-tail: table db.zzzzzz does not exist\n"


def test_every_option_has_help():
    """--help says what each option does (--max-batch-keys and --max-message-mb said nothing)."""
    from paimon_tail.cli import COMMANDS, cli

    ctx = cli.make_context("paimon-tail", ["--help"], resilient_parsing=True)
    commands = [cli.get_command(ctx, name) for name in COMMANDS]
    commands += list(cli.get_command(ctx, "service").commands.values())
    for command in commands:
        for param in command.params:
            if isinstance(param, __import__("click").Option) and not param.hidden:
                assert param.help, f"{command.name} {param.opts[0]} has no help text"
    serve = run_cli(["serve", "--help"]).stdout.decode()
    assert "Most keys one lookup request may carry" in serve and "Largest gRPC message" in serve


def test_stats_line_on_an_idle_table(wh):
    """--stats: never 'snapshot None'; 'snapshot - (waiting for N)' before the first commit of --from latest;
    'idle: no commit for N s' and the recent rate (0/s, not the average since the start) when nothing commits."""
    import threading

    wh.create("log")
    for c in range(2):
        wh.commit("log", append_rows(c, 10))

    def until(args, pattern):
        """The status lines of a follow, until one matches ``pattern`` (then Ctrl-C), and its stdout."""
        p = start_cli(["follow", "db.log", "-w", wh.path, *args, "--stats"])
        lines, seen = [], threading.Event()

        def read():
            for raw in p.stderr:
                line = raw.decode().rstrip("\n")
                if line:
                    lines.append(line)
                if re.search(pattern, line):
                    seen.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        found = seen.wait(120)
        p.send_signal(signal.SIGINT)
        out = p.stdout.read()
        p.wait(30)
        reader.join(10)
        assert found, lines
        return lines, out

    lines, out = until(["--from", "earliest"], r"rows 20 \(0/s\) idle: no commit for \d+ s$")
    assert len(out.splitlines()) == 20 and not any("None" in line for line in lines), lines
    zero = re.search(r"\] snapshot 2 latest 2 lag 0 \(0\.0s\) rows 20 \(0/s\) idle: no commit for (\d+) s$", lines[-1])
    # 0/s some 10 s after the rows came; an average since the start would take 40 s to round 20 rows down to 0/s
    assert zero and int(zero.group(1)) < 35, lines
    lines, out = until(["--from", "latest"], r"idle: no commit for \d+ s$")
    assert out == b"" and not any("None" in line for line in lines), lines
    assert all(re.search(r"\] snapshot - \(waiting for 3\) latest 2 lag 0 \(0\.0s\) rows 0 \(0/s\) ", line)
               for line in lines), lines


def test_json_is_jsonl(log):
    """-f json (what jq, kcat and psql users type) is JSON lines."""
    args = ["follow", "db.log", "-w", log.path, "--from", "earliest", "-e"]
    jsonl, json_ = run_cli(args + ["-f", "jsonl"]), run_cli(args + ["-f", "json"])
    assert json_.returncode == 0 and json_.stdout == jsonl.stdout and len(jsonl.stdout.splitlines()) == 20
    other = run_cli(args + ["-f", "yaml"])
    assert other.returncode == 2 and "'json'" in other.stderr.decode() and "'jsonl'" in other.stderr.decode()


def test_top_level_help_fits_80_columns():
    out = run_cli(["--help"], env={"COLUMNS": "80"})
    assert out.returncode == 0 and max(len(line) for line in out.stdout.decode().splitlines()) <= 80, out.stdout
    assert b"130 interrupted" in b" ".join(out.stdout.split())


def test_consumers_says_which_one_holds_back_expiry(wh):
    """An idle consumer keeps every snapshot from its position on (expiration honours consumers: the demo had 476
    snapshots against ~150): consumers marks it, says how many snapshots it holds, and how to let them go."""
    from paimon_tail.expire import expire_snapshots

    wh.create("log")
    for c in range(10):
        wh.commit("log", append_rows(c, 2))
    from paimon_tail.stream import ConsumerStore

    for consumer, position in (("idle", 3), ("busy", 11)):
        ConsumerStore(wh.table("log")).reset(consumer, position)
    expire_snapshots(wh.table("log"), 2)
    assert wh.table("log").snapshot_manager().try_get_earliest_snapshot().id == 3  # held by "idle"
    piped = run_cli(["consumers", "db.log", "-w", wh.path])
    assert [json.loads(line) for line in piped.stdout.splitlines()] == [
        {"consumer": "busy", "next_snapshot": 11, "behind": 0, "holds_back_expiry": False},
        {"consumer": "idle", "next_snapshot": 3, "behind": 8, "holds_back_expiry": True}]
    with Terminal(["consumers", "db.log", "-w", wh.path], 80, 24) as t:
        assert t.wait_exit() == 0
        screen = " ".join(t.screen().split())
    assert "idle * │ 3" in screen and "busy │ 11" in screen, screen
    assert "* holds back snapshot expiry: 8 snapshots are kept (3..10)" in screen, screen
    assert f"paimon-tail consumers db.log --delete idle" in screen, screen
