"""The query service (docs/query-service.md), one package per side:

* ``keys/`` — where a key lives, as every side computes it: Paimon's bucket hash, the key's channel, key parsing;
* ``protocol/`` — what crosses a socket: ``lookup.proto``, the typed change records, the registration file,
  Arrow IPC helpers, TLS and token; and where the two sides meet outside one: an executor's spec and entry point,
  its allocator options, whose directory is whose in ``--local-dir``;
* ``coordinator/`` — ``serve``: the scanners, the address server, the channel assignment, executor supervision;
* ``executor/`` — an executor: the join loop, local file copies, bucket stores, the ``Lookup`` servicer;
* ``metrics.py`` — what both sides' Prometheus metrics share (names, labels, buckets); each side exports its own;
* ``client/`` — ``LookupClient`` (one sans-IO core, an async and a sync transport) and the command line's few
  keys without pyarrow (``few_keys.py``, through the same core).

``coordinator/`` and ``executor/`` never import each other: they meet only in ``protocol/``.
"""
