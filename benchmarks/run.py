"""One entry point for every benchmark:

    python -m benchmarks all --size tiny        # every benchmark in seconds (CI)
    python -m benchmarks all --size full        # the documented full run (docs/performance.md)
    python -m benchmarks latency|catchup|stall|memory|objectstore|multi [--size tiny|full]
    python -m benchmarks catchup --size medium   # 2M rows / 40 commits: start-up's share of a mid-size catch-up
    python -m benchmarks startup [--size tiny|full]      # each command against its bare imports (ratios)
    python -m benchmarks cli-lookup [--size tiny|full]   # lookup --keys-from: JSON lines and Arrow through the CLI
    python -m benchmarks terminal [--size tiny|full]     # follow -e on a terminal (every row) against --nl
    python -m benchmarks ab --product PATH [--rounds 5]   # catch-up of this tree vs the source at PATH, alternating
    python -m benchmarks lookup|spark [-- extra args]   # colleagues' scripts (benchmarks/lookup.py, spark_bench.py)
    python -m benchmarks store [--size tiny|5m|20m]      # the query service at production size (benchmarks/store.py)
    python -m benchmarks concurrency [-- --clients 8]     # 8 concurrent clients: the service vs a grpc.aio echo
                                                          # (after `--`: the script's own options, for lookup|spark|store too)
    python -m benchmarks soak --minutes 30 [--size tiny]  # memory, threads, fds and disk of every process over a
                                                          # long run, with its correctness checks (benchmarks/soak.py)
    python -m benchmarks timestamps [--size tiny|medium] [--before PATH]   # JSON catch-up of a table with timestamps
    python -m benchmarks fullread [--size tiny|full] [--before PATH]       # latest-full of a 20M-row primary-key table

Figures are ratios to a baseline measured in the same run; results go to benchmarks/results/<name>-<size>-*.json
and a table is printed. Exits non-zero only when a benchmark fails to run (missing or wrong rows), not when a
target is missed, unless --strict.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `python benchmarks/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks import (catchup, cli_lookup, fullread, latency, memory, multi, objectstore, soak,  # noqa: E402
                        stall, startup, terminal, timestamps)
from benchmarks.common import ROOT, SIZES, machine, print_table, save  # noqa: E402

BENCHES = ("latency", "catchup", "stall", "memory", "objectstore", "multi")
# not in `all`: services or tables of their own
SEPARATE = ("startup", "cli-lookup", "terminal", "soak", "timestamps", "fullread")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=BENCHES + SEPARATE + ("all", "ab", "lookup", "spark", "store", "concurrency"))
    ap.add_argument("--rounds", type=int, default=5, help="ab: alternating runs of each side")
    ap.add_argument("--size", choices=tuple(SIZES) + ("5m", "20m"), default=None,
                    help="tiny (the default; soak: full rates unless tiny is given)")
    ap.add_argument("--minutes", type=float, default=30.0, help="soak: how long")
    ap.add_argument("--warmup", type=float, default=None, help="soak: minutes before slopes are measured "
                    "(default 5, a third of a run under 15 minutes)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--product", metavar="PATH", help="measure the paimon-tail source tree at PATH instead of the "
                    "installed one (e.g. `git worktree add /tmp/before <commit>` for a before/after table)")
    ap.add_argument("--before", metavar="PATH", help="timestamps, fullread: also run the source tree at PATH in the "
                    "same rounds (before/after in one run)")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]  # after `--`: passed to lookup, spark, store and concurrency as they are
    if args.product:
        os.environ["PAIMON_TAIL_BENCH_SRC"] = str(Path(args.product).resolve())
        sys.path.insert(0, os.environ["PAIMON_TAIL_BENCH_SRC"])
    if args.name == "concurrency":
        from benchmarks import concurrency

        return concurrency.main(["--size", args.size if args.size in concurrency.SIZES else "tiny", *args.extra])
    if args.name == "store":
        from benchmarks import store

        return store.main(["--size", args.size or "tiny", *args.extra])
    size = SIZES[args.size or ("full" if args.name == "soak" else "tiny")]

    if args.name in ("lookup", "spark"):
        script = ROOT / "benchmarks" / ("lookup.py" if args.name == "lookup" else "spark_bench.py")
        extra = list(args.extra)
        if args.name == "lookup" and not extra:
            extra = ["--size", args.size or "tiny"]
        if args.name == "spark" and size.name == "tiny" and not extra:
            extra = ["--rows", "20000", "--snapshots", "4"]
        return subprocess.call([sys.executable, str(script), *extra])

    if args.name == "ab":
        if not args.product:
            ap.error("ab needs --product PATH (the other source tree)")
        os.environ.pop("PAIMON_TAIL_BENCH_SRC", None)
        sys.path.remove(str(Path(args.product).resolve()))
    names = BENCHES if args.name == "all" else (args.name,)
    info = machine()
    import paimon_tail

    info["product"] = str(Path(paimon_tail.__file__).resolve().parent.parent)
    info["product_commit"] = subprocess.run(["git", "-C", info["product"], "rev-parse", "--short", "HEAD"],
                                            capture_output=True, text=True).stdout.strip() \
        if (Path(info["product"]) / ".git").exists() else Path(info["product"]).name
    log(f"product: {info['product']} @ {info['product_commit']}")
    log(f"machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']}, load {info['loadavg_start']:.2f}; "
        f"size {size.name}")
    all_rows, details = [], {}
    t0 = time.perf_counter()
    for name in names:
        log(f"[{name}]")
        if name == "soak":
            try:
                rows, det = soak.run(args.minutes, size.name == "tiny", log, args.warmup)
            except soak.CheckFailed as e:  # (its report is printed): a failed check fails the run
                log(f"soak FAILED: {e}")
                return 1
        elif name == "latency":
            rows, det = latency.run(size, log)
        elif name == "catchup":
            rows, det = catchup.run(size, log)
        elif name == "ab":
            rows, det = catchup.ab(size, log, str(Path(args.product).resolve()), args.rounds)
        elif name == "stall":
            rows, det = stall.run(size, log)
        elif name == "objectstore":
            rows, det = objectstore.run(size, log)
        elif name == "startup":
            rows, det = startup.run(size, log)
        elif name == "cli-lookup":
            rows, det = cli_lookup.run(size, log)
        elif name == "multi":
            rows, det = multi.run(size, log)
        elif name == "terminal":
            rows, det = terminal.run(size, log)
        elif name == "timestamps":
            rows, det = timestamps.run(size, log, before=str(Path(args.before).resolve()) if args.before else "")
        elif name == "fullread":
            rows, det = fullread.run(size, log, before=str(Path(args.before).resolve()) if args.before else "")
        else:
            naive = details.get("catchup", {}).get("naive pypaimon loop")
            rows, det = memory.run(size, log, naive=naive)
        all_rows += rows
        details[name] = det
    path = save(args.name + ("-" + info["product_commit"] if args.product else ""), size, all_rows, details, info)
    print()
    print(f"paimon-tail benchmarks, size {size.name}: {info['cpus']} CPUs, {info['memory']}, "
          f"load average {info['loadavg_start']:.1f}, {time.perf_counter() - t0:.0f}s")
    print_table(all_rows)
    print(f"results: {path.relative_to(ROOT)}")
    missed = [r for r in all_rows if r.ok is False]
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
