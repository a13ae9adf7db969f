"""Lookups against a running query service: ``LookupClient`` (``lookup_client.py``), a facade over one sans-IO core
and two transports, and the command line's few keys without pyarrow (``few_keys.py``; ``lookup_keys`` picks that
path or the client).

The core, without I/O: ``prepare_keys.py`` (keys → routing bucket, partition hash), ``route.py`` (channel →
executor → address), ``call_plan.py`` (the calls of an attempt), ``lookup_requests.py`` (every ``LookupRequest``),
``many_keys.py`` / ``one_key.py`` (absorbing answers, what is asked again), ``lookup_result.py``,
``call_failures.py`` (what an error means), ``deadline.py`` (one deadline, one retry policy), ``discovery.py`` (the
registration and the cached route). The transports: ``async_transport.py`` (grpc.aio) and ``sync_transport.py``
(plain grpc; ``coalesce.py`` shares concurrent one-key calls).

Names are imported on first use, so ``few_keys.py`` (which must not load pyarrow) can live in this package.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"LookupClient": ".lookup_client", "LookupResult": ".lookup_result", "LookupTimeout": ".call_failures",
         "Deadline": ".deadline", "PaimonTailError": "...errors", "lookup_keys": ".few_keys"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = ["Deadline", "LookupClient", "LookupResult", "LookupTimeout", "PaimonTailError", "lookup_keys"]
