"""The soak's writer, a process of its own: the demo's writer (paimon_tail.demo.DemoWriter) stepped every
``--interval`` seconds until SIGTERM, printing ``round N`` after each round.

A script, not a module of this package: run by path, it imports ``paimon_tail`` from the product under test
(``--product``'s tree comes first on PYTHONPATH and may have a ``benchmarks`` package of its own)."""
import argparse
import signal
import sys
import threading


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="soak_writer.py")
    ap.add_argument("warehouse")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--compact-every", type=int, default=60)
    ap.add_argument("--retain", type=int, default=300)
    args = ap.parse_args(argv)
    from paimon_tail.compat import patches
    from paimon_tail.demo import DemoWriter

    patches.install()  # as in `paimon-tail demo`, whose followers install the shims in the writer's process
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    writer = DemoWriter(args.warehouse, interval=args.interval, seed=23, compact_every=args.compact_every,
                        retain=args.retain)
    print("ready", flush=True)
    while not stop.is_set():
        writer.step()
        print(f"round {writer.commits}", flush=True)
        stop.wait(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
