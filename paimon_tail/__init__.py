"""paimon-tail: ``tail -f`` and point lookups for Apache Paimon tables.

    import paimon_tail
    table = paimon_tail.open_table("shop.orders", warehouse="/tmp/wh")
    async for item in paimon_tail.follow(table, start="earliest", exit_at_end=True):
        print(item.snapshot_id, item.batch.num_rows)
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Iterator

__version__ = "0.1.0"

# The public names, imported on first use: `import paimon_tail` (and so every CLI command) must not pay for
# pypaimon's read path, pyarrow or grpc before a command asks for them (docs/performance.md, Start-up).
_LAZY = {
    "CatalogConfig": ".catalog", "catalog_config": ".catalog", "open_table": ".catalog",
    "PaimonTailError": ".errors",
    "FollowBatch": ".stream", "Follower": ".stream", "FollowOptions": ".stream", "follow": ".stream",
    "MultiFollower": ".stream", "follow_many": ".stream",
    "LookupClient": ".service.client",
    "lookup_join": ".arrow_join",
}

if TYPE_CHECKING:  # pragma: no cover
    from .catalog import CatalogConfig, catalog_config, open_table
    from .errors import PaimonTailError
    from .arrow_join import lookup_join
    from .service.client import LookupClient
    from .stream import FollowBatch, Follower, FollowOptions, MultiFollower, follow, follow_many


def follow_sync(table, options: "FollowOptions | None" = None, **kwargs: Any) -> Iterator["FollowBatch"]:
    """``follow`` for code that is not async: a blocking iterator of ``FollowBatch``."""
    from .stream import follow

    return follow(table, options, **kwargs).iter_sync()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'paimon_tail' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CatalogConfig", "FollowBatch", "Follower", "FollowOptions", "LookupClient", "MultiFollower", "PaimonTailError",
    "catalog_config", "follow", "follow_many", "follow_sync", "lookup_join", "open_table",
]
