"""The README's and docs/follow.md's commands, run as written: a newcomer copies them into a shell.

* the two set-up commands: exactly two, the demo one really run in a copy of the repository (a fresh venv, pip,
  the demo, then ``paimon-tail`` in the same shell), and CI running the test one;
* every line of the README's examples block and of follow.md's pipelines, in bash, against a demo warehouse with
  its writer running (``paimon-tail demo --no-follow``, as the README's second line finds it): a line that ends
  exits 0 with output and a quiet stderr (a lookup's keys all found), a line that runs until Ctrl-C (``follow``
  without an end) prints rows first and leaves nothing running after the Ctrl-C; ``serve … &`` is waited for and
  stopped at the end;
* the README's Python block against the same warehouse and service, and its shell completion line.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import List

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)  # the venv paimon-tail is installed in: what `. .venv/bin/activate` puts first


def _blocks(path: str, lang: str = "sh") -> List[tuple]:
    """(section heading, code) for every fenced block of ``lang``."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    out, heading = [], ""
    for m in re.finditer(rf"^(#+ [^\n]*)$|^```{lang}\n(.*?)^```", text, re.M | re.S):
        if m.group(1):
            heading = m.group(1).lstrip("#").strip()
        else:
            out.append((heading, m.group(2)))
    return out


def _lines(code: str) -> List[str]:
    return [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]


SETUP = [code.strip() for heading, code in _blocks("README.md") if heading == "Set-up"]


def test_readme_has_two_setup_commands_that_activate_the_venv():
    assert len(SETUP) == 2 and all("\n" not in c for c in SETUP), SETUP
    demo, tests = SETUP
    for line in SETUP:  # activation before the first bare command: paimon-tail stays on PATH in that shell
        assert line.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e "), line
    assert demo.endswith("&& paimon-tail demo") and tests.endswith("&& python -m pytest")
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read().splitlines()
    assert any(line.startswith(tests) for line in ci), "CI runs the README's test command as written"


@pytest.mark.slow
def test_readme_demo_setup_as_written(tmp_path):
    """The demo command in a copy of the repository: venv, install, demo; after Ctrl-C the same shell runs the
    examples' bare ``paimon-tail``."""
    repo = tmp_path / "paimon-tail"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if os.path.exists(os.path.join(ROOT, name)):
            os.makedirs(repo / os.path.dirname(name), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), repo / name)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PAIMON_WAREHOUSE")}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not p.startswith(os.path.dirname(BIN)))
    # after the demo, the same shell follows its table with no -w: the demo made its warehouse the default catalog
    script = f"{SETUP[0]}; echo \"demo exited $?\"; paimon-tail follow shop.orders -e --from earliest | head -1"
    shell = subprocess.Popen(["bash", "-c", script], cwd=repo, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        lines = []
        for line in shell.stdout:  # the demo, piped, writes JSON lines
            lines.append(line)
            if line.startswith('{"_table"'):
                break
        assert lines and lines[-1].startswith('{"_table"'), "".join(lines)
        demo = _child_running(shell.pid, "demo")
        os.kill(demo, signal.SIGINT)  # Ctrl-C to the demo alone; its shell goes on
        try:
            out, err = shell.communicate(timeout=120)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"the shell did not end; still running: {_group_left(shell.pid, 0)}; "
                                 f"stderr: {(e.stderr or b'').decode(errors='replace')[-2000:]}") from None
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
        if (repo / ".venv" / "bin" / "paimon-tail").exists():  # the writer the demo left running
            subprocess.run([str(repo / ".venv" / "bin" / "paimon-tail"), "demo", "--stop", "-w", "paimon-tail-demo"],
                           cwd=repo, env=env, capture_output=True, timeout=60)
    assert shell.returncode == 0, err
    assert "demo exited 130" in out
    assert '"order_id"' in out.split("demo exited 130", 1)[1], out[-2000:]
    assert "keeps committing in the background" in err and "demo --stop" in err, err[-2000:]


def _child_running(parent: int, word: str, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == parent and word.encode() in cmd:
                return int(pid)
        time.sleep(0.2)
    raise AssertionError(f"no child of {parent} running {word}")


# ------------------------------------------------------------------------------------------- the examples
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo warehouse in a working directory, as `paimon-tail demo` leaves it: some history, and its writer
    running in the background (the README's `demo --no-follow` line finds it running)."""
    from paimon_tail.demo import DemoWriter

    cwd = tmp_path_factory.mktemp("newcomer")  # as the repository's root, where the demo leaves its warehouse
    os.symlink(os.path.join(ROOT, "examples"), cwd / "examples")
    (cwd / "tmp").mkdir()  # TMPDIR: what the examples leave in the temporary directory is seen
    writer = DemoWriter(str(cwd / "paimon-tail-demo"), interval=0.3, seed=7)
    for _ in range(20):
        writer.step()
    env = {k: v for k, v in os.environ.items() if k not in ("PAIMON_WAREHOUSE", "PAIMON_TAIL_TOKEN")}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    env["TMPDIR"] = str(cwd / "tmp")
    env["XDG_CONFIG_HOME"] = str(cwd / "config")  # the person's own named catalogs: none until the demo's
    started = subprocess.run(["paimon-tail", "demo", "--no-follow", "--interval", "0.3"], cwd=cwd, env=env,
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0 and "started a writer in the background" in started.stderr, started.stderr
    assert "Its warehouse is catalog demo, the default" in " ".join(started.stderr.split()), started.stderr
    background: list = []
    yield {"cwd": str(cwd), "env": env, "background": background}
    subprocess.run(["paimon-tail", "demo", "--stop"], cwd=cwd, env=env, capture_output=True, timeout=120)
    for proc in background:
        # The line's whole process group: a command a non-interactive shell started with `&` ignores SIGINT (the
        # README's `serve &` outlived the tests), so SIGTERM follows, which serve also stops cleanly on.
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(1.0)
        proc.wait(30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the group is gone (serve removes its registration first)
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)


def endless(line: str) -> bool:
    """A line that runs until Ctrl-C: a follow without an end (-e, --until, -c)."""
    first = line.split("|")[0]
    return first.lstrip().startswith("paimon-tail follow ") and \
        not re.search(r"\s(-e|--exit-at-end|--until|-c|--count)\b", first)


def _run_line(demo, prelude: str, line: str, timeout: float = 25.0):
    """Run ``line`` in bash as written, in a terminal as the person's. Returns (exit code, or None when it ran
    until Ctrl-C, what the terminal showed).

    A line that ends is waited for (``timeout``). A line that runs until Ctrl-C gets one, as from the person,
    once it has printed: what it started must be gone then (a process left printing into the shell fails the
    test); SIGTERM follows for the report only."""
    import pexpect

    if line.rstrip().endswith("&"):
        proc = subprocess.Popen(["bash", "-c", f"{prelude}\n{line}"], cwd=demo["cwd"], env=demo["env"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        demo["background"].append(proc)
        return None, ""
    child = pexpect.spawn("bash", ["-c", f"{prelude}\n{line}"], cwd=demo["cwd"], env=demo["env"],
                          dimensions=(50, 200), encoding="utf-8", codec_errors="replace")
    shown, printed_at = [], None
    deadline = time.monotonic() + timeout
    interrupt = endless(line)
    left: list = []
    try:
        while time.monotonic() < deadline:
            try:
                shown.append(child.read_nonblocking(65536, timeout=0.2))
                printed_at = printed_at or time.monotonic()
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                break
            if interrupt and printed_at is not None and time.monotonic() - printed_at > 1.0:
                break
        running = child.isalive()
        assert interrupt or not running, f"{line!r} did not end within {timeout}s: {''.join(shown)[-3000:]}"
        if running:
            os.killpg(child.pid, signal.SIGINT)
            try:
                child.expect(pexpect.EOF, timeout=15)
            except pexpect.TIMEOUT:
                pass
            left = _group_left(child.pid, 10)
            if left:
                os.killpg(child.pid, signal.SIGTERM)
                child.expect(pexpect.EOF, timeout=15)
        shown.append(child.before or "")
    finally:
        child.close(force=True)
    assert not left, f"{line!r} left {left} running after Ctrl-C"
    return (None if running else child.exitstatus), "".join(shown)


def _group_left(pgid: int, timeout: float) -> list:
    """The processes of group ``pgid`` still there after ``timeout`` seconds (their command lines)."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        left.append(f.read().replace(b"\0", b" ").decode(errors="replace").strip())
            except (OSError, ValueError, IndexError):
                continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _wait_served(demo, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run(["paimon-tail", "service", "status", "shop.orders", "--json"], cwd=demo["cwd"],
                           env=dict(demo["env"], PAIMON_WAREHOUSE=os.path.join(demo["cwd"], "paimon-tail-demo")),
                           capture_output=True, text=True)
        if r.returncode == 0 and '"alive": true' in r.stdout and '"snapshot": null' not in r.stdout:
            return
        time.sleep(0.5)
    raise AssertionError("serve from the README did not become ready")


def _order_ids(demo) -> set:
    """Order ids in shop.orders now (ids are never reused, so a deleted order stays deleted)."""
    from paimon_tail import open_table

    table = open_table("shop.orders", warehouse=os.path.join(demo["cwd"], "paimon-tail-demo"))
    rb = table.new_read_builder().with_projection(["order_id"])
    return set(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("order_id").to_pylist())


def _raced_expiry(line: str, out: str) -> bool:
    """Did a read from the earliest snapshot lose the race with the demo's expiry (its writer expires 61
    snapshots a minute at once: a follower that starts just before has not read them yet, and says so)? Such a
    line runs once more; a second loss fails the test."""
    return "earliest" in line and "expired before they were read" in out


def _check_lines(demo, lines: List[str], prelude: str) -> None:
    for line in lines:
        if "spark_pipeline.py" in line and not shutil.which("java"):
            continue  # needs Java 17 (the README says so); tests/spark covers the data source itself
        if line.startswith("paimon-tail lookup") or "| paimon-tail lookup" in line:
            _wait_served(demo)  # lookup waiting for a starting service is issue 34's (the lead's)
        kafka = re.search(r"\| kcat -P .*$", line)
        if kafka:
            # No Kafka broker here: what kcat would read (kcat -K '\t' splits each line at its first tab) is
            # checked instead: keyed Debezium events, the key a JSON object, the value an envelope.
            line = line[:kafka.start()] + "| head -n 3"
        code, out = _run_line(demo, prelude, line, timeout=300 if "examples/" in line else 60)
        if _raced_expiry(line, out):
            code, out = _run_line(demo, prelude, line, timeout=60)
        if line.rstrip().endswith("&"):
            continue
        assert "Traceback" not in out, f"{line!r}: {out}"
        assert not re.search(r"^paimon-tail: ", out, re.M), f"{line!r}: {out}"
        # a follow into head ends at its next write after head has gone (at once, or after the Ctrl-C)
        expected = (None, 0) if "| head" in line else (None,) if endless(line) else (0,)
        assert code in expected, f"{line!r} exited {code}: {out}"
        if code is None or (">" not in line.split("|")[0] and "consumers" not in line):
            assert out.replace("^C", "").strip(), f"{line!r} showed nothing"
        shown = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out)  # the terminal's text, without its colours
        if line.startswith(("paimon-tail tables", "paimon-tail describe")):  # on the terminal: reports
            assert "shop.orders" in shown and "┃" in shown, shown
        if line.startswith("paimon-tail describe shop.orders"):
            assert re.search(r"latest snapshot: \d+ \(\w+\), committed ", shown) and "row kind" in shown, shown
        if re.match(r"paimon-tail follow \S+ -n 20$", line):  # tail -n 20 -f: 20 rows at once, then the follow
            assert re.search(r"(?s)shop\.events.*snapshot \d+", shown), shown
        if "examples/" in line:  # a clean exit says nothing that looks like a failure
            assert "Failed to cancel job group" not in out and " ERROR " not in out, out[-3000:]
        if "spark_pipeline.py" in line:  # a line per micro-batch from 1, each with the snapshot it committed
            batches = re.findall(r"^batch (\d+): \d+ changes committed in [\d.]+s \(snapshot (\d+) of "
                                 r"spark_demo\.orders\)", out, re.M)
            assert [int(n) for n, _ in batches] == list(range(1, len(batches) + 1)) and len(batches) >= 3, out[-3000:]
            _check_committed(demo, [(int(n), int(sid)) for n, sid in batches])
        if "streaming_enrichment.py" in line:
            assert re.search(r"^batch 1: \d+ events, \d+ with their order", out, re.M), out[-3000:]
        if kafka:
            events = [e for e in out.replace("^C", "").splitlines() if e.strip()]
            assert len(events) == 3, f"{line!r}: {out}"
            for event in events:
                key, sep, value = event.partition("\t")
                assert sep and "order_id" in json.dumps(json.loads(key)) and json.loads(value)["op"] in ("r", "c", "u", "d"), event


def _check_committed(demo, batches) -> None:
    """Each reported snapshot is its micro-batch's commit: the commit identifier Spark's batch id (from 0 in a
    first run), the query's commit user, and no other snapshot of spark_demo.orders between them."""
    from paimon_tail import open_table

    table = open_table("spark_demo.orders", warehouse=os.path.join(demo["cwd"], "paimon-tail-demo"))
    users = set()
    for number, sid in batches:
        snap = table.snapshot_manager().get_snapshot_by_id(sid)
        assert snap.commit_identifier == number - 1 and snap.commit_kind == "APPEND", (number, sid)
        users.add(snap.commit_user)
    assert len(users) == 1 and [sid for _, sid in batches] == list(range(1, len(batches) + 1)), batches


def test_readme_installs_from_the_clone():
    """The README is read in a clone: its installs are of the clone (pip install -e), never of a package index's
    paimon-tail."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert "pip install -e '.[spark]'" in text
    assert not re.search(r"pip install [\"']?paimon-tail", text), "an install from the index"


def test_readme_examples_leave_no_background_process():
    """Ctrl-C reaches a line's foreground command only: a `cmd &` in the middle of a line would go on printing
    into the shell (the shard pair is two lines, one per terminal). Only `serve … &` runs in the background."""
    (examples,) = [code for heading, code in _blocks("README.md") if heading == "Examples"]
    for line in _lines(examples):
        command = line.split("#")[0].replace("&&", "")
        assert "&" not in command.rstrip().rstrip("&"), line
        if command.rstrip().endswith("&"):
            assert command.startswith("paimon-tail serve "), line


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the two Spark examples run to their end (--batches): a minute or two each
def test_readme_examples_as_written(demo):
    (examples,) = [code for heading, code in _blocks("README.md") if heading == "Examples"]
    lines = _lines(examples)
    assert lines[0].startswith("paimon-tail demo --no-follow")
    assert "1 2 3" in next(line for line in lines if line.startswith("paimon-tail lookup"))
    # in order, each in a shell of its own with nothing set but PATH (a new shell after `. .venv/bin/activate`):
    # the warehouse is the default catalog the README's first line (the demo) registers
    _check_lines(demo, lines, prelude="")
    assert os.path.getsize(os.path.join(demo["cwd"], "orders.arrows")) > 0
    assert not [n for n in os.listdir(os.path.join(demo["cwd"], "tmp")) if n.startswith("paimon-enrichment-")], \
        "streaming_enrichment.py left its checkpoint directory behind"
    assert {1, 2, 3} <= _order_ids(demo), "the README's lookup keys are kept by the demo"
    (python,) = [code for heading, code in _blocks("README.md", "python")]
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", python], cwd=demo["cwd"], env=demo["env"], capture_output=True,
                           text=True, timeout=60)
        if not _raced_expiry(python, r.stderr):
            break
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()
    assert first and re.fullmatch(r"\d+ \d+", first[0]), r.stdout
    assert first[-1].startswith("{'order_id': 1,"), r.stdout  # the demo never deletes orders 1 to 3


def test_readme_shell_completion_as_written(tmp_path):
    """The completion line, in bash: it registers the completion, which completes commands and the tables of the
    warehouse named in the line being completed."""
    from paimon_tail.demo import create_demo_tables

    (line,) = [code.strip() for heading, code in _blocks("README.md") if heading == "Shell completion"]
    create_demo_tables(str(tmp_path / "wh"))
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env.pop("PAIMON_WAREHOUSE", None)
    script = (f"{line}\ncomplete -p paimon-tail\n"
              "COMP_WORDS=(paimon-tail fol); COMP_CWORD=1; _paimon_tail_completion paimon-tail; echo \"${COMPREPLY[@]}\"\n"
              f"COMPREPLY=(); COMP_WORDS=(paimon-tail follow -w {tmp_path}/wh shop.); COMP_CWORD=4\n"
              "_paimon_tail_completion paimon-tail; echo \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    registered, commands, tables = r.stdout.splitlines()
    assert "_paimon_tail_completion" in registered
    assert commands == "follow" and tables == "shop.events shop.orders", r.stdout


@pytest.mark.slow
def test_follow_pipelines_as_written(demo):
    (pipelines,) = [code for heading, code in _blocks("docs/follow.md") if heading == "Pipelines"]
    prelude = f"export PAIMON_WAREHOUSE={demo['cwd']}/paimon-tail-demo"
    if not any(p.poll() is None for p in demo["background"]):  # the lookup pipeline needs the README's serve
        _run_line(demo, prelude, "paimon-tail serve shop.orders &")
    _check_lines(demo, _lines(pipelines), prelude)
