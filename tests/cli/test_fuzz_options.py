"""Every option of every command, fuzzed (hypothesis): values no test names end well.

The commands and their parameters are read from the CLI group (``paimon_tail.cli.cli``, subcommand groups included),
so a command or an option added later is fuzzed without editing this file: its values come from its click type
(ranges, choices, paths, the shared types of ``paimon_tail/cli/types.py``), from its name where the name says what
it holds (a table, a host, a timeout), and from a pool of what people and scripts get wrong: empty, blank,
duplicated, huge, negative, non-ASCII, control characters (ESC, BEL, C1, bytes that are not UTF-8), paths to the
wrong kind of file, ports and addresses out of range. Each case starts from a valid invocation of the command (a
real warehouse, a real running service) and replaces one to three of its parameters, so a bad value is met where a
person would meet it, not only by the parser.

The contract, for every case: exit 0, or exit 1/2 with at most a few lines on stderr, the last one naming the
problem (an option, an argument or the value); never a traceback or "unexpected error", never a hang (a command
that runs until stopped, ``serve``, must have said it started), never a control character written to the
terminal (stderr is a real pseudo-terminal); an empty value is refused unless its type documents a meaning for it
(``Text(blank_ok=True)``); piped JSON output parses.

Cases run in this process through the CLI's one error boundary (``tests/inprocess.py``), so thousands
fit in CI; a smaller set runs as real processes writing into a pipe, and every output format of ``follow`` and
``lookup`` meets a reader that goes away (``| head``).

Size and seed: ``PAIMON_TAIL_FUZZ_EXAMPLES`` (generated cases per run, split between commands by weight; default
2000) and ``PAIMON_TAIL_FUZZ_SEED`` (default 31: CI runs the same cases every time). The long run is documented in
docs/errors.md#fuzzing.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import click
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from paimon_tail.cli import cli
from paimon_tail.errors import safe_text

from tests.conftest import CLI, writers_of
from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse
from tests import inprocess
from tests.service.test_security import certs  # noqa: F401  (fixture: a CA, server and client certificates)

EXAMPLES = int(os.environ.get("PAIMON_TAIL_FUZZ_EXAMPLES", "2000"))
SEED = int(os.environ.get("PAIMON_TAIL_FUZZ_SEED", "31"))
# The long run: every failing case written to this file as a JSON line, and the run goes on (the test fails at the
# end if any was written); without it the first failure stops the command's cases (and hypothesis shrinks it).
FAILURES = os.environ.get("PAIMON_TAIL_FUZZ_FAILURES")
RAN: Counter = Counter()  # generated cases run, per command
OUTCOMES: Counter = Counter()  # (command, exit code or "started") -> cases
DEMO_DIRS: set = set()  # where the demo cases may have started a writer


# ------------------------------------------------------------------------------------------------- commands
def _commands(group: click.Group = cli, path: Tuple[str, ...] = ()) -> List[Tuple[Tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            out += _commands(command, path + (name,))
        elif command is not None:
            out.append((path + (name,), command))
    return out


COMMANDS = dict(_commands())
# Share of the run's cases: the commands people run most and whose options are most, more; those that start
# processes (serve, executor, the demo's writer), fewer. A command added later gets weight 1.
WEIGHTS = {("follow",): 5.0, ("lookup",): 2.0, ("consumers",): 1.5, ("service", "status"): 1.0, ("serve",): 0.5,
           ("executor",): 0.3, ("demo",): 0.3}
# Options whose valid use starts machinery a unit run cannot afford (a Spark JVM): their values are fuzzed, the
# flag that turns the machinery on is not set (serve --spark is tested in tests/spark/).
NEVER_SET = {("serve", "use_spark")}


def examples_for(path: Tuple[str, ...]) -> int:
    total = sum(WEIGHTS.get(p, 1.0) for p in COMMANDS)
    return max(10, round(EXAMPLES * WEIGHTS.get(path, 1.0) / total))


# ------------------------------------------------------------------------------------------------- the world
@dataclass
class World:
    warehouse: str
    service: str  # a running serve of db.kv: HOST:PORT
    tmp: str
    demo: str
    files: Dict[str, str] = field(default_factory=dict)

    @property
    def paths(self) -> List[str]:
        """Paths to every kind of thing: a directory, empty, binary, text and YAML files, missing ones, a device, a
        name with a control character, one longer than the system takes."""
        return list(self.files.values())


@pytest.fixture(scope="module")
def world(tmp_path_factory, certs):  # noqa: F811
    d = tmp_path_factory.mktemp("fuzz")
    wh = Warehouse(str(d / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(20)])
    wh.write("kv", [{"k": k, "v": f"w{k}", "op": "+U"} for k in range(0, 20, 3)])
    wh.create("log", PLAIN_SCHEMA)
    for c in range(3):
        wh.write("log", [{"k": c * 10 + i, "v": f"l{c}", "op": "+I"} for i in range(5)])
    wh.create("big", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)  # more than a pipe holds, in any format
    wh.write("big", [{"k": k, "v": f"value-{k}", "op": "+I"} for k in range(5000)])
    wh.create("srv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    wh.write("srv", [{"k": k, "v": "s", "op": "+I"} for k in range(10)])
    svc = ServeProcess(wh.path, ["db.kv", "db.big"], executors=1).wait_ready()
    address = next(re.search(r" at (\S+:\d+)", line).group(1) for line in svc.lines if " at " in line)
    files = {"dir": d / "a-directory", "empty": d / "empty", "binary": d / "binary", "text": d / "text.txt",
             "yaml-list": d / "list.yaml", "yaml-bad": d / "bad.yaml", "config": d / "paimon.yaml",
             "token": d / "token", "jsonl": d / "keys.jsonl", "missing": d / "missing" / "file",
             "many-keys": d / "many-keys.jsonl",
             "control": d / "name\x1b[31m", "unicode": d / "日本.yaml"}
    files["dir"].mkdir()
    files["empty"].write_bytes(b"")
    files["binary"].write_bytes(bytes(range(256)) * 4)
    files["text"].write_text("hello\n")
    files["yaml-list"].write_text("- a\n")
    files["yaml-bad"].write_text("warehouse: [unclosed\n")
    files["config"].write_text(f"warehouse: {wh.path}\n")
    files["token"].write_text("s3cret-token\n")
    files["jsonl"].write_text('{"k": 1}\n{"k": 2}\n')
    files["many-keys"].write_text("".join(f'{{"k": {k % 5000}}}\n' for k in range(10000)))
    files["control"].write_text("x")
    files["unicode"].write_text(f"warehouse: {wh.path}\n")
    world = World(wh.path, address, str(d), str(d / "demo"),
                  {k: str(v) for k, v in files.items()})
    world.files.update({"devnull": "/dev/null", "long": str(d / ("x" * 300) / ("y" * 300)), "here": ".",
                        "ca": str(certs / "ca.pem"), "cert": str(certs / "server.pem"),
                        "key": str(certs / "server.key")})
    cwd = d / "cwd"  # relative paths a case makes land here
    cwd.mkdir()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        yield world
    finally:
        os.chdir(old)
        svc.stop()
        for directory in {world.demo, *DEMO_DIRS}:
            if directory.strip() and "\x00" not in directory:
                subprocess.run(CLI + ["demo", "--stop", "-w", directory], capture_output=True, timeout=60, cwd=cwd)
                for pid in writers_of(os.path.abspath(os.path.join(cwd, directory))):
                    os.kill(pid, signal.SIGKILL)
        for pid in writers_of(str(d), prefix=True):
            os.kill(pid, signal.SIGKILL)
        print(f"\nfuzzed cases run: {sum(RAN.values())} ({dict((' '.join(k), v) for k, v in RAN.items())}); "
              f"outcomes: {dict((' '.join(k[0]) + ' ' + str(k[1]), v) for k, v in sorted(OUTCOMES.items(), key=str))}")


# ------------------------------------------------------------------------------------------------- values
EMPTY = ["", " ", "\t", " \n "]
NASTY = ["-1", "0", "1", "-0", "nan", "inf", "-inf", "1e309", "9" * 40, "x" * 3000, "é", "日本語", "\u202eevil",
         "a\x1b[2Jb", "\x1b]0;title\x07", "\x07", "\x9b31m", "a\nb", "a\rb", "\x7f", "\udcff", "%s%n", "{}", "'", '"',
         "\\", ",", ",,", "a,a", "*", "..", "/", "=", "a=b", "--", "-"]
TABLES = ["db.kv", "db.log", "db.*", "db.k*", "*.kv", "db.nope", "nope.kv", "db.kv.x", "db", ".kv", "db.", "DB.KV",
          "db.k\x1b[31mv", "db./kv", "../db.kv", "日本.表", "db.kv,db.log", "db.[", "db.k?"]
KEYS = ["1", "2", "19", "999", "k=1", "k=", "=1", "1,2", "-1", "2147483648", "99999999999999999999", "1.0", "abc",
        "k=1,k=2", "k=1,v=2", "null", '{"k":1}', "0x1", "１"]
COLUMNS = ["k", "v", "op", "id", "nosuch", "_row_kind", "K", "k ", "日本"]
WHERE = ["k > 1", "v = 'v1'", "k >>> 1", "k = ", "'", "k = 'x", "k IN (1, 2)", "k IS NULL", "(k = 1", "k = 1 AND",
         "nosuch = 1", "k = v", "NOT k = 1", "k == 2", "v = w", "k > 99999999999999999999", "v LIKE 'v%'"]
POSITIONS = ["latest-full", "latest", "earliest", "snapshot:1", "snapshot:2", "snapshot:0", "snapshot:-1",
             "snapshot:99999999999999999999", "snapshot-full:1", "snapshot-full:9", "timestamp:2026-01-01",
             "timestamp:0", "timestamp:99999999999999999999", "timestamp:1e3", "-1h", "-0s", "-99999999999d", "1h",
             "timestamp:", "snapshot:", "snapshot:1.5", "yesterday"]
SHARDS = ["0/2", "1/2", "2/2", "0/0", "-1/2", "0/-1", "1/1", "0/1", "a/b", "0/2/3", "99999999999999999999/2", "/",
          "0/", "/2", "+0/2", " 0/2", "٠/٢"]
BUCKETS = ["0", "1", "0,1", "0,0", "-1", "2", "99999999999999999999", "a", "0,,1", "1,", "٠", "0x1"]
IDS = ["me", "a/b", "..", ".", "a b", "a\x1bb", "日本", "x" * 300, "consumer-1", "a\\b", "-x", "a\tb"]
HOSTS = ["127.0.0.1", "::1", "localhost", "[::1]", "256.1.1.1", "1.2.3", "::g", "host:1", "-1", "a" * 300, "1.1",
         "127.0.0.1 ", "a..b", "ä.example"]
ADDRESSES = ["127.0.0.1:1", "127.0.0.1:0", "127.0.0.1:65536", "[::1]:1", "localhost", "localhost:", "::1",
             "127.0.0.1:-1", ":80", "a,b", "127.0.0.1:1,", "256.0.0.1:1", "localhost:99999999999999999999"]
DELIMITERS = ["\\t", "|", "\\x", "\\u12", "\\n", "ab", "\t", "\\", "\\\\", "\\x1b"]
CATALOG_OPTIONS = ["k=v", "novalue", "=v", "metastore=nosuch", "warehouse=/nonexistent/wh", "cache-enabled=maybe",
                   "fs.s3.endpoint=http://127.0.0.1:1", "metastore=rest", "uri=http://127.0.0.1:1", "warehous=x",
                   "file-format.metadata-cache.max-size=-1", "bucket=0"]
SPARK_CONF = ["a=b", "a", "=b", "spark.master=local", "spark.executor.memory=-1g"]
SIZES = ["512M", "1G", "0", "-1", "1e400", "nan", "inf", "1.5K", "KB", "1 G", "1GiB", "99999999999T", "0.1"]
TIMEOUTS = ["0.5", "1", "2", "0", "-1", "nan", "inf", "1e309", "0.09", "3601", "86401", "1e-9"]
EXECUTORS = ["0", "1", "2", "-1", "257", "99999999999999999999", "1.5", "a"]


def _int_values(kind: click.IntRange) -> List[str]:
    out = ["0", "1", "-1", "2", "2147483648", "9223372036854775808", "1.5", "1e3", "0x10", "+1", " 1", "١", "1_0"]
    for bound in (kind.min, kind.max):
        if bound is not None:
            out += [str(bound - 1), str(bound), str(bound + 1)]
    return out


def _float_values(kind: click.FloatRange) -> List[str]:
    out = ["0", "1", "-1", "0.5", "nan", "inf", "-inf", "1e309", "1e-320", "-0", "1_0", "1e3"]
    for bound in (kind.min, kind.max):
        if bound is not None:
            out += [repr(bound - 0.001), repr(float(bound)), repr(bound + 0.001)]
    return out


# Values that would start what a run cannot afford or must not do (256 executor processes; binding beyond
# loopback; names that go to DNS): only these curated pools, never random text.
CURATED = {"executors": EXECUTORS, "host": HOSTS, "advertise": ADDRESSES, "coordinator": ADDRESSES,
           "interval": ["5", "1", "0.5", "0", "-1", "nan", "inf", "0.009", "1e309", "0.01x"],  # a writer's pace
           "master": ["local[1]", "spark://127.0.0.1:1", "", "yarn"], "warehouse": None}
BY_NAME = {"tables": TABLES, "table": TABLES, "keys": KEYS, "where": WHERE, "start": POSITIONS, "until": POSITIONS,
           "shard": SHARDS, "buckets": BUCKETS, "consumer_id": IDS, "reset_id": IDS, "delete_id": IDS,
           "key_delimiter": DELIMITERS, "catalog_option": CATALOG_OPTIONS, "spark_conf": SPARK_CONF,
           "max_memory": SIZES, "max_disk": SIZES}


def _is_pathish(param: click.Parameter) -> bool:
    return isinstance(param.type, click.Path) or any(w in param.name for w in ("file", "dir", "path", "from"))


def value_strategy(path: Tuple[str, ...], param: click.Parameter, world: World) -> st.SearchStrategy:
    """One value (a string) for ``param``."""
    name, kind = param.name, param.type
    if name == "warehouse" and path == ("demo",):  # the demo writes (and starts a writer) there: under tmp only
        return st.sampled_from([world.demo, world.tmp + "/demo-2", world.files["empty"], world.files["dir"],
                                world.files["control"], world.files["long"], "relative-demo", *EMPTY])
    if name == "warehouse":
        return st.sampled_from([world.warehouse, world.warehouse + "/", "file://" + world.warehouse,
                                "file:///nonexistent/wh", "/nonexistent/wh", world.files["empty"],
                                world.files["dir"], world.files["control"], "relative-wh", *EMPTY, "\x1b[2J",
                                world.files["long"]])
    if name in CURATED:
        return st.sampled_from(CURATED[name] + EMPTY)
    if "timeout" in name or name in ("duration", "lease"):
        return st.sampled_from(TIMEOUTS + EMPTY)
    if name == "select":
        return st.lists(st.sampled_from(COLUMNS + [""]), min_size=1, max_size=4).map(",".join) | \
            st.sampled_from(EMPTY + NASTY)
    if name == "keys_from":
        return st.sampled_from(["-", world.files["jsonl"], *world.paths, *EMPTY])
    if name == "local_dir":
        return st.sampled_from([world.files["dir"], world.tmp + "/local", world.files["empty"],
                                world.files["missing"], world.files["control"], "rel-local", *EMPTY])
    if isinstance(kind, click.Choice):
        choices = [str(c) for c in kind.choices]
        return st.sampled_from(choices + [c.upper() for c in choices] + [c + " " for c in choices] + EMPTY +
                               ["x", "\x1b[31mjsonl"])
    generic = st.sampled_from(EMPTY + NASTY) | st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
    if isinstance(kind, click.IntRange) or kind is click.INT:
        return st.sampled_from(_int_values(kind) if isinstance(kind, click.IntRange) else ["0", "-1", "1"]) | \
            st.integers(-2 ** 70, 2 ** 70).map(str) | generic
    if isinstance(kind, click.FloatRange) or kind is click.FLOAT:
        return st.sampled_from(_float_values(kind) if isinstance(kind, click.FloatRange) else ["0", "nan"]) | \
            st.floats().map(repr) | generic
    if name in BY_NAME:  # the option's own grammar twice as often as the pool: cases that get past parsing
        domain = st.sampled_from(BY_NAME[name])
        return domain | domain | st.sampled_from(EMPTY + NASTY)
    if name in ("tls_cert", "tls_key", "tls_ca", "token_file", "config_file"):
        return st.sampled_from(world.paths + EMPTY)
    if _is_pathish(param):
        return st.sampled_from(world.paths + EMPTY) | generic
    return generic


# ------------------------------------------------------------------------------------------------- cases
def baseline(path: Tuple[str, ...], command: click.Command, world: World) -> Dict[str, object]:
    """A valid invocation, as {param name: value(s) | True (a flag)}: what each case starts from."""
    known = {
        ("follow",): {"tables": ["db.kv"], "exit_at_end": True},
        ("consumers",): {"table": "db.kv"},
        ("lookup",): {"table": "db.kv", "keys": ["1"]},
        ("service", "status"): {"table": "db.kv"},
        ("serve",): {"tables": ["db.srv"], "executors": "0"},
        ("executor",): {"coordinator": world.service},
        ("demo",): {"warehouse": world.demo, "no_follow": True, "interval": "5"},
    }
    base = dict(known.get(path, {}))
    names = {p.name for p in command.params}
    if "warehouse" in names and "warehouse" not in base:
        base["warehouse"] = world.warehouse
    for p in command.params:  # a command added later: its arguments by name
        if isinstance(p, click.Argument) and p.name not in base and p.required:
            value = {"table": "db.kv", "tables": "db.kv", "keys": "1", "key": "1"}.get(p.name, "db.kv")
            base[p.name] = [value] if p.nargs != 1 else value
    return base


@dataclass
class Case:
    path: Tuple[str, ...]
    args: List[str]
    fuzzed: Dict[str, object]  # param name -> value(s) given (None: a flag left out)
    values: Dict[str, object]  # every param's final value(s)

    def __str__(self) -> str:
        return "paimon-tail " + " ".join(shlex.quote(safe_text(a)) for a in self.args)


def key(command: click.Command, param: click.Parameter) -> str:
    """A parameter's name in a case: its dest, or with its flag when several options share the dest (--csv, --tsv,
    --table and --format all set the format)."""
    shared = sum(1 for p in command.params if p.name == param.name) > 1
    return f"{param.name}:{param.opts[0]}" if shared else param.name


def _flag_token(param: click.Option) -> str:
    return next((o for o in param.opts if o.startswith("--")), param.opts[0])


def build_args(path: Tuple[str, ...], command: click.Command, values: Dict[str, object]) -> List[str]:
    args = list(path)
    for p in command.params:  # arguments first, in order
        if isinstance(p, click.Argument) and p.name in values:
            v = values[p.name]
            args += list(v) if isinstance(v, list) else [v]
    for p in command.params:
        if isinstance(p, click.Option) and key(command, p) in values:
            v = values[key(command, p)]
            if v is None:
                continue
            if p.is_flag:
                if v is True:
                    args.append(_flag_token(p))
                continue
            for one in (v if isinstance(v, list) else [v]):
                args += [_flag_token(p), one]
    return args


@st.composite
def cases(draw, path: Tuple[str, ...], command: click.Command, world: World) -> Case:
    params = [p for p in command.params if p.name not in ("help",) and (path + (p.name,)) not in NEVER_SET
              and not getattr(p, "hidden", False)]
    chosen = draw(st.lists(st.sampled_from(params), min_size=1, max_size=3, unique_by=lambda p: key(command, p)))
    values = baseline(path, command, world)
    fuzzed: Dict[str, object] = {}
    for p in chosen:
        if isinstance(p, click.Option) and p.is_flag:
            value: object = draw(st.sampled_from([True, True, True, None]))  # left out now and then
        else:
            many = (isinstance(p, click.Argument) and p.nargs != 1) or getattr(p, "multiple", False)
            one = value_strategy(path, p, world)
            value = draw(st.lists(one, min_size=1, max_size=3)) if many else draw(one)
        values[key(command, p)] = value
        fuzzed[key(command, p)] = value
    return Case(path, build_args(path, command, values), fuzzed, values)


def runs_until_stopped(case: Case) -> bool:
    v = case.values
    if case.path in (("serve",), ("executor",)):
        return True
    if case.path == ("demo",):
        return not (v.get("no_follow") is True or v.get("stop_writer") is True)
    if case.path == ("follow",):  # -n alone waits for its rows: a live follow until they come
        return not (v.get("exit_at_end") is True or v.get("until"))
    if case.path == ("snapshots",):  # -f: a row per commit as it comes, until stopped (or --until)
        return v.get("live") is True and not v.get("until")
    return False


# What a command that runs until stopped says once it runs; the executor also when its service does not answer yet
# (it names the address at once and gives up after --orphan-timeout: docs/query-service.md).
STARTED = {("serve",): ("serving ", "standby for "), ("executor",): ("joined the service", "trying again for"),
           ("demo",): ("demo warehouse:",)}


def run_case(case: Case) -> inprocess.Result:
    if runs_until_stopped(case):
        markers = STARTED.get(case.path)
        started = (lambda err: any(m in err for m in markers)) if markers else None
        return inprocess.run(case.args, limit=20.0 if markers else 3.0, started=started)
    return inprocess.run(case.args, limit=45.0)


# ------------------------------------------------------------------------------------------------- the contract
_SAFE_CONTROLS = {"\n"}


def _unsafe_characters(text: str) -> List[str]:
    return sorted({c for c in text if c not in _SAFE_CONTROLS and safe_text(c) != c})


def _blank_is_documented(param: click.Parameter) -> bool:
    return bool(getattr(param.type, "blank_ok", False)) or (isinstance(param, click.Option) and param.is_flag)


# What some messages call an option instead of its flag (the library's words, shared with the Python API).
WORDS = {"start": ["start position", "timestamp"], "until": ["end position", "timestamp"],
         "catalog_option": ["catalog option"]}


def _names_the_problem(case: Case, line: str) -> bool:
    """The usage error line names an option or argument of the invocation, or quotes a value given."""
    command = COMMANDS[case.path]
    low = line.lower()
    for p in command.params:
        if key(command, p) not in case.values:
            continue
        words = list(getattr(p, "opts", [])) + [p.name, p.name.replace("_", "-"), p.name.replace("_", " "),
                                                p.name.rstrip("s"),
                                                p.human_readable_name.lower().rstrip(". ").rstrip("s"),
                                                *WORDS.get(p.name, [])]
        if any(w and w.lower() in low for w in words):
            return True
    given = [one for v in case.fuzzed.values() for one in (v if isinstance(v, list) else [v]) if isinstance(one, str)]
    for one in given:
        if one.strip() and (safe_text(one.strip()) in line or repr(one) in line):
            return True
    unknown = re.search(r"No such option '([^']+)'", line)  # click: a value taken for an option ("-inf" as -i)
    return bool(unknown and any(one.startswith(unknown.group(1)) for one in given))


def check(case: Case, r: inprocess.Result) -> None:
    where = f"{case}\n exit {r.code} after {r.seconds:.1f}s; stderr:\n{r.err_text[-3000:]}"
    text = r.err_text
    assert "Traceback" not in text, where
    assert "unexpected error" not in text, where
    unsafe = _unsafe_characters(text)
    assert not unsafe, f"control characters {unsafe} written to the terminal: {where}"
    if r.interrupted:
        assert runs_until_stopped(case), f"hang: still running after {r.seconds:.0f}s: {where}"
        assert r.code == 130, where
        if case.path in STARTED:
            assert r.started, f"neither started nor failed within {r.seconds:.0f}s: {where}"
        return
    assert r.code in (0, 1, 2), where
    lines = [line for line in text.splitlines() if line.strip()]
    if r.code in (1, 2):
        assert lines, f"exit {r.code} with nothing on stderr: {where}"
        last = lines[-1]
        assert last.startswith("paimon-tail: ") or last.startswith('{"time"'), where
        assert len(lines) <= (8 if runs_until_stopped(case) else 4), f"more than a few lines: {where}"
        if r.code == 2:
            assert _names_the_problem(case, last), f"the message names neither the option nor the value: {where}"
        return
    command = COMMANDS[case.path]
    for p in command.params:
        v = case.fuzzed.get(key(command, p))
        blanks = [x for x in (v if isinstance(v, list) else [v]) if isinstance(x, str) and not x.strip()]
        assert not blanks or _blank_is_documented(p), f"an empty {p.name} accepted silently: {where}"
    _check_output(case, r)


def _check_output(case: Case, r: inprocess.Result) -> None:
    """Exit 0: the documented result. Piped JSON lines parse; a follow's rows have the table's columns."""
    v = case.values
    formats = [value for name, value in v.items() if name.split(":")[0] == "fmt" and value is not None]
    piped_json = all(f in ("auto", "jsonl") for f in formats) and not any(":" in n for n in v if n.startswith("fmt"))
    if case.path in (("follow",), ("lookup",), ("consumers",), ("service", "status")) and piped_json \
            and not v.get("as_json") and r.out:
        rows = [json.loads(line) for line in r.out.decode().splitlines()]
        if case.path == ("follow",) and rows:
            allowed = {"k", "v", "op", "_row_kind", "_table", "_snapshot_id", "_commit_time", "_bucket",
                       "_partition", "n", "id", "writer"}
            assert all(set(row) <= allowed for row in rows), f"{case}: {rows[:2]}"


# ------------------------------------------------------------------------------------------------- the tests
PATHS = sorted(COMMANDS)


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) for p in PATHS])
def test_every_option_of_every_command(path, world):
    command = COMMANDS[path]

    @seed(SEED)
    @settings(max_examples=examples_for(path), deadline=None, database=None, print_blob=True,
              suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate, Phase.shrink))
    @given(case=cases(path, command, world))
    def one(case: Case) -> None:
        RAN[path] += 1
        if path == ("demo",) and isinstance(case.values.get("warehouse"), str):
            DEMO_DIRS.add(case.values["warehouse"])
        result = run_case(case)
        OUTCOMES[(path, "started" if result.started else result.code)] += 1
        if not FAILURES:
            check(case, result)
            return
        try:
            check(case, result)
        except AssertionError as e:
            with open(FAILURES, "a", encoding="utf-8") as f:
                f.write(json.dumps({"command": " ".join(path), "args": case.args, "failure": str(e)[:4000]},
                                   ensure_ascii=True) + "\n")

    one()


@seed(SEED)
@settings(max_examples=max(8, EXAMPLES // 160), deadline=None, database=None, print_blob=True,
          suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate, Phase.shrink))
@given(data=st.data())
def test_real_processes_writing_into_a_pipe(world, data):
    """A smaller set as real processes (``python -m paimon_tail``), stdout and stderr pipes: what main() adds
    around the boundary (the exit code, the final flush, signals) is in the picture too."""
    path = data.draw(st.sampled_from(PATHS))
    case = data.draw(cases(path, COMMANDS[path], world))
    if runs_until_stopped(case) or any("\udc80" <= c <= "\udcff" for a in case.args for c in a):
        return  # those run in-process above (a process would need a Ctrl-C; argv cannot carry lone surrogates)
    RAN[("processes",)] += 1
    env = {k: v for k, v in os.environ.items() if k not in ("PAIMON_WAREHOUSE", "PAIMON_TAIL_TOKEN")}
    t0 = time.monotonic()
    try:
        done = subprocess.run(CLI + case.args, capture_output=True, timeout=90, env=env, cwd=world.tmp)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"hang: {case} still running after 90s") from e
    check(case, inprocess.Result(done.returncode, done.stdout, done.stderr, time.monotonic() - t0, False, False))


FORMATS = {("follow",): ["db.big", "-e"], ("lookup",): ["db.big", "--keys-from", "KEYS"]}


@pytest.mark.parametrize("path, fmt", [(p, f) for p in FORMATS for param in COMMANDS[p].params
                                       if param.name == "fmt" and isinstance(param.type, click.Choice)
                                       for f in param.type.choices], ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_a_reader_that_goes_away(world, path, fmt):
    """``| head``: whatever the format, a reader that goes away ends the command with exit 0 and nothing on
    stderr (the formats are read from the --format choice: one added later is tried too)."""
    args = [a.replace("KEYS", world.files["many-keys"]) for a in FORMATS[path]]
    env = {k: v for k, v in os.environ.items() if k not in ("PAIMON_WAREHOUSE", "PAIMON_TAIL_TOKEN")}
    proc = subprocess.Popen(CLI + [*path, *args, "-w", world.warehouse, "-f", fmt], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        first = proc.stdout.read(4096)  # what head -c 4096 reads, then it exits
        proc.stdout.close()
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert first, err
    assert proc.returncode == 0 and not err, (proc.returncode, err.decode(errors="replace")[-2000:])


def test_generated_cases_per_run():
    """The run generated what CI counts on: at least 2,000 cases (docs/errors.md#fuzzing); a long run wrote no
    failure."""
    if not RAN:
        pytest.skip("run with the fuzz tests above")
    if FAILURES and os.path.exists(FAILURES):
        with open(FAILURES, encoding="utf-8") as f:
            failed = f.read().splitlines()
        assert not failed, f"{len(failed)} failing cases in {FAILURES}, the first: {failed[0][:2000]}"
    assert sum(RAN.values()) >= min(EXAMPLES, 2000) * 0.9, RAN
    for path, n in RAN.items():  # the cases reach past parsing: some run (exit 0) or start, for every command
        if n >= 20:
            assert OUTCOMES[(path, 0)] + OUTCOMES[(path, "started")] > 0, (path, OUTCOMES)
