"""A lookup client host: looks up the same keys again and again until stdin closes, one JSON line per lookup.

    python tests/lookup_loop.py DB.TABLE KEYS_JSON --timeout S  (catalog options, TLS and token from the
    environment: PAIMON_TAIL_LOOP_OPTIONS (JSON), PAIMON_TAIL_LOOP_TLS_CA, PAIMON_TAIL_TOKEN)

Each line: ``{"start", "end", "rows": {pos: row}, "snapshots": {pos: snapshot}, "missing": [...], "failed": {...}}``
or ``{"start", "end", "error": "..."}`` (wall-clock seconds, the same clock as the test's on this machine).
"""
from __future__ import annotations

import json
import os
import select
import sys
import time


def main() -> int:
    from paimon_tail.catalog import catalog_config
    from paimon_tail.errors import PaimonTailError
    from paimon_tail.service.client import LookupClient
    from paimon_tail.service.protocol.security import Security

    table, keys = sys.argv[1], json.loads(sys.argv[2])
    timeout = float(sys.argv[sys.argv.index("--timeout") + 1]) if "--timeout" in sys.argv else 3.0
    options = json.loads(os.environ["PAIMON_TAIL_LOOP_OPTIONS"])
    tls = json.loads(os.environ.get("PAIMON_TAIL_LOOP_TLS", "{}"))
    security = Security.from_options(tls_ca=tls.get("ca"), tls_cert=tls.get("cert"), tls_key=tls.get("key"))
    client = LookupClient(table, catalog_config(options=options), security=security, timeout=timeout,
                          call_timeout=0.5)
    keys = [tuple(k) for k in keys]
    while not select.select([sys.stdin], [], [], 0)[0]:
        start = time.time()
        try:
            r = client.lookup_sync(keys)
        except PaimonTailError as e:
            line = {"start": start, "end": time.time(), "error": str(e)}
        else:
            line = {"start": start, "end": time.time(), "missing": r.missing, "failed": r.failed,
                    "rows": dict(zip(r.found, r.rows.to_pylist())),
                    "snapshots": {pos: r.snapshot_of(pos) for pos in range(len(keys))}}
        sys.stdout.write(json.dumps(line, default=str) + "\n")
        sys.stdout.flush()
        time.sleep(0.05)
    client.close_sync()
    return 0


if __name__ == "__main__":
    sys.exit(main())
