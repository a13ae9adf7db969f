"""An executor's life: serve ``ExecutorService`` on its own port, join the coordinator, apply what it sends.

One path for every executor, wherever it runs: serve's own local processes (``executor_main``, spawned), the
tasks of a Spark job and ``paimon-tail executor --join`` on another host (``run_executor``). Each dials the
coordinator's ``Join`` (same TLS and token as lookups), says hello with the address clients should dial, and
then receives, in order on that one stream: a welcome (its index and tables), its assignment of channels, and
for each table a full state and one delta per snapshot. Messages are applied one at a time (stores are built in
a worker thread, lookups keep being answered meanwhile); heartbeats go the other way every interval.

When the call ends: a ``Stop`` ends the executor (one with ``rejoin``: a handover, it goes to the new active);
otherwise (the coordinator died, the network broke) it keeps answering from what it holds — every answer still
carries the snapshot it reflects — and looks for the coordinator of the moment until ``orphan_timeout`` passes:
the one it had, the active and standbys that coordinator named, the ``--join`` list, and the tables' registration
(which names the active after a takeover). A coordinator of a lower epoch than one it followed is never joined
again (it was deposed). Its stores are kept (a full state of the same files reuses them).
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import signal
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import grpc

from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol import registration as regmod
from ..protocol.addresses import NoAddress, advertised, split_host_port
from ..metrics import LookupStats
from ..protocol.probes import EXECUTOR_SERVICE, Probes
from ..protocol.security import Security, add_port, make_channel, server_options
from ...concurrency import on_signals, run_loop
from ...errors import ServiceError
from ...storage.retry import StorageRetry
from ..keys.routing import partition_path
from ..store import DiskBudget, MemoryCache
from ..store.budget import default_max_memory, use_returning_allocator
from .lookups import Lookups
from .servicer import ExecutorServicer
from .state import LOADERS, Stores, TableState

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 << 20


class JoinRefused(Exception):
    """The coordinator refused this executor (wrong warehouse, bad index, bad credentials)."""


class Rejoin(Exception):
    """The coordinator handed over: join the new active."""


class Deposed(Exception):
    """The coordinator has a lower epoch than one this executor followed: another took over from it."""


class _Again(Exception):
    """A round of joining ended without the executor ending: wait, then another."""


class _Outage:
    """The join loop's memory between rounds: since when no coordinator was joined, whether that was said, and
    the next wait (tenacity's ``wait``: doubling from 0.2 s up to 2 s, from 0.2 s again after a join)."""

    def __init__(self, now: float) -> None:
        self.last_ok, self.said, self.delay = now, False, 0.2

    def joined(self) -> None:
        self.last_ok, self.said, self.delay = time.monotonic(), False, 0.2

    def wait(self, state) -> float:
        delay, self.delay = self.delay, min(2.0, self.delay * 2)
        return delay


@dataclass
class ExecutorSpec:
    catalog: object  # CatalogConfig: how this executor opens the warehouse
    coordinator: str  # host:port of the coordinator's AddressService
    local_dir: str  # file copies and stores go in a directory of their own under it
    index: int = -1  # serve's own executors: their slot; -1: any (joined executors)
    host: str = "127.0.0.1"  # bind address of ExecutorService
    port: int = 0
    advertise: str = ""  # what clients dial ("" = host:port; for 0.0.0.0 see protocol/addresses.py)
    security: Security = field(default_factory=Security)
    rejoin: bool = True  # dial again when the call breaks (instead of ending)
    orphan_timeout: float = 30.0  # ... for at most this long
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    tag: str = ""  # names its private temp dir (with its pid: see private_dir)
    max_memory: Optional[int] = None  # decompressed rows kept in memory (bytes; None: default_max_memory, on the
    memory_share: int = 1  # executor's own machine, shared by this many executors there)
    max_disk: Optional[int] = None  # row files on local disk (bytes; None: no limit)
    service_id: str = ""  # serve's own executors: the service whose slot ``index`` is
    drain_timeout: float = 30.0  # SIGTERM: at most this long to hand the channels over before leaving
    log_format: str = "text"  # "json": log records as JSON lines (log_format.py)


class Executor:
    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        self.instance_id = uuid.uuid4().hex
        self.index = spec.index
        self.tables: Dict[str, TableState] = {}
        self.owners: tuple = ()  # owners[channel] = executor index, from the latest assignment
        self.requests = 0
        self.keys_looked_up = 0
        self.max_batch_keys = 100_000
        self.address = ""
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="executor-lookup")
        self._apply_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="executor-apply")
        use_returning_allocator()  # its memory cache churns (store/budget.py)
        # A storage outage is waited out (the executor keeps answering from what it holds).
        retry = StorageRetry(timeout=None)
        self.stores = Stores(
            cache=MemoryCache(spec.max_memory or default_max_memory(spec.memory_share)), disk=DiskBudget(spec.max_disk),
            work=ThreadPoolExecutor(max_workers=2, thread_name_prefix="executor-build"),
            background=ThreadPoolExecutor(max_workers=LOADERS, thread_name_prefix="executor-background"),
            call=retry.call_sync)
        self._maintenance: List[asyncio.Task] = []
        self._stop = asyncio.Event()
        self.server: Optional[grpc.aio.Server] = None
        self.root = ""
        self.stop_reason: Optional[str] = None  # None: stopped by the service (Stop) or stop()
        self._interval = 0.5
        self._table_names: List[str] = []
        self._joined = False
        self.epoch = 0  # the highest coordinator epoch followed
        self.coordinators: List[str] = []  # the active and standbys, as the coordinator last said
        self.coordinator = ""  # the address of the coordinator it follows (or followed last)
        self._next = ""  # where a handover sent it
        self.announce: Optional[Callable[[str], None]] = None  # told when it joins (the executor command prints it)
        self.probes = Probes(EXECUTOR_SERVICE)
        self.stats = LookupStats()
        self.draining = False
        self._released = asyncio.Event()  # (draining) its channels are all with other executors now
        self._drain = asyncio.Event()
        self._grace = 0.5

    def ready(self) -> bool:
        """Every channel it owns is loaded (what its health reports as SERVING)."""
        return bool(self.tables) and all(st.view.ready and st.owned <= st.view.served for st in self.tables.values())

    # -- the coordinator's messages ------------------------------------------------------------------------
    async def _welcome(self, welcome: pb.Welcome) -> None:
        if welcome.epoch < self.epoch:
            raise Deposed(f"epoch {welcome.epoch} < {self.epoch}")
        self.epoch = welcome.epoch
        self.coordinators = list(welcome.coordinators)
        self.index = welcome.index
        self._interval = max(0.05, welcome.heartbeat_interval_ms / 1000)
        self.max_batch_keys = welcome.max_batch_keys or self.max_batch_keys
        if self.announce is not None:
            self.announce(f"executor {self.index} joined the service at {self.coordinator} serving "
                          f"{', '.join(welcome.tables)}; lookups at {self.address}")
        if list(welcome.tables) == self._table_names:
            return  # a rejoin: keep what we hold
        from ...catalog import open_table

        root = os.path.join(self.spec.local_dir, own_dir_name(self.index, self.instance_id))

        def open_all():
            remove_dead_dirs(self.spec.local_dir)  # what a killed executor before us left (no cleanup of its ran)
            os.makedirs(root, mode=0o700, exist_ok=True)
            try:
                catalog = self.spec.catalog.open()
                return {name: TableState(name, open_table(name, catalog), os.path.join(root, name), self.stores)
                        for name in welcome.tables}
            except BaseException:  # (a warehouse this machine cannot open) nothing of ours stays in --local-dir
                shutil.rmtree(root, ignore_errors=True)
                raise

        tables = await asyncio.to_thread(open_all)
        old_root, self.root = self.root, root
        for task in self._maintenance:
            task.cancel()
        self.tables, self._table_names = tables, list(welcome.tables)
        self._maintenance = [asyncio.ensure_future(t.maintain()) for t in tables.values()]
        if old_root and old_root != root:
            shutil.rmtree(old_root, ignore_errors=True)

    def _assign(self, a: pb.Assignment) -> None:
        self.owners = tuple(a.owners)
        # what it owns, and what it loads to own next (a move made before the break: answered too, it is loaded
        # and kept current like an owned channel)
        mine = [c for c, owner in enumerate(a.owners) if owner == self.index or
                (c < len(a.warm) and a.warm[c] == self.index)]
        for state in self.tables.values():
            state.assign(a.channels, mine)
        if self.draining and not mine:
            self._released.set()

    async def _full(self, msg: pb.TableFull) -> None:
        state = self.tables.get(msg.table)
        if state is None:
            return

        def prepare():
            if msg.snapshot_id:
                state.at_schema(msg.schema_id)
            return state.prepare_full(state.codec.full(msg), msg.snapshot_id)

        prepared = await asyncio.get_running_loop().run_in_executor(self._apply_pool, prepare)
        await state.swap(prepared, msg.snapshot_id, msg.commit_time_ms, full=True)

    async def _delta(self, msg: pb.TableDelta) -> None:
        state = self.tables.get(msg.table)
        if state is None or not state.view.ready or msg.snapshot_id <= state.view.snapshot_id:
            return
        if not msg.changes and msg.schema_id == state.table.table_schema.id:
            await state.swap(None, msg.snapshot_id, msg.commit_time_ms, full=False)
            self._visible(msg.commit_time_ms)
            return

        def prepare():
            state.at_schema(msg.schema_id)
            return state.prepare_delta(msg.commit_kind, state.codec.delta(msg), msg.snapshot_id)

        prepared = await asyncio.get_running_loop().run_in_executor(self._apply_pool, prepare)
        await state.swap(prepared, msg.snapshot_id, msg.commit_time_ms, full=False)
        self._visible(msg.commit_time_ms)

    def _visible(self, commit_ms: int) -> None:
        if commit_ms:
            self.stats.visible.observe(max(0.0, time.time() - commit_ms / 1000))

    async def _apply(self, work: pb.ExecutorWork) -> bool:
        """Apply one message; False when it says stop."""
        kind = work.WhichOneof("kind")
        if kind == "welcome":
            await self._welcome(work.welcome)
        elif kind == "assignment":
            self._assign(work.assignment)
        elif kind == "full":
            await self._full(work.full)
        elif kind == "delta":
            await self._delta(work.delta)
        elif kind == "coordinators":
            self.coordinators = list(work.coordinators.addresses)
        elif kind == "stop":
            if work.stop.rejoin:  # a handover: on to the new active, answering meanwhile
                log.info("executor %d: %s; re-joining", self.index, work.stop.reason)
                self._next = work.stop.coordinator
                raise Rejoin()
            log.info("executor %d: the service says stop (%s)", self.index, work.stop.reason)
            return False
        return True

    # -- joining ------------------------------------------------------------------------------------------
    def _serving(self) -> List[pb.TableServing]:
        out = []
        for name, st in self.tables.items():
            v = st.view
            buckets = [pb.BucketInfo(partition=partition_path(st.routing.partition_keys, k[0]), bucket=k[1],
                                     rows=s.rows) for k, s in sorted(v.stores.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
            loaded, files = st.loaded()
            out.append(pb.TableServing(table=name, snapshot_id=v.snapshot_id if v.ready else 0,
                                       commit_time_ms=v.commit_ms, keys=v.keys_held(), buckets=buckets,
                                       schema_id=v.schema_id, channels=sorted(v.served) if v.ready else [],
                                       files_loaded=loaded, files=files,
                                       disk_bytes=sum(s.disk_bytes() for s in v.stores.values()),
                                       settled=v.ready and st.settled is v))
        return out

    async def _reports(self):
        yield pb.ExecutorReport(hello=pb.ExecutorHello(
            address=self.address, pid=os.getpid(), instance_id=self.instance_id, index=self.spec.index,
            host=socket.gethostname(), protocol_version=PROTOCOL_VERSION,
            warehouse=self.spec.catalog.warehouse_id, service_id=self.spec.service_id))
        while not self._stop.is_set():
            waits = [asyncio.ensure_future(self._stop.wait())]
            if not self.draining:  # a drain is said at once, not at the next beat
                waits.append(asyncio.ensure_future(self._drain.wait()))
            await asyncio.wait(waits, timeout=self._interval, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if self._drain.is_set():
                self.draining = True
            await self.probes.set_serving(self.ready())
            yield pb.ExecutorReport(heartbeat=pb.Heartbeat(
                tables=self._serving(), requests=self.requests, keys_looked_up=self.keys_looked_up,
                memory_bytes=self.stores.cache.bytes,
                draining=self.draining, stats=self.stats.message()))

    async def _session(self, address: str) -> bool:
        """One Join call to ``address``; True when the service said stop."""
        spec = self.spec
        channel = make_channel(address, spec.security, spec.max_message_bytes)
        self.coordinator = address
        try:
            call = pbg.AddressServiceStub(channel).Join(self._reports(), metadata=spec.security.metadata())
            async for work in call:
                self._joined = True
                if not await self._apply(work):
                    return True
            return False
        finally:
            await channel.close(grace=None)

    def _candidates(self) -> List[str]:
        """Where the coordinator of the moment may be, most likely first."""
        out = [self._next, self.coordinator, *self.coordinators, *self.spec.coordinator.split(",")]
        for state in self.tables.values():  # the registration names the active (and standbys) after a takeover
            try:
                reg = regmod.read(state.table)
            except Exception:  # noqa: BLE001 - storage away: the other candidates
                reg = None
            if reg is not None:
                out[1:1] = [*reg.addresses, *reg.standbys]
            break
        seen, candidates = set(), []
        for address in out:
            address = address.strip()
            if address and address not in seen:
                seen.add(address)
                candidates.append(address)
        return candidates

    async def _join_loop(self) -> None:
        """Join, and join again whenever the call ends, until stopped or given up (see the module's docstring).
        The waits between rounds are tenacity's: 0.2 s doubling to 2 s, from 0.2 s again after each join."""
        from tenacity import AsyncRetrying, retry_if_exception_type

        outage = _Outage(time.monotonic())
        async for step in AsyncRetrying(retry=retry_if_exception_type(_Again), wait=outage.wait, sleep=self._pause,
                                        reraise=True):
            with step:
                await self._rounds(outage)

    async def _pause(self, seconds: float) -> None:
        """Wait between rounds; ``stop()`` cuts it short."""
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _rounds(self, outage: "_Outage") -> None:
        """Rounds over the coordinator's candidates; returns when the executor ends, raises ``_Again`` to wait."""
        while not self._stop.is_set():
            why = ""
            joined = False
            candidates = await asyncio.to_thread(self._candidates) if self.tables else self._candidates()
            self._next = ""
            for address in candidates:
                self._joined = False
                try:
                    if await self._session(address):
                        return
                    why = "the service closed the connection"
                except Rejoin:
                    why = "handed over"
                except Deposed:
                    why = f"the coordinator at {address} was replaced"
                except grpc.aio.AioRpcError as e:
                    if e.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT,
                                    grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                                    grpc.StatusCode.UNIMPLEMENTED):
                        raise JoinRefused(f"the service at {address} refused this executor: "
                                          f"{e.details() or e.code().name}") from None
                    if not self._joined and (e.details() or "").startswith("standing by"):
                        continue  # a standby: the next candidate
                    why = f"the service at {address} does not answer ({e.code().name})"
                except JoinRefused:
                    raise
                except Exception as e:  # applying a message failed: the service's full state starts us over
                    self.stop_reason = f"failed to apply a change: {type(e).__name__}: {e}"
                    if self.announce is None:  # (the executor command prints the reason as its last line)
                        log.error("executor %d %s", self.index, self.stop_reason,
                                  exc_info=log.isEnabledFor(logging.DEBUG))
                    return
                joined = joined or self._joined
                if self._joined or self._next:
                    break  # it was joined: look again (the registration may name a new active now)
            if joined:
                outage.joined()
                if self._next:
                    continue
            if not self.spec.rejoin:
                self.stop_reason = why or "no coordinator"
                return
            if time.monotonic() - outage.last_ok > self.spec.orphan_timeout:
                self.stop_reason = f"{why}; gave up after {self.spec.orphan_timeout:.0f}s"
                return
            if not outage.said and why:  # once per outage
                outage.said = True
                message = f"{why}; trying again for {self.spec.orphan_timeout:.0f}s"
                if self.tables:
                    message += " (answering from what it holds meanwhile)"
                if self.announce is not None:
                    self.announce(message)
                else:
                    log.warning("executor %d: %s", self.index, message)
            raise _Again()

    # -- life cycle ---------------------------------------------------------------------------------------
    async def start(self) -> None:
        spec = self.spec
        self.server = grpc.aio.server(options=server_options(spec.max_message_bytes),
                                      interceptors=spec.security.server_interceptors())
        pbg.add_ExecutorServiceServicer_to_server(ExecutorServicer(Lookups(self)), self.server)
        self.probes.add_to(self.server, [EXECUTOR_SERVICE])
        try:
            port = add_port(self.server, f"{spec.host}:{spec.port}", spec.security)
        except RuntimeError as e:
            port = 0
            why = str(e)
        else:
            why = "the address is in use or not on this machine"
        if not port:
            raise JoinRefused(f"cannot listen on {spec.host}:{spec.port}: {why}")
        try:  # (run() stops the server when this raises)
            first = spec.coordinator.split(",")[0]
            self.address = advertised(spec.host, port, spec.advertise, toward=split_host_port(first)[0])
        except NoAddress as e:
            raise JoinRefused(f"cannot tell clients where to dial this executor (--host {spec.host}): {e}; "
                              "give --advertise HOST") from None
        await self.server.start()

    async def run(self) -> None:
        """Serve until the service says stop, ``stop()`` is called, or (see ``ExecutorSpec.rejoin``) the service is
        gone; raises ``JoinRefused``."""
        try:
            await self.start()
            joining = asyncio.ensure_future(self._join_loop())
            stopping = asyncio.ensure_future(self._stop.wait())
            draining = asyncio.ensure_future(self._drain.wait())
            await asyncio.wait({joining, stopping, draining}, return_when=asyncio.FIRST_COMPLETED)
            if draining.done() and not stopping.done() and not joining.done():
                await self._drain_out(joining)
            stopping.cancel()
            draining.cancel()
            if not joining.done():  # stop(): leave the service (it moves our channels at once)
                joining.cancel()
                await asyncio.gather(joining, return_exceptions=True)
            else:
                joining.result()
        finally:
            await self.close()

    async def _drain_out(self, joining: "asyncio.Future") -> None:
        """SIGTERM: NOT_SERVING; the coordinator moves every channel to other executors, each answering here
        until the new owner has it loaded; then calls in flight finish and it leaves. Without a coordinator (or
        after ``drain_timeout``) it leaves as it is."""
        await self.probes.drain()
        self.draining = True
        waits = {asyncio.ensure_future(self._released.wait()), asyncio.ensure_future(self._stop.wait())}
        try:
            await asyncio.wait({joining, *waits}, timeout=self.spec.drain_timeout,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if not self._released.is_set():
            log.warning("executor %d: leaving without handing its channels over (%s)", self.index,
                        "no coordinator" if joining.done() else f"not done within {self.spec.drain_timeout:.0f}s")
        self._grace = 2.0  # calls in flight finish (new ones are refused)
        self._stop.set()

    def drain(self) -> None:
        """Stop gracefully (SIGTERM)."""
        self._drain.set()

    async def close(self) -> None:
        self._stop.set()
        for task in self._maintenance:
            task.cancel()
        if self.server is not None:
            await self.server.stop(self._grace)
            self.server = None
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._apply_pool.shutdown(wait=False, cancel_futures=True)
        self.stores.work.shutdown(wait=False, cancel_futures=True)
        self.stores.background.shutdown(wait=False, cancel_futures=True)
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)

    def stop(self) -> None:
        self._stop.set()


def executor_main(spec: ExecutorSpec) -> None:
    """Entry point of one of serve's local executor processes (``multiprocessing`` spawn)."""
    from ...compat import patches
    from ...log_format import configure

    patches.install_long_running()
    configure(spec.log_format, f"executor-{spec.index}", text_format=f"executor-{spec.index} %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # serve stops us (Stop), a terminal's Ctrl-C does not
    os.umask(0o077)  # file copies, stores and every directory on the way: owner-only
    try:
        run_loop(Executor(spec).run())
    except JoinRefused as e:
        log.error("%s", e)


_OWNER = re.compile(r"^paimon-tail-executor-(?:.*-)?pid(\d+)-[^-]*$")
_OWN_DIR = re.compile(r"^executor-\d+-pid(\d+)-[0-9a-f]{8}$")


def own_dir_name(index: int, instance_id: str, pid: Optional[int] = None) -> str:
    """The directory an executor keeps its copies and stores in, under ``--local-dir``: named by its pid, so that
    whoever outlives it (serve's launcher, the next executor on this machine) knows whose it was."""
    return f"executor-{index}-pid{os.getpid() if pid is None else pid}-{instance_id[:8]}"


def remove_dirs_of(local_dir: str, pid: int) -> None:
    """Remove what the executor process ``pid`` (dead: killed, so no cleanup of its own ran) left in ``local_dir``."""
    for name in _own_dirs(local_dir):
        if int(_OWN_DIR.match(name).group(1)) == pid:
            shutil.rmtree(os.path.join(local_dir, name), ignore_errors=True)


def remove_dead_dirs(local_dir: str) -> None:
    """Remove every executor directory in ``local_dir`` whose process is gone (``--local-dir`` is on this
    machine: a pid names a process here)."""
    for name in _own_dirs(local_dir):
        if _dead(int(_OWN_DIR.match(name).group(1))):
            shutil.rmtree(os.path.join(local_dir, name), ignore_errors=True)


def _own_dirs(local_dir: str) -> List[str]:
    try:
        return [name for name in os.listdir(local_dir) if _OWN_DIR.match(name)]
    except OSError:
        return []


def _dead(pid: int) -> bool:
    """No such process, or a zombie (a killed Spark worker's child, reparented, may wait long to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def private_dir(tag: str = "") -> str:
    """A new private temp dir for an executor's copies and stores, named by its pid (and ``tag``: its service and
    slot). What executors killed on this machine left (SIGKILL, a cancelled Spark task: no cleanup of theirs
    runs) goes first: every such dir whose pid is dead."""
    import glob
    import tempfile

    root = tempfile.gettempdir()
    for stale in glob.glob(os.path.join(root, "paimon-tail-executor-*")):
        m = _OWNER.match(os.path.basename(stale))
        if m is not None and _dead(int(m.group(1))):
            shutil.rmtree(stale, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"paimon-tail-executor-{tag + '-' if tag else ''}pid{os.getpid()}-")


@dataclass(frozen=True)
class Ended:
    """How ``run_executor`` ended."""

    reason: str  # "stopped" (by the service, or by ``signal``), otherwise why it stopped on its own
    signal: Optional[int] = None  # the first signal that stopped it (``signals=True``)

    @property
    def stopped(self) -> bool:
        """The service (or a signal) stopped it, as opposed to ending on its own (no coordinator, a failure)."""
        return self.reason == "stopped"


def run_executor(spec: ExecutorSpec, *, announce: Optional[Callable[[str], None]] = None, signals: bool = False,
                 metrics_port: Optional[int] = None) -> Ended:
    """Run an executor that is not one of serve's local processes (a Spark task, ``paimon-tail executor``) until
    the service stops it, and say how it ended.

    ``spec.local_dir`` empty: a private temp dir on this machine (``private_dir``), removed at the end.
    ``announce``: told when it joins (and where its metrics are). ``signals``: SIGTERM drains it (its channels
    handed over first), SIGINT or a second signal stops it. ``metrics_port``: Prometheus metrics on
    ``spec.host`` at that port (0: any free one). Raises ``JoinRefused``, and ``ServiceError`` when the metrics
    port cannot be served.
    """
    from dataclasses import replace

    from ...compat import patches

    patches.install_long_running()
    own_dir = None
    if not spec.local_dir:
        own_dir = private_dir(spec.tag)
        spec = replace(spec, local_dir=own_dir)
    else:
        os.makedirs(spec.local_dir, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)  # file copies, stores, directories: owner-only
    executor = Executor(spec)
    executor.announce = announce
    stopped_by: List[int] = []

    def stop_on(sig: int) -> None:
        stopped_by.append(sig)
        if sig == signal.SIGTERM and len(stopped_by) == 1:
            executor.drain()  # hand the channels over first (a second signal stops at once)
        else:
            executor.stop()

    async def main() -> None:
        if signals:
            on_signals(stop_on)
        server = None
        if metrics_port is not None:
            from ..metrics import ExecutorCollector, serve_metrics

            try:
                server, bound = serve_metrics(ExecutorCollector(executor), spec.host, metrics_port)
            except OSError as e:
                raise ServiceError(f"cannot serve metrics on {spec.host}:{metrics_port}: "
                                   f"{(e.strerror or str(e)).lower()}") from None
            if announce is not None:
                announce(f"metrics at http://{spec.host}:{bound}/metrics")
        try:
            await executor.run()
        finally:
            if server is not None:
                server.shutdown()

    try:
        run_loop(main())
    finally:
        os.umask(old_umask)
        if own_dir:
            shutil.rmtree(own_dir, ignore_errors=True)
    if stopped_by:
        return Ended("stopped", stopped_by[0])
    return Ended(executor.stop_reason or "stopped")


__all__ = ["Ended", "Executor", "ExecutorSpec", "JoinRefused", "executor_main", "own_dir_name", "private_dir",
           "remove_dead_dirs", "remove_dirs_of", "run_executor"]
