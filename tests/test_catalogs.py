"""Named catalogs (catalogs.yaml in the user's config directory, ``--catalog NAME``, a default), and which
catalog a command opens: its flags, then ``PAIMON_WAREHOUSE``, then the default catalog (docs/catalogs.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from paimon_tail import catalogs
from paimon_tail.catalog import catalog_config
from paimon_tail.errors import UsageError

from tests.conftest import TestWarehouse, append_rows, run_cli

BIN = os.path.dirname(sys.executable)  # the venv's bin: paimon-tail on PATH, as in an activated shell


@pytest.fixture
def two(tmp_path, config_home):
    """Warehouses a (db.log: 2 rows) and b (db.log: 3 rows), named in catalogs.yaml; a is the default."""
    whs = {}
    for name, rows in (("a", 2), ("b", 3)):
        wh = TestWarehouse(str(tmp_path / name))
        wh.create("log")
        wh.commit("log", append_rows(0, rows))
        whs[name] = wh.path
    path = os.path.join(config_home, "paimon-tail", "catalogs.yaml")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(f"# mine\ndefault-catalog: a\ncatalog:\n  a:\n    warehouse: {whs['a']}\n"
                f"  b:\n    warehouse: {whs['b']}\n")
    return whs


def test_precedence_flags_then_environment_then_the_default(two, monkeypatch, tmp_path):
    a, b = two["a"], two["b"]
    monkeypatch.delenv("PAIMON_WAREHOUSE", raising=False)
    assert catalog_config().options == {"warehouse": a} and catalog_config().source == "default catalog a"
    assert catalog_config(catalog="b").options == {"warehouse": b}
    assert catalog_config(catalog="b", warehouse=a).options == {"warehouse": a}  # -w over the named one's
    assert catalog_config(options=["s3.endpoint=x"]).options == {"warehouse": a, "s3.endpoint": "x"}
    # -O metastore=... is a catalog of its own kind: the default's warehouse is not smuggled into it
    assert catalog_config(options=["metastore=rest", "uri=http://x"]).options == {"metastore": "rest",
                                                                                 "uri": "http://x"}
    monkeypatch.setenv("PAIMON_WAREHOUSE", b)
    assert catalog_config().options == {"warehouse": b} and catalog_config().source == "PAIMON_WAREHOUSE"
    assert catalog_config(warehouse=a).options == {"warehouse": a}
    assert catalog_config(catalog="a").options == {"warehouse": a}  # a flag over the environment
    config = tmp_path / "paimon.yaml"
    config.write_text(f"warehouse: {a}\n")
    assert catalog_config(config_file=str(config)).options == {"warehouse": a}
    with pytest.raises(UsageError, match="--config and --catalog go one at a time"):
        catalog_config(config_file=str(config), catalog="a")
    with pytest.raises(UsageError, match=r"no catalog named 'bb' in .*catalogs.yaml \(did you mean b\?\)"):
        catalog_config(catalog="bb")


def test_the_cli_opens_what_the_flags_environment_and_default_say(two, tmp_path):
    a, b = two["a"], two["b"]

    def rows(*args, env=None):
        out = run_cli(["follow", "db.log", "-e", "--from", "earliest", *args], env=env or {})
        assert out.returncode == 0, out.stderr
        return len(out.stdout.splitlines())

    assert rows() == 2  # a new shell: the default catalog
    assert rows(env={"PAIMON_WAREHOUSE": b}) == 3
    assert rows("--catalog", "a", env={"PAIMON_WAREHOUSE": b}) == 2
    assert rows("-w", b) == 3
    bad = run_cli(["follow", "db.log", "-e", "--catalog", "c"])
    assert bad.returncode == 2 and bad.stderr.decode().startswith("paimon-tail: no catalog named 'c' in ")
    assert bad.stderr.decode().rstrip().endswith("(it has a, b)")


def test_a_broken_catalogs_file_is_named_and_only_read_when_needed(tmp_path, config_home):
    wh = TestWarehouse(str(tmp_path / "wh"))
    wh.create("log")
    wh.commit("log", append_rows(0, 1))
    path = os.path.join(config_home, "paimon-tail", "catalogs.yaml")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("catalog: [unclosed\n")
    out = run_cli(["follow", "db.log", "-e"])
    assert out.returncode == 2 and out.stderr.decode() == \
        f"paimon-tail: {path} is not valid YAML: while parsing a flow sequence\n"
    assert run_cli(["follow", "db.log", "-e", "-w", wh.path]).returncode == 0
    with open(path, "w") as f:
        f.write("default-catalog: x\ncatalog:\n  y:\n    warehouse: /y\n")
    out = run_cli(["follow", "db.log", "-e"])
    assert out.returncode == 2 and f"default-catalog 'x' of {path} is not one of its catalogs" in out.stderr.decode()
    with open(path, "w") as f:
        f.write("catalog:\n  y:\n    warehous: /y\n")
    out = run_cli(["follow", "db.log", "-e", "--catalog", "y"])
    assert out.returncode == 2 and "unknown catalog option 'warehous' in catalog y of" in out.stderr.decode()
    assert "did you mean warehouse?" in out.stderr.decode()


def test_register_keeps_the_other_catalogs_and_the_default(tmp_path, config_home):
    path = os.path.join(config_home, "paimon-tail", "catalogs.yaml")
    first = catalogs.register("demo", {"warehouse": "/w1"})
    assert first == catalogs.Registered(path, True)
    with open(path) as f:
        assert f.read() == "default-catalog: demo\ncatalog:\n  demo:\n    warehouse: /w1\n"
    named = catalogs.load()
    named.catalogs["prod"] = {"metastore": "rest", "uri": "http://x"}
    named.default = "prod"
    with open(path, "w") as f:
        f.write(named.text())
    again = catalogs.register("demo", {"warehouse": "/w2"})
    assert again == catalogs.Registered(path, False)
    assert catalogs.load() == catalogs.Catalogs(path, {"demo": {"warehouse": "/w2"},
                                                       "prod": {"metastore": "rest", "uri": "http://x"}}, "prod")


def test_completion_of_catalog_names_and_of_the_default_catalogs_tables(two):
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env.pop("PAIMON_WAREHOUSE", None)
    script = ('eval "$(_PAIMON_TAIL_COMPLETE=bash_source paimon-tail)"\n'
              "COMP_WORDS=(paimon-tail follow --catalog ''); COMP_CWORD=3; _paimon_tail_completion paimon-tail; "
              'echo "${COMPREPLY[@]}"\n'
              "COMPREPLY=(); COMP_WORDS=(paimon-tail describe d); COMP_CWORD=2; _paimon_tail_completion paimon-tail; "
              'echo "${COMPREPLY[@]}"\n'
              "COMPREPLY=(); COMP_WORDS=(paimon-tail follow --from ''); COMP_CWORD=3; "
              '_paimon_tail_completion paimon-tail; echo "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    names, tables, positions = r.stdout.splitlines()
    assert names == "a b" and tables == "db.log", r.stdout
    assert positions.split() == ["latest-full", "latest", "earliest", "snapshot:", "snapshot-full:", "timestamp:",
                                 "-1h", "compacted-full", "file-creation-time:", "creation-timestamp:", "tag:"], \
        positions


def test_tables_and_describe_with_the_default_catalog(two):
    listed = run_cli(["tables"])
    assert listed.returncode == 0, listed.stderr
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert row["table"] == "db.log" and row["latest"]["id"] == 1 and row["latest"]["total_records"] == 2
