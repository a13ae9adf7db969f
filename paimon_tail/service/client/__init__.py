"""Lookups against a running query service: ``LookupClient`` (``lookup_client.py``, over the sans-IO ``core.py``)
and the command line's few keys without pyarrow (``quick.py``; ``lookup_keys`` picks that path or the client).

Names are imported on first use, so ``quick.py`` (which must not load pyarrow) can live in this package.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"LookupClient": ".lookup_client", "LookupResult": ".core", "LookupTimeout": ".core", "Deadline": ".core",
         "PaimonTailError": "...errors", "lookup_keys": ".quick"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = ["Deadline", "LookupClient", "LookupResult", "LookupTimeout", "PaimonTailError", "lookup_keys"]
