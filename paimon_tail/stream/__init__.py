"""Following tables snapshot by snapshot: positions, planning, reading, consumer positions, notification."""
from .consumer import ConsumerStore
from .follower import FollowBatch, Follower, FollowOptions, FollowStats, follow
from .multi import MultiFollower, MultiStats, follow_many
from .positions import EndPosition, StartPosition, parse_end, parse_start

__all__ = [
    "ConsumerStore", "EndPosition", "FollowBatch", "Follower", "FollowOptions", "FollowStats", "MultiFollower",
    "MultiStats", "StartPosition", "follow", "follow_many", "parse_end", "parse_start",
]
