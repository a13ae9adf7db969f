"""The output formats and how ``auto`` picks one (no pyarrow: a one-key lookup decides its format too)."""
from __future__ import annotations

from ..errors import UsageError

CDC_FORMATS = ("debezium", "canal", "maxwell")  # change events (output/cdc.py)
FORMATS = ("auto", "jsonl", "table", "csv", "tsv", "arrow", *CDC_FORMATS)
BINARY_FORMATS = ("arrow",)  # bytes a terminal would show as garbage (and may act on)
# other names people type for a format: jq's, kcat's and psql's users write "json" for JSON lines
ALIASES = {"json": "jsonl", "ndjson": "jsonl"}


def choices(formats=FORMATS) -> tuple:
    """``formats`` and the aliases of those among them: what ``--format`` accepts."""
    return (*formats, *(alias for alias, fmt in ALIASES.items() if fmt in formats))


def choose_format(fmt: str, stream) -> str:
    fmt = ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
    if fmt != "auto":
        return fmt
    isatty = getattr(stream, "isatty", None)
    return "table" if isatty is not None and isatty() else "jsonl"


def refuse_binary_terminal(fmt: str, stream, forced: bool = False) -> None:
    """A binary format is not written to a terminal unless asked for with ``--force-binary`` (as curl refuses
    "Binary output can mess up your terminal", and gzip "compressed data not written to a terminal")."""
    isatty = getattr(stream, "isatty", None)
    if fmt in BINARY_FORMATS and not forced and isatty is not None and isatty():
        raise UsageError(f"-f {fmt} is binary and stdout is a terminal",
                         hint="redirect or pipe it, or add --force-binary")


__all__ = ["ALIASES", "BINARY_FORMATS", "CDC_FORMATS", "FORMATS", "choices", "choose_format", "refuse_binary_terminal"]
