"""``paimon-tail serve``: scanners (one per table) turn snapshots into file changes, the registry knows the
executors that joined and which channels each serves, the servicer answers clients and streams executors their
work, launchers keep serve's own executors running. ``service.py`` (``QueryService``) puts it together."""
