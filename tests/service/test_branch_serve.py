"""``serve`` and ``lookup`` on a branch, ``'db.t$branch_NAME'``: its own rows, its registration in the branch's
directory (the main table can be served beside it); a system table is refused."""
from __future__ import annotations

import json
import os

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, run_cli


def test_serve_and_lookup_a_branch(warehouse):
    warehouse.create("br", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    warehouse.write("br", [{"k": k, "v": f"main{k}", "op": "+I"} for k in range(10)])
    table = warehouse.table("br")
    table.create_tag("t", 1)
    table.branch_manager().create_branch("dev", "t")
    warehouse.write("br$branch_dev", [{"k": 3, "v": "dev3", "op": "+U"}, {"k": 42, "v": "dev42", "op": "+I"}])
    svc = ServeProcess(warehouse.path, ["db.br$branch_dev"], executors=1).wait_ready()
    try:
        out = run_cli("lookup", "db.br$branch_dev", "3", "42", "7", "--warehouse", warehouse.path)
        assert out.returncode == 0, out.stderr
        assert [json.loads(line)["v"] for line in out.stdout.splitlines()] == ["dev3", "dev42", "main7"]
        root = os.path.join(warehouse.path, "db.db", "br")
        assert os.path.exists(os.path.join(root, "branch", "branch-dev", "service", "service-paimon-tail-lookup"))
        assert not os.path.exists(os.path.join(root, "service", "service-paimon-tail-lookup"))
        main = run_cli("lookup", "db.br", "3", "--warehouse", warehouse.path, "--timeout", "2")
        assert main.returncode == 1 and "no" in main.stderr  # the main table is not served
    finally:
        assert svc.stop() == 0
    refused = run_cli("serve", "db.br$snapshots", "--warehouse", warehouse.path)
    assert refused.returncode == 2 and "is a system table" in refused.stderr
