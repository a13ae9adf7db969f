"""Lookups through a real `paimon-tail serve` match pypaimon's batch read."""
from __future__ import annotations

import json
import random

import pytest

from paimon_tail.catalog import catalog_config
from paimon_tail.errors import UsageError
from paimon_tail.service.client import LookupClient

from tests.service.conftest import PK_SCHEMA, PLAIN_SCHEMA, ServeProcess, run_cli

N = 3000


def _rows(ids, tag, op="+I"):
    return [{"id": i, "dt": f"2026-11-0{1 + i % 3}", "name": f"{tag}-{i}", "amount": i % 1000, "op": op} for i in ids]


@pytest.fixture(scope="module")
def served(warehouse):
    warehouse.create("orders", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], bucket=3)
    warehouse.create("plain", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    warehouse.write("orders", _rows(range(N), "v1"))
    warehouse.write("orders", _rows(range(0, N, 7), "v2", "+U"))
    warehouse.write("orders", _rows(range(3, N, 11), "gone", "-D"))
    warehouse.write("plain", [{"k": k, "v": f"p{k}", "op": "+I"} for k in range(500)])
    warehouse.write("plain", [{"k": k, "v": None, "op": "-D"} for k in range(0, 500, 5)])
    warehouse.create("pu", PLAIN_SCHEMA, primary_keys=["k"], bucket=2, merge_engine="partial-update")
    warehouse.write("pu", [{"k": k, "v": f"a{k}", "op": "+I"} for k in range(300)])
    svc = ServeProcess(warehouse.path, ["db.orders", "db.plain", "db.pu"]).wait_ready()
    yield svc
    assert svc.stop() == 0, svc.lines
    # A clean shutdown removes the registration.
    assert not any(p.name.startswith("service-") for p in
                   (__import__("pathlib").Path(warehouse.path) / "db.db" / "orders" / "service").glob("*"))


@pytest.fixture
def client(warehouse, served):
    c = LookupClient("db.orders", catalog_config(warehouse.path), timeout=20)
    yield c
    c.close_sync()


def test_lookups_match_batch_read(warehouse, client):
    oracle = warehouse.batch_read("orders")
    keys = [(i, f"2026-11-0{1 + i % 3}") for i in range(N + 200)]  # present, updated, deleted, never written
    keys += [(i, "2026-11-09") for i in range(50)]  # right id, wrong partition
    random.Random(7).shuffle(keys)
    result = client.lookup_sync([{"id": i, "dt": d} for i, d in keys])
    got = {(r["id"], r["dt"]): r for r in result.rows.to_pylist()}
    assert got == {k: oracle[k] for k in keys if k in oracle}
    assert sorted(result.missing) == sorted(i for i, k in enumerate(keys) if k not in oracle)
    assert set(result.snapshot_ids.values()) == {3}
    assert got[(7, "2026-11-02")]["name"] == "v2-7" and (3, "2026-11-01") not in got


def test_single_key_and_select(client):
    assert client.get_sync({"id": 1, "dt": "2026-11-02"}) == \
        {"id": 1, "dt": "2026-11-02", "name": "v1-1", "amount": 1, "op": "+I"}
    assert client.get_sync((3, "2026-11-01")) is None  # deleted
    r = client.lookup_sync([(1, "2026-11-02")], select=["name"])
    assert r.rows.to_pylist() == [{"name": "v1-1"}]


def test_commit_becomes_visible_with_min_snapshot(warehouse, client):
    sid = warehouse.write("orders", _rows([1, 5000], "v3", "+U"))
    r = client.lookup_sync([(1, "2026-11-02"), (5000, "2026-11-03")], min_snapshot=sid)
    assert [row["name"] for row in r.rows.to_pylist()] == ["v3-1", "v3-5000"]
    assert min(r.snapshot_ids.values()) >= sid


def test_second_table_in_same_service(warehouse, served):
    oracle = warehouse.batch_read("plain")
    with LookupClient("db.plain", catalog_config(warehouse.path)) as c:
        r = c.lookup_sync(list(range(-5, 505)))
        assert {row["k"]: row for row in r.rows.to_pylist()} == {k[0]: v for k, v in oracle.items()}


def test_bad_keys_are_usage_errors(client):
    with pytest.raises(UsageError, match="does not fit column id"):
        client.lookup_sync([{"id": "abc", "dt": "x"}])
    with pytest.raises(UsageError, match="lacks column dt"):
        client.lookup_sync([{"id": 1}])
    with pytest.raises(UsageError, match="out of range"):
        client.lookup_sync([{"id": 1 << 70, "dt": "x"}])
    with pytest.raises(UsageError, match="unknown column"):
        client.lookup_sync([(1, "2026-11-02")], select=["nope"])


def test_cli_lookup(warehouse, served):
    wh = ["--warehouse", warehouse.path]
    r = run_cli("lookup", "db.orders", "id=2,dt=2026-11-03", "dt=2026-11-01,id=0", *wh)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["id"] for row in rows] == [2, 0]

    # a key not found: by default the rows found, one line on stderr, exit 1 (like grep)
    r = run_cli("lookup", "db.orders", "id=2,dt=2026-11-03", "id=3,dt=2026-11-01", "id=99999,dt=2026-11-01",
                "--select", "id,name", *wh)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ['{"id":2,"name":"v1-2"}']
    assert r.stderr == "paimon-tail: 2 of 3 keys not found: id=3,dt=2026-11-01, id=99999,dt=2026-11-01 " \
                       "(--missing skip or null to exit 0)\n"
    # pipelines: --missing null keeps one line per key, --missing skip leaves them out; both exit 0, quietly
    r = run_cli("lookup", "db.orders", "id=2,dt=2026-11-03", "id=3,dt=2026-11-01", "--missing", "null",
                "--select", "id,name", *wh)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines() == ['{"id":2,"name":"v1-2"}', "null"]
    r = run_cli("lookup", "db.orders", "--keys-from", "-", "--missing", "skip", "--select", "id", *wh,
                input='{"id": 3, "dt": "2026-11-01"}\n{"id": 2, "dt": "2026-11-03"}\n')
    assert (r.returncode, r.stderr, r.stdout.splitlines()) == (0, "", ['{"id":2}'])

    keys = "\n".join(json.dumps({"id": i, "dt": f"2026-11-0{1 + i % 3}", "extra": "ignored"}) for i in (4, 8))
    r = run_cli("lookup", "db.orders", "--keys-from", "-", "--select", "id", *wh, input=keys)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ['{"id":4}', '{"id":8}']

    r = run_cli("lookup", "db.plain", "7", *wh)
    assert r.returncode == 0 and json.loads(r.stdout)["v"] == "p7"

    r = run_cli("lookup", "db.orders", "42", *wh)
    assert r.returncode == 2 and "primary key has 2 columns" in r.stderr
    r = run_cli("lookup", "db.plain", "x1", *wh)
    assert r.returncode == 2 and "does not fit column k (int)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_status(warehouse, served):
    r = run_cli("service", "status", "db.orders", "--json", "--warehouse", warehouse.path)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["executors"] == 2 and sorted(st["tables"]) == ["db.orders", "db.plain", "db.pu"]
    assert all(e["alive"] for e in st["executor"])
    assert sum(e["buckets"] for e in st["executor"]) == 9  # 3 partitions x 3 buckets
    assert sum(e["keys"] for e in st["executor"]) == len(warehouse.batch_read("orders"))
    # piped without --json: a JSON line per executor (was a rich table cut to 80 columns), no wider than its data
    r = run_cli("service", "status", "db.orders", "--warehouse", warehouse.path)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["index"] for row in rows] == [0, 1] and all(row["table"] == "db.orders" for row in rows)
    assert {"address_server", "latest_snapshot", "snapshot", "lag_snapshots", "lag_seconds", "buckets", "keys",
            "requests_per_second", "restarts", "alive"} <= set(rows[0])
    assert sum(row["keys"] for row in rows) == len(warehouse.batch_read("orders"))


def test_registration_file(warehouse, served):
    import pathlib

    d = pathlib.Path(warehouse.path) / "db.db" / "orders" / "service"
    files = [p.name for p in d.iterdir() if not p.name.startswith(".")]
    assert files == ["service-paimon-tail-lookup"]
    reg = json.loads((d / files[0]).read_text())
    assert reg["format"] == "paimon-tail-lookup/1" and reg["addresses"][0].startswith("127.0.0.1:")
    assert reg["lease_ms"] > 0 and reg["heartbeat_ms"] > 0 and reg["auth"] == "none"
    assert not (d / "service-primary-key-lookup").exists()


def test_partial_update_table_re_merges(warehouse, served):
    # partial-update: a null does not overwrite; the executor re-merges changed buckets with pypaimon's merge read
    sid = warehouse.write("pu", [{"k": k, "v": None if k % 2 else f"b{k}", "op": "+I"} for k in range(0, 300, 3)])
    oracle = warehouse.batch_read("pu")
    with LookupClient("db.pu", catalog_config(warehouse.path)) as c:
        r = c.lookup_sync(list(range(310)), min_snapshot=sid)
        assert {row["k"]: row for row in r.rows.to_pylist()} == {k[0]: v for k, v in oracle.items()}
        assert c.get_sync(6)["v"] == "b6" and c.get_sync(4)["v"] == "a4"


def test_cli_single_key_lookup_loads_no_pyarrow(warehouse, served):
    """`lookup DB.T KEY` answers without pyarrow, numpy or pypaimon (service/client/few_keys.py), the same bytes as the
    full client; and a command line the quick path cannot take still answers, through LookupClient."""
    from tests.cli.test_startup import loaded_modules

    wh = ["--warehouse", warehouse.path]
    code, stdout, modules = loaded_modules("lookup", "db.orders", "id=7,dt=2026-11-02", "id=3,dt=2026-11-01",
                                           "--missing", "null", *wh)
    assert code == 0 and stdout.splitlines()[1] == "null"  # --missing null: a placeholder line, exit 0
    heavy = sorted(m for m in modules if m.split(".")[0] in ("pyarrow", "numpy", "pypaimon", "pandas", "polars"))
    assert not heavy, heavy
    full = run_cli("lookup", "db.orders", "id=7,dt=2026-11-02", "id=3,dt=2026-11-01", "--missing", "null",
                   "--min-snapshot", "1", *wh)  # --min-snapshot: the full client
    assert full.returncode == 0 and full.stdout == stdout
    quick = run_cli("lookup", "db.orders", "id=7,dt=2026-11-02", "id=3,dt=2026-11-01", *wh)  # --missing error
    assert quick.returncode == 1 and "1 of 2 keys not found: id=3,dt=2026-11-01" in quick.stderr
    code, csv_out, modules = loaded_modules("lookup", "db.orders", "id=7,dt=2026-11-02", "-f", "csv", *wh)
    assert code == 0 and "pyarrow" in modules and csv_out.splitlines()[1].startswith("7,2026-11-02,v2-7")


def test_lookup_keys_takes_the_quick_path_or_the_client_and_renders_alike(warehouse, served):
    """The library decides the path (service/client/few_keys.py: lookup_keys), and one LookupRows renders either
    answer to the same bytes (JSON lines and the terminal table, --missing null's placeholders included)."""
    import io

    from paimon_tail.cli.missing import MissingKeys
    from paimon_tail.output.command_output import Output
    from paimon_tail.output.lookup_rows import LookupRows
    from paimon_tail.service.client.lookup_result import LookupResult
    from paimon_tail.service.client.few_keys import FewRows, lookup_keys
    from paimon_tail.service.protocol.security import Security

    catalog, security = catalog_config(warehouse.path), Security.from_options()
    texts = ["id=7,dt=2026-11-02", "id=3,dt=2026-11-01", "id=14,dt=2026-11-03", "id=8,dt=2026-11-03"]
    few = lookup_keys("db.orders", texts, catalog, security=security)
    assert isinstance(few, FewRows) and (few.found, few.missing) == ([0, 3], [1, 2])
    full = lookup_keys("db.orders", texts, catalog, security=security, min_snapshot=1)  # the client's to answer
    also = lookup_keys("db.orders", texts, catalog, security=security, values=False)  # e.g. -f csv
    for result in (full, also):
        assert isinstance(result, LookupResult) and (result.found, result.missing) == ([0, 3], [1, 2])
        assert result.rows.to_pylist() == [dict(zip([n for n, _ in few.columns], row)) for row in few.rows]
    assert few.rows[0][:3] == [7, "2026-11-02", "v2-7"]

    def rendered(fmt: str, answer) -> str:
        sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
        rows = LookupRows(Output(fmt, sink), MissingKeys("null"))
        if isinstance(answer, FewRows):
            rows.write_values(answer)
        else:
            rows.write(answer)
        rows.close()
        sink.flush()
        return sink.buffer.getvalue().decode()

    for fmt in ("jsonl", "table"):
        assert rendered(fmt, few) == rendered(fmt, full), fmt
    assert rendered("jsonl", few).splitlines()[1:3] == ["null", "null"]
    table = rendered("table", few)
    assert "v2-7" in table and "2026-11-01" in table  # a key not found shows its key columns


def test_cli_keys_from_jsonl_and_arrow(warehouse, served):
    """--keys-from: JSON lines (objects, scalars mixed in, blank lines), Arrow IPC streams, composite keys, missing
    keys; the output equals the keys given one by one; a malformed line is one error naming it."""
    import io

    import pyarrow as pa

    wh = ["--warehouse", warehouse.path]
    keys = [{"id": i, "dt": f"2026-11-0{1 + i % 3}"} for i in (5, 3, 2999, 4000, 14)]  # 3, 14 deleted; 4000 absent
    args = [f"id={k['id']},dt={k['dt']}" for k in keys]
    one_by_one = run_cli("lookup", "db.orders", *args, "--missing", "null", "-f", "jsonl", "--min-snapshot", "1", *wh)
    assert one_by_one.returncode == 0 and one_by_one.stdout.count("null") == 3
    lines = "\n".join(json.dumps(dict(k, note="extra fields are ignored")) for k in keys) + "\n\n"
    r = run_cli("lookup", "db.orders", "--keys-from", "-", "--missing", "null", *wh, input=lines)
    assert (r.returncode, r.stdout) == (0, one_by_one.stdout), r.stderr
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, pa.schema([("dt", pa.string()), ("id", pa.int64())])) as w:
        w.write_table(pa.Table.from_pylist(keys, schema=pa.schema([("dt", pa.string()), ("id", pa.int64())])))
    r = subprocess_run_bytes(["lookup", "db.orders", "--keys-from", "-", "--missing", "null", *wh], sink.getvalue())
    assert (r.returncode, r.stdout.decode()) == (0, one_by_one.stdout), r.stderr
    r = subprocess_run_bytes(["lookup", "db.orders", "--keys-from", "-", "-f", "arrow", *wh], sink.getvalue())
    assert r.returncode == 1 and b"3 of 5 keys not found: " in r.stderr  # --missing error, over every chunk
    table = pa.ipc.open_stream(r.stdout).read_all()
    assert table.column("id").to_pylist() == [5, 2999]
    # one-column keys as bare JSON scalars, numbers as strings, both in one input
    r = run_cli("lookup", "db.plain", "--keys-from", "-", "--select", "k", *wh, input='7\n{"k": "8"}\n"9"\n')
    assert (r.returncode, r.stdout) == (0, '{"k":7}\n{"k":8}\n{"k":9}\n'), r.stderr
    for bad, message in (('{"k": 1}\n{"k": 2\n', "stdin line 2 is not JSON"),
                         ('{"k": 1}\n{"k": 1} {"k": 2}\n', "stdin line 2 is not JSON"),
                         ('{"k": 1}\n{"k": null}\n', "key at stdin line 2: column k is null"),
                         ('{"k": 1}\n\n{"x": 1}\n', "key at stdin line 3 lacks column k"),
                         ('{"k": "x"}\n', "key at stdin line 1: 'x' does not fit column k (int)"),
                         ('[1, 2]\n', "stdin line 1: expected a JSON object")):
        r = run_cli("lookup", "db.plain", "--keys-from", "-", *wh, input=bad)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)


def subprocess_run_bytes(args, data: bytes):
    import os
    import subprocess

    from tests.service.conftest import cli_cmd

    env = dict(os.environ)
    env.pop("PAIMON_TAIL_TOKEN", None)
    return subprocess.run(cli_cmd(*args), input=data, capture_output=True, env=env, timeout=60)


def test_lookup_batches_keeps_order_and_raises_in_place(warehouse, served):
    """Several key tables in flight: results come back in input order; a source error after two tables arrives
    after their results; JSON chunks parsed 64 bytes at a time name the right line."""
    import asyncio
    import io

    import pyarrow as pa

    from paimon_tail.catalog import catalog_config

    client = LookupClient("db.plain", catalog_config(warehouse.path), timeout=20)
    tables = [pa.table({"k": pa.array(range(s, s + 37), pa.int32())}) for s in range(0, 370, 37)]

    def source():
        yield from tables[:2]
        raise UsageError("bad keys at the third table")

    async def collect(batches):
        got = []
        try:
            async for r in client.lookup_batches(batches, in_flight=3):
                got.append(r)
        except UsageError as e:
            got.append(e)
        return got

    try:
        results = asyncio.run(collect(iter(tables)))
        assert [r.key_table.column("k").to_pylist() for r in results] == [t.column("k").to_pylist() for t in tables]
        assert [row["k"] for r in results for row in r.rows.to_pylist()] == [k for k in range(370) if k % 5]
        results = asyncio.run(collect(source()))
        assert len(results) == 3 and isinstance(results[2], UsageError)
    finally:
        client.close_sync()
    lines = "".join(f'{{"k": {k}}}\n' for k in range(40)) + '{"k": 40\n'
    chunks = client.parser.json_batches(io.BytesIO(lines.encode()), "keys.jsonl", chunk_bytes=64)
    with pytest.raises(UsageError, match="keys.jsonl line 41 is not JSON"):
        for chunk in chunks:
            pass
    keys = pa.concat_tables(list(client.parser.json_batches(io.BytesIO(lines[:-10].encode()), chunk_bytes=64)))
    assert keys.column("k").to_pylist() == list(range(40))
