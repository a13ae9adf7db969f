"""Adapters over pypaimon's private API: we call its private methods and attributes (or its log lines, its
option for the Rust reader) through these modules, and patch nothing.

Import the module you need (``from paimon_tail.compat.adapters.kv_files import KeyValueFiles``): each imports
only what it uses, and some are on paths that must not load pypaimon's read path (``local_snapshots`` for
``follow -e``'s quick exit).
"""
