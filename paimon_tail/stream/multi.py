"""Many tables in one process: one ``Follower`` per table, merged in one event loop.

    follower = MultiFollower(catalog, ["shop.orders", "shop.*"], start="earliest")
    async for item in follower:              # FollowBatch; item.table says which table it came from
        ...

Each table keeps everything a single follow has: its start position, its own notifier, its consumer file
(``--consumer-id`` names one file per table), schema changes and gap handling. The merge asks a table's follower
for its next batch only once the caller has asked for the item after that table's previous batch, so a consumer
position is written only after the caller has handled every row of the snapshot: the same at-least-once
guarantee as one table, per table (after a crash, at most the snapshot in flight of each table comes again).

Order: within a table, commit order. Across tables, batches are handed out as they are read, the oldest commit
first among those ready; an idle table never holds the others back (as a Kafka consumer interleaves partitions).

Globs followed live (no ``exit_at_end``, no ``until``) are listed again every ``discover_interval`` seconds; a
table created since is followed from its first snapshot. A table matched by a glob that is dropped stops being
followed (an event says so); a table named explicitly that is dropped ends the follow with an error, as alone.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow as pa

from ..catalog import CatalogConfig, catalog_config, open_table
from ..errors import PaimonTailError, TableChanged, TableNotFound
from .follower import FollowBatch, Follower, FollowOptions, iterate_sync
from .stats import FollowStats
from .positions import parse_start
from .tables import TablePattern, matching_tables, parse_patterns


@dataclass
class MultiStats:
    """Per-table ``FollowStats`` and their totals (the footer of the live view, ``--stats``)."""

    tables: Dict[str, FollowStats] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    events: List[str] = field(default_factory=list)  # tables found, dropped; listing errors

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.tables.values())

    @property
    def caught_up(self) -> bool:
        return bool(self.tables) and all(s.caught_up for s in self.tables.values())

    @property
    def tables_caught_up(self) -> int:
        return sum(1 for s in self.tables.values() if s.caught_up)

    @property
    def lag_snapshots(self) -> int:
        return sum(s.lag_snapshots for s in self.tables.values())

    @property
    def lag_seconds(self) -> float:
        return max((s.lag_seconds for s in self.tables.values()), default=0.0)

    @property
    def rows_per_second(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.rows / elapsed if elapsed > 0 else 0.0

    @property
    def overwrites_skipped(self) -> int:
        return sum(s.overwrites_skipped for s in self.tables.values())

    @property
    def overwrites_read(self) -> int:
        return sum(s.overwrites_read for s in self.tables.values())

    @property
    def mechanism(self) -> str:
        return "/".join(sorted({s.mechanism for s in self.tables.values() if s.mechanism}))

    @property
    def outage(self):
        """The first table whose storage does not answer (tables of one warehouse share it), or None."""
        return next((s.outage for s in self.tables.values() if s.outage is not None), None)


async def _next(agen: AsyncIterator[FollowBatch]) -> FollowBatch:
    return await agen.__anext__()


def _open_catalog(catalog):
    if isinstance(catalog, str):
        catalog = catalog_config(catalog)
    if isinstance(catalog, CatalogConfig):
        return catalog.open()  # installs the patches (compat.patches.install) first
    return catalog  # a pypaimon catalog


class MultiFollower:
    """Async-iterable ``FollowBatch`` stream of several tables (``item.table``); ``iter_sync`` for plain code.

    ``catalog`` is a ``CatalogConfig``, a pypaimon catalog or a warehouse path; ``tables`` are ``db.table`` names
    and globs (``shop.*``). The tables are listed and opened here, so a missing one fails before anything runs.
    """

    def __init__(self, catalog, tables: Sequence[str], options: Optional[FollowOptions] = None, *,
                 discover_interval: float = 1.0, on_event: Optional[Callable[[str], None]] = None,
                 **kwargs) -> None:
        if options is None:
            options = FollowOptions(**kwargs)
        elif kwargs:
            options = dataclasses.replace(options, **kwargs)
        self.options = options.normalized()
        self.patterns: List[TablePattern] = parse_patterns(tables)
        self.catalog = _open_catalog(catalog)
        self.discover_interval = discover_interval
        self.on_event = on_event
        # called with each table's notices (an overwrite skipped, ...), prefixed with the table's name
        self.on_notice: Optional[Callable[[str], None]] = None
        self.stats = MultiStats()
        self.followers: Dict[str, Follower] = {}
        self._from_glob: set = set()
        self._listing_failure: Optional[str] = None
        for p in self.patterns:
            if not p.is_glob and p.text not in self.followers:
                self._add(p.text, open_table(p.text, self.catalog), self.options)
        for name in matching_tables(self.catalog, self.patterns):
            if name not in self.followers:
                try:
                    table = open_table(name, self.catalog)
                except TableNotFound:  # listed while being created or dropped
                    continue
                self._add(name, table, self.options, from_glob=True)
        if not self.followers:
            wanted = ", ".join(p.text for p in self.patterns)
            if not self.discovering:
                raise TableNotFound(f"no table matches {wanted}")
            self._event(f"no table matches {wanted} yet: waiting for one to be created")

    # -- the tables ---------------------------------------------------------------------------------------
    @property
    def discovering(self) -> bool:
        """New tables are picked up only by a live follow of a glob: with an end, the set is fixed at start."""
        o = self.options
        return any(p.is_glob for p in self.patterns) and not o.exit_at_end and o.until is None

    def _add(self, name: str, table, options: FollowOptions, from_glob: bool = False) -> Follower:
        from .system import follower_of

        try:
            follower = follower_of(table, options)
        except PaimonTailError as e:  # e.g. --select or --where naming a column this table lacks
            e.message = f"{name}: {e.message}"
            raise
        follower.on_notice = lambda message: self.on_notice is not None and self.on_notice(f"{name}: {message}")
        self.followers[name] = follower
        self.stats.tables[name] = follower.stats
        if from_glob:
            self._from_glob.add(name)
        return follower

    def _event(self, message: str) -> None:
        self.stats.events.append(message)
        if self.on_event is not None:
            self.on_event(message)

    async def _discover(self) -> List[str]:
        """After the interval, list the globs again; open and add the tables not followed yet."""
        await asyncio.sleep(self.discover_interval)
        try:
            names = await asyncio.to_thread(matching_tables, self.catalog, self.patterns)
        except Exception as e:  # a transient listing failure must not end a live follow: try again next time
            message = f"cannot list tables ({type(e).__name__}: {e}); trying again every {self.discover_interval:g} s"
            if message != self._listing_failure:  # said once, not every second
                self._event(message)
            self._listing_failure = message
            return []
        self._listing_failure = None
        added = []
        # Created after the follow started: everything in it is new, whatever --from said.
        options = dataclasses.replace(self.options, start=parse_start("earliest"))
        for name in names:
            if name in self.followers:
                continue
            try:
                table = await asyncio.to_thread(open_table, name, self.catalog)
            except TableNotFound:  # its directory is there, its schema not yet: next time
                continue
            self._add(name, table, options, from_glob=True)
            self._event(f"following {name} (a new table matching the glob)")
            added.append(name)
        return added

    def output_schema(self) -> pa.Schema:
        """The first table's columns (an Arrow stream of a follow that printed nothing still needs a schema)."""
        for follower in self.followers.values():
            return follower.output_schema()
        return pa.schema([])

    # -- the merge ----------------------------------------------------------------------------------------
    async def __aiter__(self) -> AsyncIterator[FollowBatch]:
        sources = {name: f.__aiter__() for name, f in self.followers.items()}
        steps: Dict[asyncio.Task, str] = {}
        ready: List[FollowBatch] = []  # newest first: pop() takes the oldest commit

        def step(name: str) -> None:
            steps[asyncio.ensure_future(_next(sources[name]))] = name

        for name in sources:
            step(name)
        discovery = asyncio.ensure_future(self._discover()) if self.discovering else None
        try:
            while True:
                if ready:
                    item = ready.pop()
                    yield item
                    # The caller asked for more: that table's batch is handled; its follower may go on (and
                    # write its consumer position if the batch ended a snapshot).
                    step(item.table.full_name)
                    continue
                waiting = set(steps)
                if discovery is not None:
                    waiting.add(discovery)
                if not waiting:
                    return
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if discovery in done:
                    for name in discovery.result():
                        sources[name] = self.followers[name].__aiter__()
                        step(name)
                    discovery = asyncio.ensure_future(self._discover())
                for task in done:
                    name = steps.pop(task, None)
                    if name is None:
                        continue
                    try:
                        ready.append(task.result())
                    except StopAsyncIteration:
                        del sources[name]
                    except TableChanged as e:
                        if name not in self._from_glob:
                            raise
                        del sources[name]
                        self.followers.pop(name).close()
                        self.stats.tables.pop(name, None)
                        self._event(f"{e}; no longer followed")
                ready.sort(key=lambda it: (it.commit_time_ms, it.snapshot_id), reverse=True)
        finally:
            pending = list(steps) + ([discovery] if discovery is not None else [])
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for agen in sources.values():
                try:
                    await agen.aclose()
                except Exception:
                    pass
            self.close()

    def close(self) -> None:
        for follower in self.followers.values():
            follower.close()

    def iter_sync(self) -> Iterator[FollowBatch]:
        """Blocking iteration for code that is not async (runs its own event loop)."""
        return iterate_sync(self)


def follow_many(catalog, tables: Sequence[str], options: Optional[FollowOptions] = None, **kwargs) -> MultiFollower:
    """Follow several tables (names and globs) of ``catalog`` in one stream: ``async for item in ...``."""
    return MultiFollower(catalog, tables, options, **kwargs)


def follower_for(catalog, tables: Sequence[str], options: FollowOptions,
                 on_event: Optional[Callable[[str], None]] = None) -> Union[Follower, MultiFollower]:
    """What ``paimon-tail follow TABLE...`` runs: one table named → ``Follower``; several, or a glob (even one
    matching a single table, so a script's output keeps its shape) → ``MultiFollower``."""
    patterns = parse_patterns(tables)
    if isinstance(catalog, CatalogConfig) and catalog.warehouse and os.path.isdir(catalog.warehouse):
        # pypaimon's Rust reader takes absolute paths only (compat/adapters/native_reads.py); a warehouse that is not
        # there is still named as typed in the error
        catalog = catalog.resolved()
    if len(patterns) == 1 and not patterns[0].is_glob:
        from .system import follower_of  # a system table's (t$snapshots, ...) or a data table's

        return follower_of(open_table(patterns[0].text, catalog), options)
    return MultiFollower(catalog, tables, options, on_event=on_event)


__all__ = ["MultiFollower", "MultiStats", "follow_many", "follower_for"]
