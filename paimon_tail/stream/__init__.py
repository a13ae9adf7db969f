"""Following a table snapshot by snapshot: positions, planning, reading, consumer positions, notification."""
from .consumer import ConsumerStore
from .follower import FollowBatch, Follower, FollowOptions, FollowStats, follow
from .positions import EndPosition, StartPosition, parse_end, parse_start

__all__ = [
    "ConsumerStore", "EndPosition", "FollowBatch", "Follower", "FollowOptions", "FollowStats", "StartPosition",
    "follow", "parse_end", "parse_start",
]
