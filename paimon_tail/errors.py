"""Errors a user can act on, and the taxonomy that turns what libraries raise into them.

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


class SnapshotMissing(SnapshotGap):
    """A snapshot file is gone from the middle of the table's history (a later one is there): not expiration, which
    removes the oldest first, but a deletion or a copy that missed it. Rows in it would be lost silently."""

    def __init__(self, missing: int, next_available: int, path: str) -> None:
        PaimonTailError.__init__(
            self, f"snapshot {missing} is missing: {safe_text(path)} does not exist, though snapshot "
            f"{next_available} does",
            hint="rows in it are lost to this follower; rerun with --on-gap skip to continue from snapshot "
            f"{next_available}")
        self.first_missing = missing
        self.next_available = next_available


class TableChanged(PaimonTailError):
    """The followed table was dropped or replaced under us."""


class ServiceError(PaimonTailError):
    """The query service is missing, unreachable or answered with an error."""


class UnreadableFile(PaimonTailError):
    """A file we need is there but cannot be used: empty, truncated, not in its format (a disk or a copy went
    wrong). The message names the file, what kind of file it is and what is wrong with it."""

    def __init__(self, what: str, path: str, problem: str, *, hint: str | None = None) -> None:
        super().__init__(f"cannot read {what} {safe_text(str(path))}: {problem}", hint=hint)
        self.what = what
        self.path = path
        self.problem = problem


class MissingFile(UnreadableFile, FileNotFoundError):
    """A file the table's metadata names is not there (deleted, or never copied). Still a ``FileNotFoundError`` for
    code that waits for or skips missing files."""


class OutputClosed(Exception):
    """The reader of our output went away (``| head``): stop quietly. Not an OSError, so click leaves it alone."""


# --------------------------------------------------------------------------------------------- the taxonomy
# What the libraries under us raise when a file, a disk, the network or a peer is at fault (not a bug of ours): the
# error boundary (cli/common.py) shows these as one runtime error line (exit 1), never as "unexpected error".
# Modules are named, not imported: a command that never loaded grpc or pyarrow cannot have raised their errors.
_LIBRARY_FAMILIES = (
    ("json.decoder", "JSONDecodeError", "not valid JSON"),
    ("builtins", "UnicodeDecodeError", "not UTF-8 text"),
    ("yaml.error", "YAMLError", "not valid YAML"),  # and its subclasses (ScannerError, ParserError, ...)
    ("pyarrow.lib", "ArrowException", "Arrow"),
    ("grpc", "RpcError", "gRPC"),
    ("ssl", "SSLError", "TLS"),
    ("builtins", "EOFError", "ended early"),
)


def library_failure(e: BaseException) -> PaimonTailError | None:
    """``e`` as an error a person can act on, when it belongs to a family that storage, JSON/YAML, Arrow/Parquet,
    gRPC or TLS raise on bad input or a failing system (its message, which names the path or address, kept);
    None for anything else (a bug)."""
    if isinstance(e, PaimonTailError):
        return e
    inner = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    seen = {id(e)}
    while inner is not None and id(inner) not in seen:  # a library wrapped one of ours: ours says it
        if isinstance(inner, PaimonTailError):
            return inner
        seen.add(id(inner))
        inner = inner.__cause__ or (None if inner.__suppress_context__ else inner.__context__)
    for cls in type(e).__mro__:
        for module, name, family in _LIBRARY_FAMILIES:
            if cls.__name__ == name and cls.__module__ == module:
                return PaimonTailError(f"{family} error: {one_line(e)}" if family in ("Arrow", "gRPC", "TLS")
                                       else f"{one_line(e)} ({family})")
    if isinstance(e, OSError):  # storage and the network: FileNotFoundError, PermissionError, ENOSPC, refused, ...
        return PaimonTailError(_os_error_text(e))
    return None


def _os_error_text(e: OSError) -> str:
    if e.strerror and e.filename is not None:
        other = f" -> {e.filename2}" if e.filename2 is not None else ""
        return f"{e.filename}{other}: {e.strerror}"
    return one_line(e) or type(e).__name__


def one_line(e: BaseException) -> str:
    """The first line of ``e``'s message (its type's name when it has none)."""
    text = str(e).strip().splitlines()
    return text[0].strip() if text else type(e).__name__


# Characters that act on a terminal instead of showing: C0 and C1 controls (ESC starts a sequence that can rewrite
# the screen or the window title), DEL, lone surrogates (bytes of a name that are not UTF-8) and the bidirectional
# overrides that reorder what is shown.
_UNSAFE = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]}
_UNSAFE.update({c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000)]})
_UNSAFE.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})


def safe_text(text: str) -> str:
    """``text`` safe to print on a terminal, on one line: every character that would act instead of show written
    as its escape (``\\x1b``, ``\\n``), the way Python's ``repr`` writes it; printable text (any script) kept."""
    if text.isprintable():
        return text
    return text.translate(_UNSAFE)
