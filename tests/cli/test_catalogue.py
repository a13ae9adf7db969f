"""docs/errors.md stays true: its `catalogue` rows are run as written (exit code, message, one line, no
traceback) and every other row names a test that exists."""
from __future__ import annotations

import os
import re
import shlex

import pytest

from tests.conftest import append_rows, run_cli
from tests import REPO


def test_one_row_as_a_real_process(env):
    out = run_cli(["lookup", "db.kv", "abc", "-w", env["$WH"]])
    assert out.returncode == 2 and out.stderr.decode().count("\n") == 1

ROOT = str(REPO)
DOC = os.path.join(ROOT, "docs", "errors.md")


def _rows():
    rows = []
    for line in open(DOC, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[0].isdigit():
            continue
        rows.append(cells)
    return rows


ROWS = _rows()
RUN = [r for r in ROWS if r[-1] == "catalogue"]


def test_catalogue_is_complete():
    numbers = [int(r[0]) for r in ROWS]
    assert numbers == list(range(1, len(numbers) + 1)), "rows are numbered 1..N without gaps"
    assert len(ROWS) >= 40
    for r in ROWS:
        test = r[-1]
        if test == "catalogue":
            continue
        path, _, name = test.partition("::")
        source = open(os.path.join(ROOT, path), encoding="utf-8").read()
        assert re.search(rf"^def {re.escape(name)}\(", source, re.M), f"row {r[0]}: {test} does not exist"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from tests.service.test_service_faults import PLAIN_SCHEMA, Warehouse

    d = tmp_path_factory.mktemp("catalogue")
    wh = Warehouse(str(d / "wh"))
    from pypaimon import Schema
    from tests.conftest import APPEND

    wh.catalog.create_table("db.log", Schema.from_pyarrow_schema(APPEND, options={"bucket": "-1"}), False)
    t = wh.table("log")
    import pyarrow as pa
    for c in range(5):
        wb = t.new_batch_write_builder()
        w, cm = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(append_rows(c, 2), schema=APPEND))
        cm.commit(w.prepare_commit())
        w.close()
        cm.close()
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    wh.write("kv", [{"k": 1, "v": "a", "op": "+I"}])
    (d / "bad.yaml").write_text("warehouse: [unclosed\n")
    (d / "empty").write_text("")
    (d / "list.yaml").write_text("- a\n")
    (d / "bad.jsonl").write_text("{not json\n")
    (d / "typo.yaml").write_text(f"warehous: {wh.path}\n")
    (d / "latin1.jsonl").write_bytes(b'{"k": 1}\n{"k": "\xe9"}\n')
    return {"$WH": wh.path, "$D": str(d)}


def _subst(text: str, env: dict) -> str:
    for k, v in env.items():
        text = text.replace(k, v)
    return text


@pytest.mark.parametrize("row", RUN, ids=[f"{r[0]}-{r[1]}" for r in RUN])
def test_catalogue_row(env, row, capfd, monkeypatch):
    """In-process through the CLI's one error boundary (what `main()` runs), so 50 rows take seconds; the same
    inputs as real processes: tests/cli/test_cli.py::test_bad_input_is_one_line and the row tests named above."""
    from paimon_tail.cli import cli, debug_enabled_any
    from paimon_tail.cli.common import error_boundary

    number, _, command, message, code = row[:5]
    args = shlex.split(_subst(command.strip("`"), env))
    monkeypatch.delenv("PAIMON_WAREHOUSE", raising=False)
    monkeypatch.delenv("PAIMON_TAIL_TOKEN", raising=False)
    returned = error_boundary(lambda: cli.main(args, prog_name="paimon-tail", standalone_mode=False), debug_enabled_any)
    err = capfd.readouterr().err
    assert returned == int(code), f"row {number}: {err}"
    assert _subst(message, env) in err, f"row {number}: {err}"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, f"row {number}: {err}"
