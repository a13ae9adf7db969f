"""Where pypaimon's ``ConsumerManager`` keeps consumer positions, and which ids it accepts (``stream/consumer.py``).

Uses (pypaimon private API)
    ``pypaimon.consumer.consumer_manager.ConsumerManager._validate_consumer_id``, ``._consumer_path`` and
    ``._consumer_directory``.

Why
    Positions are written by ``stream/consumer.py`` through ``atomic_file.write_text_atomic`` (pypaimon overwrites
    in place: a crash mid-write would leave a torn file), into the very files pypaimon (and Flink, Spark) read: so
    the file's path and the rule for ids must be pypaimon's own, not a copy that could drift.

Delete when
    pypaimon's ``ConsumerManager`` writes positions atomically, or makes the consumer path and id check public.
"""
from __future__ import annotations


def validate_consumer_id(consumer_id: str) -> None:
    """``ValueError`` when pypaimon refuses ``consumer_id``."""
    from pypaimon.consumer.consumer_manager import ConsumerManager

    ConsumerManager._validate_consumer_id(consumer_id)


def consumer_path(manager, consumer_id: str) -> str:
    """The file of ``consumer_id`` (``<table>/consumer/consumer-<id>``)."""
    return manager._consumer_path(consumer_id)


def consumer_directory(manager) -> str:
    return str(manager._consumer_directory())


__all__ = ["consumer_directory", "consumer_path", "validate_consumer_id"]
