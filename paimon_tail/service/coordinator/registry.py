"""The coordinator's view of its executors: who joined, what they serve, and which channels each owns.

An executor is a *member* while its Join call lives. Serve's own executors (local processes or Spark tasks) join
into their slot ``0..N-1``; executors that join from elsewhere (``paimon-tail executor --join``) get the next
free index ``≥ N``. With ``keep_slots`` (local processes) a slot counts for the assignment even while its
executor restarts (its launcher brings it back within seconds); without (Spark tasks, whose machine may be gone
for good) a slot counts only until its first executor joined and then while one is joined, like the executors
that join from elsewhere: a joined executor counts only while joined, so its channels move to the others the
moment it leaves or falls silent. Every change of the assignment is sent to every member (in order with its file
changes, on the same stream) and reported to ``on_assignment`` (the scanners send full states to executors that
gained channels; the registration is rewritten).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..protocol import ASSIGNMENT, DEFAULT_MAX_MESSAGE_BYTES, PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from .assignment import NONE, Assignment, initial, rebalance
from .members import Member, Reserved


class JoinRefused(Exception):
    """A hello the coordinator cannot accept (the reason is sent back to the executor)."""


@dataclass(frozen=True)
class ExecutorStatus:
    """One executor as a status shows it for one table (``address_servicer.py`` translates it to the proto)."""

    info: pb.ExecutorInfo
    channels: List[int]
    serving: Optional[pb.TableServing]  # what it last said it serves of the table (None: nothing yet)
    rates: Tuple[float, float]  # (requests, keys) per second
    last_heartbeat_ms: int
    memory_bytes: int


class Registry:
    def __init__(self, slots: int, tables: List[str], channels: int, heartbeat_timeout: float = 2.0,
                 service_id: str = "", warehouse: str = "",
                 limits: Tuple[int, int] = (100_000, DEFAULT_MAX_MESSAGE_BYTES), heartbeat_interval: float = 0.5,
                 keep_slots: bool = True) -> None:
        self.slots = slots
        self.keep_slots = keep_slots
        self.tables = list(tables)
        self.heartbeat_timeout = heartbeat_timeout
        self.heartbeat_interval = heartbeat_interval
        self.service_id = service_id
        self.warehouse = warehouse.rstrip("/")
        self.max_batch_keys, self.max_message_bytes = limits
        self.members: Dict[int, Member] = {}
        self.restarts: Dict[int, int] = {}
        self.assignment: Assignment = initial(channels, slots)
        self.warm: Dict[int, int] = {}  # channel -> the executor loading it before it becomes its owner
        self.started_ms = int(time.time() * 1000)
        # called with the indices that gained channels, after every change of the assignment
        self.on_assignment: List[Callable[[Set[int]], None]] = []
        self.on_join: List[Callable[[int], None]] = []
        self.reserved: Dict[int, Reserved] = {}
        self.epoch = 0  # the lease's epoch (Welcome)
        self.coordinators: List[str] = []  # the active and its standbys (Welcome, Coordinators)

    # -- membership ---------------------------------------------------------------------------------------
    def join(self, hello: pb.ExecutorHello) -> Member:
        if hello.protocol_version != PROTOCOL_VERSION:
            raise JoinRefused(f"executor speaks protocol {hello.protocol_version}, the service {PROTOCOL_VERSION}")
        if not hello.address or not hello.instance_id:
            raise JoinRefused("bad executor hello: no address or instance id")
        if hello.warehouse.rstrip("/") != self.warehouse:
            raise JoinRefused(f"the executor reads warehouse {hello.warehouse or '(none)'}, the service serves "
                              f"{self.warehouse}")
        own = hello.index >= 0 and (not hello.service_id or hello.service_id == self.service_id)
        if own:
            if hello.index >= self.slots:
                raise JoinRefused(f"bad executor index {hello.index}: the service has {self.slots} slot(s); "
                                  "executors that join ask for any index (-1)")
            index = hello.index
        else:  # a joined executor: its reserved index when it held channels under the coordinator before this one
            index = next((i for i, r in self.reserved.items() if r.address == hello.address), -1)
            if index >= 0:
                del self.reserved[index]
            else:
                index = self.slots
                while index in self.members or index in self.reserved:
                    index += 1
        old = self.members.get(index)
        if old is not None:
            old.end()  # an older instance of this slot: replaced
        member = Member(index, hello, slot=index < self.slots)
        self.members[index] = member
        self.restarts[index] = self.restarts.get(index, -1) + 1
        member.send(pb.ExecutorWork(welcome=pb.Welcome(
            index=index, tables=self.tables, heartbeat_interval_ms=int(self.heartbeat_interval * 1000),
            service_id=self.service_id, max_batch_keys=self.max_batch_keys,
            max_message_bytes=self.max_message_bytes, epoch=self.epoch, coordinators=self.coordinators)))
        changed = self._rebalance()
        if not changed:  # its assignment did not change: it still needs to hear it
            member.send(self._assignment_work())
        for callback in self.on_join:
            callback(index)
        return member

    def leave(self, member: Member) -> None:
        """Its Join call ended."""
        member.end()
        if self.members.get(member.index) is member:
            del self.members[member.index]
            self._rebalance()

    def heartbeat(self, member: Member, hb: pb.Heartbeat) -> None:
        now = time.monotonic()
        member.last_heartbeat = now
        member.last_heartbeat_ms = int(time.time() * 1000)
        member.tables = {t.table: t for t in hb.tables}
        prev = member._prev
        if prev is not None and now - prev[0] > 0.05:
            dt = now - prev[0]
            member.rates = ((hb.requests - prev[1]) / dt, (hb.keys_looked_up - prev[2]) / dt)
        if prev is None or now - prev[0] >= 1.0:
            member._prev = (now, hb.requests, hb.keys_looked_up)
        member.requests, member.keys = hb.requests, hb.keys_looked_up
        member.memory_bytes = hb.memory_bytes
        member.stats = hb.stats
        if hb.draining and not member.draining:
            member.draining = True
            self._rebalance()
        elif self.warm:
            self._flip(member)

    def silent(self, timeout: float, now: Optional[float] = None) -> List[Member]:
        now = time.monotonic() if now is None else now
        return [m for m in self.members.values() if now - m.last_heartbeat > timeout]

    def send(self, index: int, work: pb.ExecutorWork) -> None:
        member = self.members.get(index)
        if member is not None:
            member.send(work)

    def indices(self) -> List[int]:
        return sorted(self.members)

    def stop_all(self, reason: str) -> None:
        for member in list(self.members.values()):
            member.send(pb.ExecutorWork(stop=pb.Stop(reason=reason)))

    def send_elsewhere(self, reason: str, coordinator: str = "", slots: bool = False) -> None:
        """Tell joined executors (and serve's own with ``slots``) to re-join the coordinator of the moment."""
        for member in list(self.members.values()):
            if slots or not member.slot:
                member.send(pb.ExecutorWork(stop=pb.Stop(reason=reason, rejoin=True, coordinator=coordinator)))
                member.end()

    def set_coordinators(self, addresses: List[str]) -> None:
        if addresses != self.coordinators:
            self.coordinators = list(addresses)
            for member in self.members.values():
                member.send(pb.ExecutorWork(coordinators=pb.Coordinators(addresses=addresses)))

    def adopt(self, entries: List[dict], channels: int, grace: float) -> None:
        """Take over another coordinator's assignment (``entries``: its registration's): its executors keep their
        channels while they re-join, for ``grace`` seconds. Only for a coordinator without slots of its own."""
        if self.slots or channels != self.assignment.channels or self.members:
            return
        owners = list(self.assignment.owners)
        until = time.monotonic() + grace
        index = 0
        for entry in entries:
            if not entry.get("address"):
                continue
            while index in self.members or index in self.reserved:
                index += 1
            self.reserved[index] = Reserved(entry["address"], entry.get("host", ""), until)
            for c in entry.get("channels", ()):
                if 0 <= c < len(owners):
                    owners[c] = index
        self.assignment = Assignment(self.assignment.version + 1, tuple(owners))
        self._rebalance()  # channels of the executors that do not come back: to those that do

    def expire(self, now: Optional[float] = None) -> None:
        """Reservations whose executor did not re-join in time: their channels go to the others."""
        now = time.monotonic() if now is None else now
        gone = [i for i, r in self.reserved.items() if r.until < now]
        for i in gone:
            del self.reserved[i]
        if gone:
            self._rebalance()

    # -- assignment ---------------------------------------------------------------------------------------
    def owner(self, channel: int) -> int:
        return self.assignment.owners[channel]

    def _assignment_work(self) -> pb.ExecutorWork:
        a = self.assignment
        warm = [self.warm.get(c, NONE) for c in range(a.channels)] if self.warm else []
        return pb.ExecutorWork(assignment=pb.Assignment(version=a.version, channels=a.channels, owners=a.owners,
                                                        warm=warm))

    def holders(self, channel: int) -> Tuple[int, ...]:
        """Who gets a channel's file changes: its owner, and the executor warming it."""
        owner = self.assignment.owners[channel]
        warm = self.warm.get(channel, NONE)
        return (owner,) if warm == NONE else (owner, warm)

    def _serves(self, index: int, channel: int) -> bool:
        """A live member that answers for ``channel`` in every table now (one still loading it has nothing to
        hand over: the channel moves at once)."""
        member = self.members.get(index)
        if member is None or member.gone or len(member.tables) < len(self.tables):
            return False
        return all(channel in t.channels for t in member.tables.values())

    def _rebalance(self) -> bool:
        """Recompute who should own what. A channel moves at once when its owner is gone; from an executor that is
        up it moves only once the new owner has loaded it (``warm``, flipped in ``_flip``), so lookups never wait
        for a load."""
        if self.keep_slots:
            candidates = set(range(self.slots)) | {i for i, m in self.members.items() if not m.slot}
        else:  # a slot not started yet keeps its channels (no churn while the first executors join)
            candidates = set(self.members) | {i for i in range(self.slots) if i not in self.restarts}
        candidates |= set(self.reserved)
        candidates -= {i for i, m in self.members.items() if m.draining}
        old = self.assignment
        target = rebalance(old, sorted(candidates))
        owners = list(old.owners)
        warm: Dict[int, int] = {}
        for c, (was, new) in enumerate(zip(old.owners, target.owners)):
            if was == new:
                continue
            if self._serves(was, c):
                if new != NONE:
                    warm[c] = new  # the owner answers until the new one has it
                elif self.members[was].draining:
                    owners[c] = NONE  # nobody left to hand it to: a draining owner is let go at once
            else:
                owners[c] = new
        before_warm, self.warm = self.warm, warm
        if tuple(owners) == old.owners and warm == before_warm:
            return False
        new_assignment = old if tuple(owners) == old.owners else Assignment(old.version + 1, tuple(owners))
        self._install(old, new_assignment, before_warm)
        return True

    def _install(self, old: Assignment, new: Assignment, before_warm: Dict[int, int]) -> None:
        if new is old:  # only what is warming changed: same version, the executors still need to hear it
            new = Assignment(old.version + 1, old.owners)
        self.assignment = new
        work = self._assignment_work()
        for member in self.members.values():
            member.send(work)

        def holding(a: Assignment, warm: Dict[int, int]) -> Dict[int, Set[int]]:
            out: Dict[int, Set[int]] = {}
            for c, o in enumerate(a.owners):
                out.setdefault(o, set()).add(c)
            for c, w in warm.items():
                out.setdefault(w, set()).add(c)
            return out

        before, after = holding(old, before_warm), holding(new, self.warm)
        gained = {e for e, cs in after.items() if e != NONE and not cs <= before.get(e, set())}
        for callback in self.on_assignment:
            callback(gained)

    def _flip(self, member: Member) -> None:
        """The channels ``member`` was warming that it now serves in every table become its own."""
        mine = [c for c, w in self.warm.items() if w == member.index]
        if not mine or len(member.tables) < len(self.tables):
            return
        loaded = set.intersection(*(set(t.channels) for t in member.tables.values()))
        done = [c for c in mine if c in loaded]
        if not done:
            return
        old, before_warm = self.assignment, dict(self.warm)
        owners = list(old.owners)
        for c in done:
            owners[c] = member.index
            del self.warm[c]
        self._install(old, Assignment(old.version + 1, tuple(owners)), before_warm)

    # -- what clients see ---------------------------------------------------------------------------------
    def info(self, index: int, table: str) -> pb.ExecutorInfo:
        member = self.members.get(index)
        if member is None:
            r = self.reserved.get(index)
            if r is not None:  # it answers from what it holds until it re-joins
                return pb.ExecutorInfo(index=index, address=r.address, alive=True, host=r.host, joined=True)
            return pb.ExecutorInfo(index=index, restarts=max(0, self.restarts.get(index, 0)))
        serving = member.tables.get(table)
        h = member.hello
        return pb.ExecutorInfo(
            index=index, address=h.address, alive=member.alive(self.heartbeat_timeout),
            snapshot_id=serving.snapshot_id if serving is not None else 0, pid=h.pid, instance_id=h.instance_id,
            restarts=max(0, self.restarts.get(index, 0)), host=h.host, joined=not member.slot,
        )

    def status(self, table: str) -> List["ExecutorStatus"]:
        """Every executor a status shows (``known``), as it serves ``table``."""
        by_executor = self.assignment.by_executor()
        out = []
        for index in self.known():
            member = self.members.get(index)
            out.append(ExecutorStatus(self.info(index, table), by_executor.get(index, []),
                                      member.tables.get(table) if member is not None else None,
                                      member.rates if member is not None else (0.0, 0.0),
                                      member.last_heartbeat_ms if member is not None else 0,
                                      member.memory_bytes if member is not None else 0))
        return out

    def registered(self) -> List[dict]:
        """The executors the registration names: each that owns channels, with its address, host and channels."""
        by_executor = self.assignment.by_executor()
        out = []
        for index in sorted(by_executor):
            member = self.members.get(index)
            reserved = self.reserved.get(index)
            address = member.address if member else reserved.address if reserved else ""
            host = member.hello.host if member else reserved.host if reserved else ""
            out.append({"index": index, "address": address, "host": host, "channels": by_executor[index],
                        "joined": index >= self.slots})
        return out

    def known(self) -> List[int]:
        """Indices a status shows: every slot, and every joined executor."""
        return sorted(set(range(self.slots)) | set(self.members) | set(self.reserved))

    def executors(self, table: str, protocol_version: int) -> pb.ExecutorsResponse:
        a = self.assignment
        common = dict(protocol_version=PROTOCOL_VERSION, assignment=ASSIGNMENT, max_batch_keys=self.max_batch_keys,
                      max_message_bytes=self.max_message_bytes, tables=self.tables)
        if protocol_version < 2:
            # A version 1 client routes with ChannelComputer over num_executors and indexes executors by the
            # result: give it one entry per channel, the channel's executor.
            infos = {i: self.info(i, table) for i in set(a.owners) if i != NONE}
            return pb.ExecutorsResponse(num_executors=a.channels, executors=[
                infos[o] if o != NONE else pb.ExecutorInfo(index=c) for c, o in enumerate(a.owners)], **common)
        known = self.known()
        return pb.ExecutorsResponse(num_executors=len(known), executors=[self.info(i, table) for i in known],
                                    channels=a.channels, owners=a.owners, **common)

    def ready(self, table: str, snapshot_id: int, settled: bool = False) -> bool:
        """Every channel is owned by a live executor that loaded it (``settled``, as at start-up: at ``snapshot_id``
        or later, and no channel still moving to another executor)."""
        if NONE in self.assignment.owners or (settled and self.warm):
            return False
        for index, channels in self.assignment.by_executor().items():
            member = self.members.get(index)
            if member is None or not member.alive(self.heartbeat_timeout):
                return False
            serving = member.tables.get(table)
            if serving is None or not set(channels) <= set(serving.channels):
                return False
            if settled and serving.snapshot_id < snapshot_id:  # (health: a commit being applied is no outage)
                return False
        return True


__all__ = ["ExecutorStatus", "JoinRefused", "Registry"]
