"""Output formats: JSON lines, CSV/TSV, Arrow IPC stream and the rich live table, over one value mapping.

Imported lazily: ``Output`` (one per command: the format, chosen once), ``choose_format`` and the plain-Python text of
``plain.py`` must not load pyarrow or polars.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"FORMATS": ".formats", "CDC_FORMATS": ".formats", "choose_format": ".formats", "Renderer": ".base",
         "make_renderer": ".renderers", "plain_rows": ".values", "Output": ".command_output",
         "LookupRows": ".lookup_rows"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


__all__ = ["CDC_FORMATS", "FORMATS", "LookupRows", "Output", "Renderer", "choose_format", "make_renderer", "plain_rows"]
