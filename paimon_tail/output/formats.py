"""The output formats and how ``auto`` picks one (no pyarrow: a one-key lookup decides its format too)."""
from __future__ import annotations

from ..errors import UsageError

CDC_FORMATS = ("debezium", "canal", "maxwell")  # change events (output/cdc.py)
FORMATS = ("auto", "jsonl", "table", "csv", "tsv", "arrow", *CDC_FORMATS)


def choose_format(fmt: str, stream) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
    if fmt != "auto":
        return fmt
    isatty = getattr(stream, "isatty", None)
    return "table" if isatty is not None and isatty() else "jsonl"


__all__ = ["CDC_FORMATS", "FORMATS", "choose_format"]
