"""Stand-in: where Paimon keeps a consumer's file, and which consumer ids it accepts.

Uses
    ``pypaimon.consumer.consumer_manager.ConsumerManager._validate_consumer_id``, ``._consumer_path``,
    ``._consumer_directory`` (private)

Why
    ``follow --consumer`` writes its position itself (atomically, after the output is flushed:
    ``stream/consumer.py``), where Paimon's readers and expiry look for it; pypaimon's ``ConsumerManager`` knows
    the path and the id rules but keeps them private (its public ``reset_consumer`` writes in place).

Delete when
    pypaimon's ``ConsumerManager`` makes these public (or writes consumer files atomically itself, so
    ``reset_consumer`` can be used as is).
"""
from __future__ import annotations


def validate_consumer_id(consumer_id: str) -> None:
    """Raises ``ValueError`` for an id Paimon does not accept."""
    from pypaimon.consumer.consumer_manager import ConsumerManager

    ConsumerManager._validate_consumer_id(consumer_id)


def consumer_path(manager, consumer_id: str) -> str:
    """The file of ``consumer_id`` under ``manager`` (a pypaimon ``ConsumerManager``)."""
    return manager._consumer_path(consumer_id)


def consumer_directory(manager) -> str:
    """The directory that holds ``manager``'s consumer files."""
    return str(manager._consumer_directory())


__all__ = ["consumer_directory", "consumer_path", "validate_consumer_id"]
