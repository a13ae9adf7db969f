"""paimon-tail: ``tail -f`` and point lookups for Apache Paimon tables.

    import paimon_tail
    table = paimon_tail.open_table("shop.orders", warehouse="/tmp/wh")
    async for item in paimon_tail.follow(table, start="earliest", exit_at_end=True):
        print(item.snapshot_id, item.batch.num_rows)
"""
from __future__ import annotations

from typing import Any, Iterator

from .catalog import CatalogConfig, catalog_config, open_table
from .errors import PaimonTailError
from .stream import FollowBatch, Follower, FollowOptions, MultiFollower, follow, follow_many

__version__ = "0.1.0"


def follow_sync(table, options: FollowOptions | None = None, **kwargs: Any) -> Iterator[FollowBatch]:
    """``follow`` for code that is not async: a blocking iterator of ``FollowBatch``."""
    return Follower(table, options, **kwargs).iter_sync()


def __getattr__(name: str):
    # The query service pulls in grpc; import it only when asked for.
    if name == "LookupClient":
        from .service.client import LookupClient

        return LookupClient
    raise AttributeError(name)


__all__ = [
    "CatalogConfig", "FollowBatch", "Follower", "FollowOptions", "LookupClient", "MultiFollower", "PaimonTailError",
    "catalog_config", "follow", "follow_many", "follow_sync", "open_table",
]
