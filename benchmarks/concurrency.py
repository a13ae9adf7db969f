"""Throughput under concurrency: many clients calling one key each against the query service, beside a grpc.aio
echo server with the same clients and the same number of server processes (the transport's ceiling in Python).

    python -m benchmarks concurrency [--size tiny|small|full] [--clients 8] [--client-procs 2] [--seconds 5]

The service: ``serve --executors 2`` (two executor processes; the table's 4 buckets over them) on a local
warehouse. The echo: two uvloop grpc.aio server processes answering a unary call with its 100-byte request;
each echo client spreads its calls over both, as the service's clients spread keys over the executors. Clients:
``--client-procs`` processes of ``clients / client-procs`` threads each, every thread calling in a loop for
``--seconds`` (``LookupClient.get_sync`` of a random key, or one blocking echo call). Rounds alternate echo and
service so both see the same moments of a shared machine. Prints lookups/s, p50 and p99 of each and the ratios
(targets: service >= 0.7x the echo's throughput, p99 <= 2x the echo's), with the load average.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.common import cpu_seconds  # noqa: E402

SIZES = {"tiny": 20_000, "small": 200_000, "full": 1_000_000}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pct(values: List[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * q))] if v else float("nan")


# -- servers ------------------------------------------------------------------------------------------------
def _echo_server(q) -> None:
    import grpc
    import uvloop

    from paimon_tail.service.protocol.security import server_options

    async def handler(req, ctx):
        return req

    async def main():
        server = grpc.aio.server(options=server_options(64 << 20))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {
            "Echo": grpc.unary_unary_rpc_method_handler(handler, lambda b: b, lambda b: b)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        q.put(port)
        await server.wait_for_termination()

    uvloop.run(main())


def _make_table(wh: str, n: int) -> None:
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={"bucket": "4"}),
                         False)
    table = catalog.get_table("db.t")
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    for start in range(0, n, 500_000):
        ids = list(range(start, min(n, start + 500_000)))
        w.write_arrow(pa.table({"id": ids, "name": [f"name-{i}" for i in ids], "amount": [i * 0.5 for i in ids]},
                               schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


# -- clients ------------------------------------------------------------------------------------------------
def _client_proc(kind: str, target, threads: int, seconds: float, n: int, q, share: bool = True) -> None:
    """One client process: ``threads`` threads calling in a loop; puts its latencies (seconds), errors, CPU seconds
    of the measured part and calls shared by several keys on ``q``."""
    import grpc

    lat: List[float] = []
    errors = [0]
    lock = threading.Lock()
    start = threading.Barrier(threads, action=lambda: cpu.append(time.process_time()))
    cpu: List[float] = []
    client = None
    if kind == "echo":
        channels = [grpc.insecure_channel(f"127.0.0.1:{p}") for p in target]
        calls = [ch.unary_unary("/bench.Echo/Echo", request_serializer=lambda b: b, response_deserializer=lambda b: b)
                 for ch in channels]
        payload = b"x" * 100

        def one(rng):
            calls[rng.randrange(len(calls))](payload)
    else:
        from paimon_tail.catalog import catalog_config
        from paimon_tail.service.client import LookupClient

        client = LookupClient("db.t", catalog_config(target), timeout=10, share_calls=share)
        client.get_sync(0)

        def one(rng):
            if client.get_sync(rng.randrange(n)) is None:
                raise AssertionError("a key that exists was not found")

    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(50):  # warm-up
            one(rng)
        mine: List[float] = []
        start.wait()
        end = time.monotonic() + seconds
        while True:
            t = time.perf_counter()
            if t > end + (time.perf_counter() - time.monotonic()):
                break
            try:
                one(rng)
            except Exception:  # noqa: BLE001 - counted, shown
                errors[0] += 1
                continue
            mine.append(time.perf_counter() - t)
            if time.monotonic() > end:
                break
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=run, args=(os.getpid() * 100 + i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    cpu.append(time.process_time())
    shared = client.coalesced[0] if client is not None else 0
    q.put((lat, errors[0], cpu[-1] - cpu[0], shared))


def drive(kind: str, target, clients: int, procs: int, seconds: float, n: int, servers: List[int],
          share: bool = True) -> Dict[str, float]:
    """One round: latencies, throughput, and CPU per call of the clients (their measured part) and of the server
    processes ``servers`` (their /proc times over the round, warm-up included: a slight overestimate)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    per = max(1, clients // procs)
    ps = [ctx.Process(target=_client_proc, args=(kind, target, per, seconds, n, q, share)) for _ in range(procs)]
    for p in ps:
        p.start()
    s0 = sum(cpu_seconds(p) for p in servers)
    lat: List[float] = []
    errors = 0
    client_cpu = 0.0
    shared = 0
    for _ in ps:
        got, err, cpu, sh = q.get(timeout=seconds + 120)
        lat += got
        errors += err
        client_cpu += cpu
        shared += sh
    server_cpu = sum(cpu_seconds(p) for p in servers) - s0
    for p in ps:
        p.join(30)
    calls = max(1, len(lat))
    return {"per_s": len(lat) / seconds, "p50_ms": pct(lat, 0.5) * 1000, "p99_ms": pct(lat, 0.99) * 1000,
            "errors": errors, "calls": len(lat), "client_us": client_cpu / calls * 1e6,
            "server_us": server_cpu / calls * 1e6, "shared_calls": shared}


def run(size: str = "tiny", clients: int = 8, procs: int = 2, seconds: float = 5.0, rounds: int = 2,
        unshared: bool = False) -> dict:
    n = SIZES[size]
    tmp = tempfile.mkdtemp(prefix="paimon-tail-bench-conc-")
    wh = os.path.join(tmp, "wh")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    echoes = [ctx.Process(target=_echo_server, args=(q,), daemon=True) for _ in range(2)]
    serve = None
    try:
        log(f"table: {n} rows, 4 buckets")
        _make_table(wh, n)
        for p in echoes:
            p.start()
        ports = [q.get(timeout=60) for _ in echoes]
        env = {k: v for k, v in os.environ.items() if k not in ("PAIMON_TAIL_TOKEN", "PAIMON_WAREHOUSE")}
        serve = subprocess.Popen([sys.executable, "-m", "paimon_tail", "serve", "db.t", "-w", wh, "--executors",
                                  "2"], stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        for line in serve.stderr:
            if "ready in" in line:
                break
        else:
            raise RuntimeError("serve did not become ready")
        threading.Thread(target=lambda: [None for _ in serve.stderr], daemon=True).start()
        executors = _children(serve.pid)
        kinds = [("echo", ports, [p.pid for p in echoes], True), ("service", wh, executors, True)]
        if unshared:  # the service with every get_sync on a call of its own (LookupClient(share_calls=False))
            kinds.append(("unshared", wh, executors, False))
        results: Dict[str, List[dict]] = {k[0]: [] for k in kinds}
        for r in range(rounds):
            for kind, target, servers, share in kinds:
                got = drive("echo" if kind == "echo" else "service", target, clients, procs, seconds, n, servers,
                            share)
                results[kind].append(got)
                log(f"round {r + 1} {kind:8s}: {got['per_s']:8.0f}/s  p50 {got['p50_ms']:.2f} ms  "
                    f"p99 {got['p99_ms']:.2f} ms  CPU per call: clients {got['client_us']:.0f} us, servers "
                    f"{got['server_us']:.0f} us; shared calls {got['shared_calls']}; errors {got['errors']}; "
                    f"load {os.getloadavg()[0]:.1f}")

        def best(kind: str, key: str, fn=max) -> float:
            return fn(x[key] for x in results[kind])

        def median(values: List[float]) -> float:
            v = sorted(values)
            return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2

        out = {
            "size": size, "rows": n, "clients": clients, "client_processes": procs, "server_processes": 2,
            "seconds": seconds, "rounds": rounds, "load_average": round(os.getloadavg()[0], 2),
            "errors": sum(x["errors"] for v in results.values() for x in v), "rounds_detail": results,
        }
        for kind in results:
            out[f"{kind}_per_s"] = round(best(kind, "per_s"))
            out[f"{kind}_p50_ms"] = round(best(kind, "p50_ms", min), 3)
            out[f"{kind}_p99_ms"] = round(best(kind, "p99_ms", min), 3)
            out[f"{kind}_cpu_us"] = round(median([x["client_us"] + x["server_us"] for x in results[kind]]))
            if kind != "echo":  # the same round's echo: the machine's moment
                out[f"{kind}_round_ratios"] = [round(x["per_s"] / e["per_s"], 2)
                                               for x, e in zip(results[kind], results["echo"])]
                out[f"{kind}_round_p99_ratios"] = [round(x["p99_ms"] / e["p99_ms"], 2)
                                                   for x, e in zip(results[kind], results["echo"])]
        out["throughput_ratio"] = round(out["service_per_s"] / out["echo_per_s"], 2)
        out["p99_ratio"] = round(out["service_p99_ms"] / out["echo_p99_ms"], 2)
        return out
    finally:
        if serve is not None:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(serve.pid, signal.SIGKILL)
        for p in echoes:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def _children(pid: int) -> List[int]:
    """serve's executor processes (multiprocessing spawn children)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    pids = []
    for p in out:
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    pids.append(int(p))
        except OSError:
            pass
    return pids


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=tuple(SIZES), default="tiny")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--client-procs", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--unshared", action="store_true",
                    help="also run the service with LookupClient(share_calls=False) in every round")
    args = ap.parse_args(argv)
    out = run(args.size, args.clients, args.client_procs, args.seconds, args.rounds, args.unshared)
    kinds = [k for k in ("service", "unshared") if f"{k}_per_s" in out]
    print(f"\n{'':30s}{'echo':>10s}" + "".join(f"{k:>10s}{'ratio':>7s}" for k in kinds) + "  target")
    for label, key, fmt, target in (("lookups/s (best round)", "per_s", "{:>10d}", ">= 0.70"),
                                    ("p50 ms (best round)", "p50_ms", "{:>10.2f}", ""),
                                    ("p99 ms (best round)", "p99_ms", "{:>10.2f}", "<= 2.00"),
                                    ("CPU us per call (median)", "cpu_us", "{:>10d}", "")):
        line = f"{label:30s}" + fmt.format(out[f"echo_{key}"])
        for k in kinds:
            line += fmt.format(out[f"{k}_{key}"]) + f"{out[f'{k}_{key}'] / out[f'echo_{key}']:>7.2f}"
        print(line + f"  {target}")
    for k in kinds:
        print(f"{k}: per-round ratios to the same round's echo: lookups/s {out[f'{k}_round_ratios']}, "
              f"p99 {out[f'{k}_round_p99_ratios']}")
    print(f"{out['clients']} clients in {out['client_processes']} processes, 2 server processes, {out['rows']} rows; "
          f"load average {out['load_average']}; errors {out['errors']}")
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    path = results / f"concurrency-{args.size}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=1))
    return 1 if out["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
