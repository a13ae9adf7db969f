"""``paimon-tail serve``: scanners (one per table) turn snapshots into file changes, the registry knows the
executors that joined (``members.py``) and which channels each serves, the address servicer answers clients and
streams executors their work, launchers keep serve's own executors running (started through
``protocol/executor_spec.py``, never this package's neighbour ``executor/``). ``query_service.py``
(``QueryService``) puts it together, from ``serve_options.py``."""
