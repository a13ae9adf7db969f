"""Every kind of file the tool reads, truncated, emptied, filled with garbage and deleted, for each command that reads
it: a one-line error naming the file and what is wrong with it, or the documented recovery (a hint that cannot be
read is ignored, as Paimon ignores it) with the same result as before. Never a silent partial result with exit 0.

The kinds: a snapshot (the latest, one in the middle), the LATEST and EARLIEST hints, the schema, a manifest list,
a manifest, an index manifest and a deletion file (a deletion-vector table written by Paimon Java: ``pk_dv``), a
data file, a consumer file, the service registration, ``--config``, the TLS files and the token file. The commands:
follow (a full read and from the earliest snapshot), consumers, lookup and service status (with and without a
running service), serve, the executors (through serve's and a lookup that needs their files), the demo (its writer's
pid file). The Spark source meets the same files in tests/spark/test_spark_corrupt_files.py.

Runs in this process through the CLI's error boundary (``inprocess.py``), a fresh copy of the warehouse per case;
the outcomes are the table in docs/errors.md#corrupt-files.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import pytest

from tests.conftest import CLI, writers_of
from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse
from tests import inprocess

MODES = ("truncated", "empty", "garbage", "deleted")


def corrupt(path: str, mode: str) -> None:
    data = open(path, "rb").read()
    if mode == "deleted":
        os.remove(path)
        return
    with open(path, "wb") as f:
        if mode == "truncated":
            f.write(data[: max(1, len(data) // 2)])
        elif mode == "garbage":
            f.write(bytes((i * 131 + 7) % 256 for i in range(max(16, len(data)))))  # the same garbage every run


def _newest(pattern: str) -> str:
    found = sorted(glob.glob(pattern), key=lambda p: (os.path.getmtime(p), p))
    assert found, pattern
    return found[-1]


def _delta_manifest_list(table_dir: str) -> str:
    """The latest snapshot's delta manifest list: read by a full read of it and by a follow of its changes."""
    import json

    with open(_snapshot(table_dir, "latest")) as f:
        return f"{table_dir}/manifest/{json.load(f)['deltaManifestList']}"


def _snapshot(table_dir: str, which: str) -> str:
    ids = sorted(int(p.rsplit("-", 1)[1]) for p in glob.glob(f"{table_dir}/snapshot/snapshot-*"))
    return f"{table_dir}/snapshot/snapshot-{ids[-1] if which == 'latest' else ids[len(ids) // 2]}"


# ---------------------------------------------------------------------------------------------------- tables
@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """db.kv: primary key, 2 buckets, 4 commits (the first two compacted into nothing special: pypaimon writes
    level 0), and the EARLIEST hint Paimon Java writes (pypaimon does not)."""
    root = tmp_path_factory.mktemp("pristine")
    wh = Warehouse(str(root / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    for c in range(4):
        wh.write("kv", [{"k": k, "v": f"c{c}-{k}", "op": "+I"} for k in range(c * 5, c * 5 + 10)])
    table = f"{wh.path}/db.db/kv"
    with open(f"{table}/snapshot/EARLIEST", "w") as f:
        f.write("1")
    assert sorted(os.listdir(f"{table}/snapshot")) == ["EARLIEST", "LATEST", "snapshot-1", "snapshot-2",
                                                       "snapshot-3", "snapshot-4"]
    return wh.path


@pytest.fixture
def warehouse(pristine, tmp_path):
    """A fresh copy of the pristine warehouse for one case."""
    path = str(tmp_path / "wh")
    shutil.copytree(pristine, path)
    return path


def _out(result: inprocess.Result) -> List[str]:
    return sorted(result.out.decode().splitlines())


@pytest.fixture(scope="module")
def expected(pristine):
    """What each command prints on the pristine table (the same bytes, not copied: read in place)."""
    return {name: _out(_ok(inprocess.run([a.replace("$WH", pristine) for a in args])))
            for name, args in COMMANDS.items()}


def _ok(result: inprocess.Result) -> inprocess.Result:
    assert result.code == 0, result.err_text
    return result


COMMANDS = {
    "follow": ["follow", "db.kv", "-w", "$WH", "-e"],  # the latest snapshot in full
    "follow --from earliest": ["follow", "db.kv", "-w", "$WH", "-e", "--from", "earliest"],  # every snapshot
    "consumers": ["consumers", "db.kv", "-w", "$WH"],  # the latest snapshot
}


@dataclass(frozen=True)
class Kind:
    pick: Callable[[str], str]  # table directory -> the file
    what: str  # how the error names it ("snapshot", "manifest list", ...)
    reads: Dict[str, str]  # command -> outcome for corrupted contents: "error" | "same" (not read, or recovered)
    deleted: Dict[str, str]  # command -> outcome when deleted: "error" | "same" | a message the error contains


KINDS = {
    "latest snapshot": Kind(lambda t: _snapshot(t, "latest"), "snapshot",
                            {"follow": "error", "follow --from earliest": "error", "consumers": "error"},
                            # as Paimon: the LATEST hint names a snapshot that is not there, the listing decides
                            {"follow": "recovered", "follow --from earliest": "recovered", "consumers": "same"}),
    "a snapshot in the middle": Kind(lambda t: _snapshot(t, "middle"), "snapshot",
                                     {"follow": "same", "follow --from earliest": "error", "consumers": "same"},
                                     {"follow": "same", "follow --from earliest": "is missing", "consumers": "same"}),
    "LATEST hint": Kind(lambda t: f"{t}/snapshot/LATEST", "LATEST",
                        {"follow": "same", "follow --from earliest": "same", "consumers": "same"},
                        {"follow": "same", "follow --from earliest": "same", "consumers": "same"}),
    "EARLIEST hint": Kind(lambda t: f"{t}/snapshot/EARLIEST", "EARLIEST",
                          {"follow": "same", "follow --from earliest": "same", "consumers": "same"},
                          {"follow": "same", "follow --from earliest": "same", "consumers": "same"}),
    "schema": Kind(lambda t: f"{t}/schema/schema-0", "schema",
                   {"follow": "error", "follow --from earliest": "error", "consumers": "error"},
                   # the schema directory is the table, for Paimon and its catalog
                   {c: "table db.kv does not exist" for c in COMMANDS}),
    "manifest list": Kind(_delta_manifest_list, "manifest list",
                          {"follow": "error", "follow --from earliest": "error", "consumers": "same"},
                          {"follow": "error", "follow --from earliest": "error", "consumers": "same"}),
    "manifest": Kind(lambda t: _newest(f"{t}/manifest/manifest-[0-9a-f]*"), "manifest",
                     {"follow": "error", "follow --from earliest": "error", "consumers": "same"},
                     {"follow": "error", "follow --from earliest": "error", "consumers": "same"}),
    "data file": Kind(lambda t: _newest(f"{t}/bucket-*/data-*"), "data file",
                      {"follow": "error", "follow --from earliest": "error", "consumers": "same"},
                      {"follow": "error", "follow --from earliest": "error", "consumers": "same"}),
}


def check_error(result: inprocess.Result, path: str, what: str, contains: Optional[str] = None) -> None:
    """One line (after whatever rows came first), naming the file and what is wrong, exit 1."""
    err = result.err_text
    lines = [line for line in err.splitlines() if line.strip()]
    where = f"exit {result.code}: {err[-2000:]}"
    assert result.code == 1, where
    assert len(lines) == 1 and lines[0].startswith("paimon-tail: "), where
    assert "Traceback" not in err and "unexpected error" not in err, where
    if contains is not None:
        assert contains in lines[0], where
        return
    assert f"cannot read {what} {path}: " in lines[0], where
    problem = lines[0].split(f"{path}: ", 1)[1]
    assert any(w in problem for w in ("empty", "ends early", "not valid JSON", "not text", "not an Avro file",
                                      "not a Parquet file", "does not exist", "not what", "has no", "is not a")), \
        where


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(KINDS))
def test_table_files(kind, mode, warehouse, expected):
    spec = KINDS[kind]
    table = f"{warehouse}/db.db/kv"
    path = spec.pick(table)
    corrupt(path, mode)
    outcomes = spec.deleted if mode == "deleted" else spec.reads
    for command, outcome in outcomes.items():
        result = inprocess.run([a.replace("$WH", warehouse) for a in COMMANDS[command]])
        where = f"{kind} {mode}, {command}: exit {result.code}: {result.err_text[-2000:]}"
        if outcome in ("same", "recovered"):
            assert result.code == 0 and not result.err_text.strip(), where
            if outcome == "same":  # not read by this command, or ignored as Paimon ignores it: the same result
                assert _out(result) == expected[command], where
            else:  # the snapshot before it is the latest now: rows, every line whole
                assert result.out, where
        elif outcome == "error":
            check_error(result, path, spec.what)
        else:
            check_error(result, path, spec.what, contains=outcome)


# ---------------------------------------------------------------------------------------------------- deletion vectors
@pytest.fixture(scope="module")
def dv_table(tmp_path_factory):
    """Paimon Java's pk_dv (tests/java/javafix.py): snapshots 5 and 6 read through deletion vectors."""
    import sys

    from tests.java.javafix import classpath, java_missing_reason, write_scenario

    reason = java_missing_reason()
    if reason:
        pytest.skip(f"PAIMON JAVA FIXTURES SKIPPED: {reason}")
    classpath()
    root = tmp_path_factory.mktemp("dv")
    write_scenario(str(root), "pk_dv")
    return str(root)


def _deletion_files(warehouse: str, snapshot_id: int) -> List[str]:
    from paimon_tail.catalog import open_table

    table = open_table("db.pk_dv", warehouse=warehouse).copy({"scan.snapshot-id": str(snapshot_id)})
    splits = table.new_read_builder().new_scan().plan().splits()
    return sorted({d.dv_index_path for s in splits for d in (s.data_deletion_files or []) if d is not None})


@pytest.mark.java
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["index manifest", "deletion file"])
def test_deletion_vector_files(kind, mode, dv_table, tmp_path):
    warehouse = str(tmp_path / "wh")
    shutil.copytree(dv_table, warehouse)
    dvs = _deletion_files(warehouse, 6)
    assert dvs, "the fixture reads snapshot 6 through deletion vectors"  # else this test proves nothing
    table = f"{warehouse}/db.db/pk_dv"
    if kind == "deletion file":
        path = dvs[0]
        args = ["follow", "db.pk_dv", "-w", warehouse, "-e", "--from", "snapshot-full:6", "--until", "snapshot:6"]
    else:
        path = _newest(f"{table}/manifest/index-manifest-*")  # the latest snapshot's
        args = ["follow", "db.pk_dv", "-w", warehouse, "-e"]
    pristine = _ok(inprocess.run([a.replace(warehouse, dv_table) for a in args]))
    assert pristine.out
    corrupt(path, mode)
    check_error(inprocess.run(args), path, kind)


# ---------------------------------------------------------------------------------------------------- consumer file
@pytest.mark.parametrize("mode", MODES)
def test_consumer_file(mode, warehouse, expected):
    path = f"{warehouse}/db.db/kv/consumer/consumer-billing"
    _ok(inprocess.run(["consumers", "db.kv", "-w", warehouse, "--reset", "billing", "--to", "3"]))
    corrupt(path, mode)
    listed = inprocess.run(["consumers", "db.kv", "-w", warehouse])
    follow = inprocess.run(["follow", "db.kv", "-w", warehouse, "-e", "--consumer-id", "billing"])
    if mode == "deleted":  # a consumer without a file is a new one: it starts where --from says
        assert follow.code == 0 and _out(follow) == expected["follow"], follow.err_text
        assert listed.code == 0 and b"billing" not in listed.out, listed.err_text
    else:
        for result in (follow, listed):
            check_error(result, path, "consumer file")
            assert "--reset billing" in result.err_text  # and how to fix it
    # resetting it (or deleting it) is the way out, whatever the file holds
    _ok(inprocess.run(["consumers", "db.kv", "-w", warehouse, "--reset", "billing", "--to", "4"]))
    assert b'"next_snapshot": 4' in _ok(inprocess.run(["consumers", "db.kv", "-w", warehouse])).out


# ---------------------------------------------------------------------------------------------------- the registration
def _registration(warehouse: str) -> str:
    return f"{warehouse}/db.db/kv/service/service-paimon-tail-lookup"


@pytest.fixture(scope="module")
def registration(tmp_path_factory):
    """A real registration, written by a real serve (then stopped: the file is kept as it was)."""
    wh = Warehouse(str(tmp_path_factory.mktemp("reg") / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    wh.write("kv", [{"k": k, "v": "v", "op": "+I"} for k in range(10)])
    svc = ServeProcess(wh.path, ["db.kv"], executors=1).wait_ready()
    text = open(_registration(wh.path), "rb").read()
    svc.kill_all()
    return text


@pytest.mark.parametrize("mode", MODES)
def test_registration_file(mode, warehouse, registration):
    path = _registration(warehouse)
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(registration)
    corrupt(path, mode)
    for args in (["lookup", "db.kv", "1"], ["service", "status", "db.kv"]):
        result = inprocess.run([*args, "-w", warehouse])
        lines = result.err_text.strip().splitlines()
        if mode == "deleted" and lines and lines[0] == "waiting for db.kv to be served…":
            lines = lines[1:]  # (no file: a lookup waits a while for a service starting, and says so on a terminal)
        assert result.code == 1 and len(lines) == 1, result.err_text
        assert "no query service is registered for db.kv" in lines[0], result.err_text
        if mode != "deleted":  # there, but not a registration: named, and what is wrong with it
            assert f"its registration file {path} " in lines[0], result.err_text
    # serve replaces what is not a registration (documented: a coordinator takes over a file that is not one)
    served = inprocess.run(["serve", "db.kv", "-w", warehouse, "--executors", "0"], limit=30,
                           started=lambda err: "serving db.kv" in err)
    assert served.started and served.code == 130, served.err_text
    assert "Traceback" not in served.err_text and "standing by" not in served.err_text, served.err_text


# ---------------------------------------------------------------------------------------------------- serve
@pytest.mark.parametrize("mode", ["truncated", "deleted"])
@pytest.mark.parametrize("kind", ["latest snapshot", "schema", "manifest list", "manifest"])
def test_serve_meets_the_table_files(kind, mode, warehouse):
    spec = KINDS[kind]
    path = spec.pick(f"{warehouse}/db.db/kv")
    corrupt(path, mode)
    result = inprocess.run(["serve", "db.kv", "-w", warehouse, "--executors", "1"], limit=60,
                           started=lambda err: "ready in" in err)
    err = result.err_text
    assert "Traceback" not in err and "unexpected error" not in err, err
    if mode == "deleted" and kind == "latest snapshot":  # the one before is the latest: served
        assert result.started and result.code == 130, err
        return
    assert result.code == 1 and not result.started, err
    last = err.strip().splitlines()[-1]
    if mode == "deleted" and kind == "schema":
        assert "table db.kv does not exist" in last, err
    else:
        assert last.startswith(f"paimon-tail: cannot read {spec.what} {path}: "), err
    assert len(err.strip().splitlines()) <= 3, err


@pytest.fixture(scope="module")
def served_corrupt(tmp_path_factory):
    """A serve whose warehouse then loses or garbles one data file per bucket it holds: one table per mode."""
    wh = Warehouse(str(tmp_path_factory.mktemp("served") / "wh"))
    broken = {}
    for mode in MODES:
        name = f"kv_{mode}"
        wh.create(name, PLAIN_SCHEMA, primary_keys=["k"], bucket=1)
        wh.write(name, [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(10)])
        broken[mode] = _newest(f"{wh.path}/db.db/{name}/bucket-0/data-*")
        corrupt(broken[mode], mode)
    svc = ServeProcess(wh.path, [f"db.kv_{m}" for m in MODES], executors=1).wait_ready()
    yield wh.path, broken
    svc.stop()


@pytest.mark.parametrize("mode", MODES)
def test_executors_meet_a_broken_data_file(mode, served_corrupt):
    """The executors read the data files: a key of a bucket whose file is broken is not answered (a one-line
    error naming the file, exit 1), never answered as "not found"."""
    warehouse, broken = served_corrupt
    result = inprocess.run(["lookup", f"db.kv_{mode}", "1", "-w", warehouse, "--missing", "null"], limit=60)
    lines = result.err_text.strip().splitlines()
    assert result.code == 1 and len(lines) == 1, result.err_text
    assert "1 of 1 key could not be answered" in lines[0] and os.path.basename(broken[mode]) in lines[0], lines
    assert b"null" not in result.out, result.out
    status = inprocess.run(["service", "status", f"db.kv_{mode}", "-w", warehouse], limit=30)
    assert status.code == 0, status.err_text


# ---------------------------------------------------------------------------------------------------- the files given
@pytest.fixture(scope="module")
def given_files(tmp_path_factory):
    from tests.service.test_security import _openssl

    d = tmp_path_factory.mktemp("given")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days",
             "2", "-subj", "/CN=127.0.0.1", cwd=d)
    return {"cert": (d / "cert.pem").read_bytes(), "key": (d / "key.pem").read_bytes(), "token": b"s3cret\n",
            "ca": (d / "cert.pem").read_bytes(), "config": None}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["--config", "--tls-ca", "--tls-cert", "--tls-key", "--token-file"])
def test_files_given_on_the_command_line(kind, mode, warehouse, given_files, tmp_path):
    """Refused before anything runs, naming the file and what is wrong (exit 2): the command line is wrong."""
    files = {"cert": tmp_path / "cert.pem", "key": tmp_path / "key.pem", "token": tmp_path / "token",
             "ca": tmp_path / "ca.pem", "config": tmp_path / "paimon.yaml"}
    for name, path in files.items():
        path.write_bytes(given_files[name] if given_files[name] is not None else f"warehouse: {warehouse}\n".encode())
    target = {"--config": "config", "--tls-ca": "ca", "--tls-cert": "cert", "--tls-key": "key",
              "--token-file": "token"}[kind]
    path = str(files[target])
    corrupt(path, mode)
    if kind == "--config":
        args = ["follow", "db.kv", "-e", "--config", path]
    elif kind == "--token-file":
        args = ["lookup", "db.kv", "1", "-w", warehouse, "--token-file", path]
    else:
        args = ["serve", "db.kv", "-w", warehouse, "--executors", "0", "--tls-cert", str(files["cert"]),
                "--tls-key", str(files["key"])] + (["--tls-ca", path] if kind == "--tls-ca" else [])
    result = inprocess.run(args, limit=30, started=lambda err: "serving" in err)
    lines = result.err_text.strip().splitlines()
    where = f"{kind} {mode}: exit {result.code}: {result.err_text}"
    if kind == "--token-file" and mode == "truncated":  # a shorter token is another token: the service says so
        assert result.code == 1 and "no query service is registered" in result.err_text, where
        return
    if kind == "--config" and mode == "truncated":  # cut inside the warehouse path: still YAML, naming another
        assert result.code == 1 and len(lines) == 1 and "does not exist" in lines[0], where
        return
    assert result.code == 2 and len(lines) == 1 and path in lines[0], where
    assert "Traceback" not in result.err_text and "E1" not in result.err_text, where  # no gRPC log lines


# ---------------------------------------------------------------------------------------------------- the demo
@pytest.mark.parametrize("mode", ["truncated", "garbage"])
def test_demo_pid_file(mode, tmp_path):
    """The demo's writer keeps a pid file it holds locked: one that no writer holds is no writer, whatever it
    holds (a new writer replaces it); --stop says no writer runs."""
    demo = str(tmp_path / "demo")
    os.makedirs(demo)
    path = f"{demo}/demo-writer.pid"
    with open(path, "w") as f:
        f.write('{"pid": 1, "interval": 1.0, "started": 0}')
    corrupt(path, mode)
    try:
        stopped = inprocess.run(["demo", "--stop", "-w", demo])
        assert stopped.code == 0 and "no demo writer is running" in stopped.err_text, stopped.err_text
        started = inprocess.run(["demo", "--no-follow", "-w", demo, "--interval", "5"], limit=120)
        assert started.code == 0 and "started a writer" in started.err_text, started.err_text
    finally:
        subprocess.run(CLI + ["demo", "--stop", "-w", demo], capture_output=True, timeout=60)
        for pid in writers_of(demo):
            os.kill(pid, 9)


def test_consumer_position_beyond_the_next_snapshot(warehouse):
    """A consumer file that parses but points past the next snapshot to be committed (a rollback, a hand edit):
    refused with the reset that fixes it, never a follow that waits for ever (or, with -e, prints nothing)."""
    path = f"{warehouse}/db.db/kv/consumer/consumer-c"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write('{"nextSnapshot": 99}')
    result = inprocess.run(["follow", "db.kv", "-w", warehouse, "-e", "--consumer-id", "c"])
    lines = result.err_text.strip().splitlines()
    assert result.code == 1 and len(lines) == 1, result.err_text
    assert "consumer c is at snapshot 99, beyond the next one to be committed (latest is 4)" in lines[0], lines
    assert "--reset c --to 5" in lines[0], lines


def test_the_file_errors_shim_is_needed(warehouse):
    """compat/patches/file_errors.py: without it pypaimon's errors name no file, and an index manifest that is gone reads
    as "no deletion vectors"."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    from paimon_tail.catalog import open_table
    from paimon_tail.compat.patches import file_errors
    from paimon_tail.errors import MissingFile, UnreadableFile

    table = open_table("db.kv", warehouse=warehouse)
    path = _delta_manifest_list(f"{warehouse}/db.db/kv")
    corrupt(path, "truncated")
    name = os.path.basename(path)
    file_errors.uninstall()
    try:
        with pytest.raises(Exception) as without:
            ManifestListManager(table).read(name)
        assert path not in str(without.value) and not isinstance(without.value, UnreadableFile)
        assert IndexManifestFile(table).read("index-manifest-gone") == []
    finally:
        file_errors.install()
    with pytest.raises(UnreadableFile, match="cannot read manifest list .*: it ends early"):
        ManifestListManager(table).read(name)
    with pytest.raises(MissingFile, match="cannot read index manifest .*index-manifest-gone: it does not exist"):
        IndexManifestFile(table).read("index-manifest-gone")
