"""Start-up: a command imports only what it uses. Each case runs the real CLI in a fresh interpreter and reads
``sys.modules`` as the process exits (the figures are in benchmarks/startup.py, not here)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Heavy modules no light command may load: pandas and pyarrow.dataset cost ~0.4 s on their own.
HEAVY = ("pandas", "pyarrow.dataset", "polars", "pypaimon.read.table_read")

PROBE = r"""
import atexit, json, sys
def report():
    sys.stderr.write("\nLOADED " + json.dumps(sorted(sys.modules)) + "\n")
atexit.register(report)
sys.argv = ["paimon-tail"] + sys.argv[1:]
from paimon_tail.cli import main
main()
"""


def loaded_modules(*args: str, input: str | None = None, env: dict | None = None) -> tuple:
    """(exit code, stdout, the set of modules loaded by `paimon-tail ARGS` when it exited)."""
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, input=input,
                         env=env, timeout=120)
    marker = out.stderr.rindex("LOADED ")
    return out.returncode, out.stdout, set(json.loads(out.stderr[marker + 7:].splitlines()[0]))


@pytest.mark.parametrize("args", [["--help"], ["follow", "--help"], ["lookup", "--help"], ["serve", "--help"],
                                  ["tables", "--help"], ["describe", "--help"], ["demo", "--help"],
                                  ["service", "status", "--help"], ["consumers", "--help"], ["--version"]])
def test_help_loads_click_only(args):
    code, stdout, modules = loaded_modules(*args)
    assert code == 0 and stdout
    heavy = sorted(m for m in modules if m.split(".")[0] in ("pyarrow", "pypaimon", "grpc", "numpy", "polars",
                                                                "pandas", "rich", "asyncio", "yaml"))
    assert not heavy, heavy


def test_the_probe_sees_heavy_imports(tmp_path):
    """The guard can fail: a command that reads a table does load pyarrow and pypaimon."""
    code, _, modules = loaded_modules("consumers", "db.t", "-w", str(tmp_path))
    assert code != 0 and "pypaimon" in modules
