"""``paimon-tail demo`` as a newcomer meets it: its writer keeps committing after Ctrl-C (a process of its own,
found through the pid file it keeps locked in the warehouse) until ``demo --stop``; a second demo reuses it."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import CLI, run_cli, writers_of
from tests.terminal import Terminal, widest_line


def latest(warehouse: str, table: str = "shop.orders") -> int:
    from paimon_tail import open_table

    snap = open_table(table, warehouse=warehouse).snapshot_manager().get_latest_snapshot()
    return snap.id if snap else 0


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_stops_following_not_writing_until_demo_stop(demo_dir):
    with Terminal(["demo", "-w", demo_dir, "--interval", "0.3"], columns=250, lines=40) as t:
        t.wait_for(r"shop\.events")
        t.wait_for(r"(?s)placed.*live")
        t.interrupt()
        assert t.wait_exit() == 130
        shown = t.history()
    assert "started a writer in the background (pid" in shown, shown
    assert "keeps committing in the background" in shown and f"demo --stop -w {demo_dir}" in shown, shown
    assert f"demo --no-follow -w {demo_dir} starts it again without following" in shown, shown
    (pid,) = writers_of(demo_dir)
    before = latest(demo_dir)
    time.sleep(2)
    assert latest(demo_dir) > before, "the writer stopped with the demo"

    again = run_cli(["demo", "--no-follow", "-w", demo_dir, "--interval", "2"], timeout=60)
    assert again.returncode == 0, again.stderr
    err = again.stderr.decode()
    assert f"its writer is already running (pid {pid}, a commit every 0.3s); --interval 2 ignored" in err, err
    assert writers_of(demo_dir) == [pid]

    stop = run_cli(["demo", "--stop", "-w", demo_dir])
    assert stop.returncode == 0 and f"stopped the demo writer of {demo_dir} (pid {pid})" in stop.stderr.decode()
    assert not alive(pid) and not os.path.exists(os.path.join(demo_dir, "demo-writer.pid"))
    stopped_at = latest(demo_dir)
    time.sleep(1)
    assert latest(demo_dir) == stopped_at
    none = run_cli(["demo", "--stop", "-w", demo_dir])
    assert none.returncode == 0 and "no demo writer is running for" in none.stderr.decode()


def test_no_follow_returns_at_once_and_a_killed_writer_is_replaced(demo_dir):
    first = run_cli(["demo", "--no-follow", "-w", demo_dir, "--interval", "0.2"], timeout=120)
    assert first.returncode == 0 and first.stdout == b"", first.stderr
    (pid,) = writers_of(demo_dir)
    os.kill(pid, signal.SIGKILL)  # its pid file stays, unlocked
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(os.path.join(demo_dir, "demo-writer.pid"))
    second = run_cli(["demo", "--no-follow", "-w", demo_dir], timeout=120)
    assert second.returncode == 0, second.stderr
    (new,) = writers_of(demo_dir)
    assert new != pid and f"started a writer in the background (pid {new})" in second.stderr.decode()
    # the warehouse removed: its writer stops by itself (nothing left committing into a directory made anew)
    import shutil

    shutil.rmtree(demo_dir)
    deadline = time.monotonic() + 30
    while alive(new) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(new)


def test_two_demos_at_once_make_one_writer(demo_dir):
    env = {k: v for k, v in os.environ.items() if k != "PAIMON_WAREHOUSE"}
    procs = [subprocess.Popen(CLI + ["demo", "--no-follow", "-w", demo_dir, "--interval", "0.5"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    (pid,) = writers_of(demo_dir)
    for _, err in outs:
        assert f"(pid {pid}" in err.decode(), err


def test_the_demo_never_deletes_orders_1_to_3(tmp_path):
    """The README's first lookup asks for orders 1 2 3: with every other order cancelled at its first update, those
    three go through every status and stay."""
    from paimon_tail.demo import DemoWriter

    writer = DemoWriter(str(tmp_path / "demo"), interval=0, seed=5, compact_every=0)
    writer.random.random = lambda: 0.0  # every update of another order cancels it (deletes it)
    for _ in range(60):
        writer.step()
        writer._open = {k: v for k, v in writer._open.items() if k <= 3 or k >= writer._next_order - 2}
    out = run_cli(["follow", "shop.orders", "-w", str(tmp_path / "demo"), "-e", "--from", "earliest", "--row-kind"])
    import json

    rows = [json.loads(line) for line in out.stdout.splitlines()]
    deleted = {r["order_id"] for r in rows if r["_row_kind"] == "-D"}
    assert deleted and not deleted & {1, 2, 3}
    final = {json.loads(line)["order_id"]: json.loads(line)["status"]
             for line in run_cli(["follow", "shop.orders", "-w", str(tmp_path / "demo"), "-e"]).stdout.splitlines()}
    assert {1, 2, 3} <= set(final) and {final[1], final[2], final[3]} == {"delivered"}


def test_demo_refusals_are_one_line(tmp_path, demo_dir):
    both = run_cli(["demo", "--stop", "--no-follow", "-w", demo_dir])
    assert both.returncode == 2 and both.stderr.decode().strip() == \
        "paimon-tail: --stop goes alone (with --warehouse)"
    (tmp_path / "file").write_text("")
    file = run_cli(["demo", "--no-follow", "-w", str(tmp_path / "file")])
    assert file.returncode == 1 and "is not a directory" in file.stderr.decode()
    assert file.stderr.decode().count("\n") == 1
    # a writer that cannot start (the database directory is a file): its reason, from its log, in one line
    os.makedirs(demo_dir)
    with open(os.path.join(demo_dir, "shop.db"), "w"):
        pass
    broken = run_cli(["demo", "--no-follow", "-w", demo_dir], timeout=120)
    err = broken.stderr.decode()
    assert broken.returncode == 1 and "the demo writer stopped at once (exit code 1)" in err, err
    assert err.count("\n") == 1 and "demo-writer.log" in err, err


def test_demo_piped_for_a_while(demo_dir):
    """--duration: the follow ends (exit 0) and prints JSON lines when piped; the writer goes on."""
    out = run_cli(["demo", "-w", demo_dir, "--duration", "2", "--interval", "0.3"], timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(b'{"_table"') and writers_of(demo_dir)
    assert sys.executable in out.stderr.decode()  # the hints use the program as it was started


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_the_demo_fits_the_terminal_and_its_hints_need_no_warehouse(tmp_path, config_home, size):
    """On 80×24 (and 200×50): the intro on top, wrapped between words; both tables with rows (the shop.events
    section was a header and '...'); no op column next to _row_kind; every line within the width. After Ctrl-C,
    hints without -w (the demo made its warehouse the default catalog) that fit 80 columns, and a new shell (no
    PAIMON_WAREHOUSE, another directory) reads the demo's tables."""
    columns, lines = size
    program = os.path.join(os.path.dirname(sys.executable), "paimon-tail")
    env = {"PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    home = tmp_path / "clone"
    home.mkdir()
    try:
        with Terminal([program, "demo", "--interval", "0.3"], columns, lines, cwd=str(home), env=env,
                      python=False) as t:
            screen = t.wait_for(r"(?s)shop\.orders · snapshot.*│ \d+ .*shop\.events · snapshot")
            time.sleep(1.5)
            t.wait_for(r"(?s)shop\.orders · snapshot.*│ \d+ .*shop\.events · snapshot")
            screen = t.screen()
            t.interrupt()
            assert t.wait_exit() == 130
            after = t.history()
        top = screen.splitlines()
        intro = " ".join(line.strip() for line in top[:3])
        assert top[0].startswith("demo warehouse: paimon-tail-demo (tables shop.orders, shop.events); started a"), top
        assert "Ctrl-C stops following, not writing." in intro, top[:3]
        assert widest_line(screen) <= columns and len(screen.splitlines()) <= lines
        orders, events = screen.split("shop.orders · snapshot", 1)
        assert re.search(r"^│ \+[IU] +│ \d+ +│", orders, re.M), screen  # rows of orders
        assert re.search(r"^│ \d+ +│ \d+ +│ \w+ +│ \d\d:\d\d:\d\d │$", events, re.M), screen  # rows of events
        assert "_row_kind" in orders and "┃ op" not in orders and "..." not in screen, screen
        hints = [line.strip() for line in after.split("Try next:", 1)[1].strip().splitlines()]
        assert hints[0] == "paimon-tail tables" and "paimon-tail lookup shop.orders 1 2 3" in hints, hints
        said = after.split("The demo writer keeps", 1)[1].splitlines()
        assert all(len(line) <= (80 if line.startswith("  ") else columns) for line in said), after  # commands: 80
        assert " -w " not in after.split("The demo writer keeps", 1)[1], after
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        new_shell = run_cli(["follow", "shop.events", "-n", "3", "-e"], cwd=str(elsewhere))
        assert new_shell.returncode == 0 and len(new_shell.stdout.splitlines()) == 3, new_shell.stderr
    finally:
        run_cli(["demo", "--stop"], cwd=str(home), timeout=120)
        for pid in writers_of(str(home / "paimon-tail-demo")):
            os.kill(pid, signal.SIGKILL)


def test_a_config_directory_that_cannot_be_written_only_costs_the_short_hints(tmp_path, demo_dir):
    """The demo still runs when it cannot register its warehouse (the config directory is a file): it says why,
    and its hints carry -w."""
    (tmp_path / "not-a-dir").write_text("")
    out = run_cli(["demo", "--no-follow", "-w", demo_dir], env={"XDG_CONFIG_HOME": str(tmp_path / "not-a-dir")},
                  timeout=120)
    err = " ".join(out.stderr.decode().split())
    assert out.returncode == 0, err
    assert f"Its warehouse is {demo_dir} (not registered as catalog demo: " in err, err
    assert f"follow shop.orders -w {demo_dir} --from earliest --row-kind" in err, err
