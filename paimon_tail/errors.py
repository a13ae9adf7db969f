"""Errors a user can act on.

Every failure that should reach a person as one line on stderr is a ``PaimonTailError``; the CLI's single
error boundary (``paimon_tail.cli.errors``) turns it into that line and its exit code. Anything else is a bug
and is reported as one (with the traceback under ``--debug``).
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME = 1  # runtime failure, or (lookup) a key was not found
EXIT_USAGE = 2  # bad arguments, bad key, bad filter, bad start position
EXIT_INTERRUPTED = 130  # Ctrl-C / SIGINT, like a shell


class PaimonTailError(Exception):
    """An error with a one-line message meant for a person."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(PaimonTailError):
    """The user asked for something malformed: fix the command line."""

    exit_code = EXIT_USAGE


class TableNotFound(PaimonTailError):
    """The database or table does not exist in the catalog."""


class WarehouseError(PaimonTailError):
    """The warehouse or catalog could not be opened."""


class SnapshotExpired(PaimonTailError):
    """A snapshot we need is gone: expired by the writer, or never existed."""


class SnapshotGap(SnapshotExpired):
    """Snapshots expired while we were following: rows would be lost silently."""

    def __init__(self, first_missing: int, next_available: int) -> None:
        super().__init__(
            f"snapshots {first_missing}..{next_available - 1} expired before they were read",
            hint="rows in them are lost to this follower; rerun with --on-gap skip to continue from "
            f"snapshot {next_available}, or --from earliest",
        )
        self.first_missing = first_missing
        self.next_available = next_available


class TableChanged(PaimonTailError):
    """The followed table was dropped or replaced under us."""


class ServiceError(PaimonTailError):
    """The query service is missing, unreachable or answered with an error."""


class OutputClosed(Exception):
    """The reader of our output went away (``| head``): stop quietly. Not an OSError, so click leaves it alone."""
