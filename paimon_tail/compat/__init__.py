"""What pypaimon 2.1 lacks, by kind; each module says what it does for us, why, and when it can be deleted.

``patches/``
    Monkeypatches of pypaimon (and one of pathlib), installed only by :mod:`paimon_tail.compat.patches`:
    ``patches.install()`` before a table is opened, ``patches.install_long_running()`` at the start of a
    process that runs for days. Each has a test that fails without it.
``adapters/``
    Calls into pypaimon's private API (or parts it does not mean to be used so) on our behalf, without patching
    anything: each is the one place that makes its calls, so a pypaimon upgrade that renames one fails its test
    (``tests/compat/test_compat_private.py``, ``tests/stream/test_stream_parts.py``), not a command.

``docs/compatibility.md`` lists them all. A table's schema read without pypaimon's catalog is a core type, not a
gap: ``paimon_tail/table_meta.py``.
"""
