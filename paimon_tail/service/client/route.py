"""Where keys go: the coordinator's routing (channel → executor → address) and the grouping of keys by the
executor that owns them. Plain Python (no numpy, no pyarrow): the planning every lookup path shares, the batch
(``many_keys.py``), one key (``one_key.py``) and the few keys of a command line (``few_keys.py``)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ..keys.binary_row import channel
from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from ..protocol import registration as regmod


class Route:
    """Where keys go, from the coordinator's ``ExecutorsResponse``: channel → executor → address. A *fallback*
    route is read from the registration's assignment while no coordinator answers (its executors keep answering
    from what they hold)."""

    def __init__(self, registration: regmod.Registration, response: pb.ExecutorsResponse,
                 fallback: bool = False) -> None:
        self.registration = registration
        self.response = response
        self.fallback = fallback
        self.v2 = response.protocol_version >= 2 and response.channels > 0
        # version 3: several typed keys in one request (what concurrent one-key calls share)
        self.shared_calls = self.v2 and response.protocol_version >= 3
        if self.v2:
            self.channels = response.channels
            self._owners = list(response.owners)
            self.executors = {e.index: e for e in response.executors}
        else:  # a version 1 service: executor i serves ChannelComputer's i
            self.channels = response.num_executors
            self._owners = list(range(self.channels))
            self.executors = {i: e for i, e in enumerate(response.executors)}
        self._owner_array = None
        self.max_batch_keys = response.max_batch_keys

    @property
    def owners(self):
        """The owner of each channel as a numpy array (built on first use: many keys grouped at once)."""
        if self._owner_array is None:
            import numpy as np

            self._owner_array = np.asarray(self._owners, dtype=np.int64)
        return self._owner_array

    def owner(self, part_hash: int, bucket: int) -> int:
        return self._owners[channel(part_hash, bucket, self.channels)]

    def available(self, ex: int) -> Optional[pb.ExecutorInfo]:
        """Executor ``ex`` when it takes calls now (known, alive, with an address), else None."""
        info = self.executors.get(ex)
        if ex < 0 or info is None or not info.address or not info.alive:
            return None
        return info

    def groups(self, part_hashes: Sequence[int], buckets: Sequence[int]) -> Dict[int, List[int]]:
        """Request positions by owning executor, in plain Python (``many_keys.Lookup.plan`` does the same with
        numpy for many keys)."""
        groups: Dict[int, List[int]] = {}
        for i, (part, bucket) in enumerate(zip(part_hashes, buckets)):
            groups.setdefault(self.owner(part, bucket), []).append(i)
        return groups

    @classmethod
    def from_registration(cls, reg: regmod.Registration) -> Optional["Route"]:
        """The routing the registration was last written with, or None when it has none."""
        if not reg.channels or not reg.assignment:
            return None
        owners = [-1] * reg.channels
        executors = []
        for entry in reg.assignment:
            index, address = entry.get("index", -1), entry.get("address", "")
            if index < 0 or not address:
                continue
            executors.append(pb.ExecutorInfo(index=index, address=address, alive=True, host=entry.get("host", "")))
            for c in entry.get("channels", ()):
                if 0 <= c < reg.channels:
                    owners[c] = index
        if not executors:
            return None
        return cls(reg, pb.ExecutorsResponse(protocol_version=min(reg.protocol, PROTOCOL_VERSION),
                                             num_executors=len(executors),
                                             executors=executors, channels=reg.channels, owners=owners),
                   fallback=True)


__all__ = ["Route"]
