"""Stand-in: write builders that commit as a given commit user.

Uses
    ``pypaimon.write.write_builder.WriteBuilder._with_commit_user`` (private)

Why
    Spark's writes commit from the driver what the tasks wrote, and a streaming sink finds the last micro-batch it
    committed by its commit user (Paimon's exactly-once: ``commitUser`` + ``commitIdentifier`` in each snapshot).
    pypaimon's builders draw a random commit user and set another one only through a private method (its own
    ``TableUpdate`` calls it so).

Delete when
    pypaimon's ``new_batch_write_builder`` / ``new_stream_write_builder`` (or the builders) take a commit user
    publicly, as Paimon Java's ``BatchWriteBuilder.withCommitUser`` does.
"""
from __future__ import annotations


def batch_write_builder(table, commit_user: str):
    """``table.new_batch_write_builder()`` committing as ``commit_user``."""
    return table.new_batch_write_builder()._with_commit_user(commit_user)


def stream_write_builder(table, commit_user: str):
    """``table.new_stream_write_builder()`` committing as ``commit_user``."""
    return table.new_stream_write_builder()._with_commit_user(commit_user)


__all__ = ["batch_write_builder", "stream_write_builder"]
