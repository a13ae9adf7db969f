"""Following tables snapshot by snapshot: positions, planning, reading, consumer positions, notification.

Exported lazily: ``options.py`` and ``quick.py`` (a command's options, and ``follow -e`` with nothing to read) must
not load the follower, which imports pypaimon's read path.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ConsumerStore": ".consumer", "FollowBatch": ".follower", "Follower": ".follower", "FollowOptions": ".options",
    "FollowStats": ".stats", "follow": ".system", "MultiFollower": ".multi", "MultiStats": ".multi",
    "follow_many": ".multi", "EndPosition": ".positions", "StartPosition": ".positions", "parse_end": ".positions",
    "parse_start": ".positions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


__all__ = sorted(_LAZY)
