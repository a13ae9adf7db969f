"""``paimon-tail serve``: the coordinator (address server + scanners + assignment) and serve's own executors.

    service = QueryService(ServeOptions(tables=["shop.orders"], catalog=catalog_config(warehouse="/wh")))
    await service.start()          # coordinator up, executors launched, registrations written
    await service.wait_ready(60)   # every channel is served at the latest snapshot of every table
    await service.serve_forever()  # until stop() / cancellation
    await service.stop()           # registrations removed, executors stopped, temp files removed

Executors join the coordinator over gRPC (``Join``): serve's own (``--executors N`` slots, launched by
``ServeOptions.launcher``: local processes by default, or the tasks of a Spark job) and any number started
elsewhere with ``paimon-tail executor --join``. The coordinator spreads the service's channels over them
(``assignment.py``), rebalances when one joins or leaves, and streams each executor its buckets' file changes.
A supervisor restarts a slot's executor that exits or stops heart-beating; a joined executor that falls silent
for ``executor_timeout`` seconds is dropped and its channels move to the others.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import tempfile
import time
from typing import Callable, Dict, List, Optional, Set

import grpc

from ...catalog import open_table
from ...stream import query_auth
from ...errors import ServiceError, UsageError
from ...storage.retry import StorageHealth
from ..keys.routing import check_supported
from ..protocol import lookup_pb2 as pb
from ..protocol import lookup_pb2_grpc as pbg
from ..protocol import registration as regmod
from ..protocol.addresses import NoAddress, advertised
from ..protocol.executor_spec import ExecutorSpec
from ..protocol.probes import ADDRESS_SERVICE, EXECUTOR_SERVICE, Probes
from ..protocol.security import add_port, server_options
from .address_servicer import AddressServicer
from .assignment import default_channels
from .launcher import ExecutorLauncher, LocalProcesses
from .lease import ACTIVE, DRAINING, STANDBY, STOPPED, Lease
from .registry import Registry
from .routed_lookups import RoutedLookups
from .scanner import TableLayout, TableScanner
from .serve_options import ServeOptions, check_can_listen, default_executors
from .slot_specs import slot_spec

log = logging.getLogger(__name__)

class QueryService:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        # A relative warehouse made absolute once: file paths in the change stream, and the catalog executors
        # open in other directories (a Spark task runs in its worker's), then name the same files.
        self.catalog = options.catalog.resolved()
        self.num_executors = default_executors() if options.executors is None else options.executors
        if self.num_executors < 0:
            raise UsageError("--executors must be at least 0")
        self.channels = options.channels or default_channels(self.num_executors)
        if self.channels < max(1, self.num_executors):
            raise UsageError(f"--channels {self.channels} is fewer than --executors {self.num_executors}: "
                             "some executors would have nothing to serve")
        self.service_id = regmod.new_service_id()
        self.tables: Dict[str, object] = {}
        self.scanners: Dict[str, TableScanner] = {}
        self.routed: Optional[RoutedLookups] = None
        self.health: Dict[str, StorageHealth] = {name: StorageHealth() for name in options.tables}
        self.launcher: Optional[ExecutorLauncher] = options.launcher
        if self.launcher is None and self.num_executors:
            self.launcher = LocalProcesses()
        self.registry = Registry(self.num_executors, list(options.tables), self.channels, options.heartbeat_timeout,
                                 self.service_id, options.catalog.warehouse_id,
                                 (options.max_batch_keys, options.max_message_bytes),
                                 keep_slots=self.launcher is None or self.launcher.keeps_slots)
        self.registry.on_join.append(self._joined)
        self.registry.on_assignment.append(self._reassigned)
        self.server: Optional[grpc.aio.Server] = None
        self.address = ""
        self.local_dir = ""
        self._own_local_dir = False
        self._made_local_dir = False  # --local-dir did not exist: removed at stop when the executors left it empty
        self._tasks: List[asyncio.Task] = []
        self._started_ms = regmod.now_ms()
        self._stopped = asyncio.Event()
        self._registration_due = asyncio.Event()
        self.probes = Probes(ADDRESS_SERVICE)
        self.announce: Callable[[str], None] = lambda message: log.warning("%s", message)  # serve prints them
        self.lease: Optional[Lease] = None
        self.metrics_address = ""  # host:port of /metrics when served
        self._metrics_server = None

    @property
    def restarts(self) -> int:
        return self.launcher.restarts if self.launcher is not None else 0

    # -- start --------------------------------------------------------------------------------------------
    def _open_tables(self) -> None:
        catalog = self.catalog.open()
        for name in self.options.tables:
            table = open_table(name, catalog)
            if not hasattr(table, "current_branch"):
                raise UsageError(f"{name} is a system table: the query service serves a table or TABLE$branch_NAME")
            query_auth.refuse(table, "serve", "its executors answer lookups from the data files themselves", name)
            check_supported(table)
            self.tables[name] = table

    def _prepare_local_dir(self) -> None:
        if self.options.local_dir:
            self.local_dir = os.path.abspath(self.options.local_dir)
            self._made_local_dir = not os.path.isdir(self.local_dir)
            os.makedirs(self.local_dir, mode=0o700, exist_ok=True)
            os.chmod(self.local_dir, 0o700)
        else:
            self.local_dir = tempfile.mkdtemp(prefix="paimon-tail-serve-")
            self._own_local_dir = True

    async def start(self) -> None:
        if not self.options.tables:
            raise UsageError("no table to serve")
        if len(set(self.options.tables)) != len(self.options.tables):
            raise UsageError("a table is listed twice")
        await asyncio.to_thread(self._open_tables)
        self.lease = Lease(self.tables, self.service_id, self.options.security, self.options.lease_seconds,
                           self._registration, announce=self.announce)
        self.lease.on_change.append(self._lease_changed)
        self.lease.on_claim = self._adopt
        if self.launcher is not None:
            await asyncio.to_thread(self.launcher.prepare)
        self._prepare_local_dir()
        o = self.options
        self.server = grpc.aio.server(options=server_options(o.max_message_bytes),
                                      interceptors=o.security.server_interceptors())
        from ... import __version__

        addresses = AddressServicer(self.registry, lambda: self.address, __version__,
                                    outage=lambda table: self.health[table].outage if table in self.health else None,
                                    layout=self._layout, lease=self.lease)
        pbg.add_AddressServiceServicer_to_server(addresses, self.server)
        # lookups of keys a client does not route itself (grpcurl): routed here, by the lookup client's core
        self.routed = RoutedLookups(self.tables, o.security, addresses.standing_by)
        pbg.add_ExecutorServiceServicer_to_server(self.routed, self.server)
        self.probes.add_to(self.server, [ADDRESS_SERVICE, EXECUTOR_SERVICE])
        if o.port:
            check_can_listen(o.host, o.port)  # before gRPC, whose own log line would come first and say less
        try:
            port = add_port(self.server, f"{o.host}:{o.port}", o.security)
        except RuntimeError as e:
            raise ServiceError(f"cannot listen on {o.host}:{o.port}: {e}") from None
        if not port:
            raise ServiceError(f"cannot listen on {o.host}:{o.port}")
        try:
            self.address = advertised(o.host, port, o.advertise)
        except NoAddress as e:
            raise ServiceError(f"cannot tell clients and executors where to dial --host {o.host}: {e}",
                               hint="give --advertise with an address the others reach this machine at") from None
        await self.server.start()
        if o.metrics_port is not None:
            self._start_metrics(o.host, o.metrics_port)
        for name, table in self.tables.items():
            scanner = TableScanner(name, table, self.registry, self.health[name], o.poll_interval)
            self.scanners[name] = scanner
            self._tasks.append(asyncio.create_task(scanner.run(), name=f"scanner-{name}"))
        if self.launcher is not None:
            # on the loop's (main) thread: a local process must start with SIGINT ignored (launcher.py)
            self.launcher.start([self.executor_spec(i) for i in range(self.num_executors)])
        other = await asyncio.to_thread(self.lease.observe)
        if other is None:
            self._adopt(self.lease.seen)  # (a registration left by a coordinator that died: its executors)
        if other is None and await asyncio.to_thread(self.lease.claim, None):
            self._lease_changed()
        else:
            self._tasks.append(asyncio.create_task(self._stand_by(), name="standby"))
        self._tasks.append(asyncio.create_task(self._refresh_registrations(), name="registration"))
        self._tasks.append(asyncio.create_task(self._supervise(), name="supervisor"))

    def _start_metrics(self, host: str, port: int) -> None:
        from ..metrics import serve_metrics
        from .coordinator_metrics import ServiceCollector

        collector = ServiceCollector(self.registry, self.options.tables, self.scanners, self.health, self.lease,
                                     self.probes)
        try:
            self._metrics_server, bound = serve_metrics(collector, host, port)
        except OSError as e:
            raise ServiceError(f"cannot serve metrics on {host}:{port}: {e.strerror.lower()}") from None
        self.metrics_address = f"{host}:{bound}"

    # -- the lease: active or standby ---------------------------------------------------------------------
    @property
    def role(self) -> str:
        return self.lease.role if self.lease is not None else STANDBY

    def _standby_hello(self) -> pb.StandbyHello:
        return pb.StandbyHello(address=self.address, service_id=self.service_id, pid=os.getpid(),
                               host=socket.gethostname(), tables=list(self.options.tables),
                               warehouse=self.catalog.warehouse_id)

    async def _stand_by(self) -> None:
        """Until this service takes over (then it coordinates like one that started active)."""
        await self.lease.stand_by(self._standby_hello())

    def _adopt(self, previous: Optional[regmod.Registration]) -> None:
        """Before a takeover is written: a coordinator without slots of its own takes the executors of the one
        before over with their channels (they re-join it and keep what they hold)."""
        if previous is not None:
            joined = [e for e in previous.assignment if e.get("joined", True)]
            self.registry.adopt(joined, previous.channels, self.options.rejoin_grace)

    def _lease_changed(self) -> None:
        lease = self.lease
        self.registry.epoch = lease.epoch
        if lease.role == ACTIVE:
            self.registry.set_coordinators([self.address, *sorted(lease.standbys)])
            self._registration_due.set()

    # -- executors ----------------------------------------------------------------------------------------
    def executor_spec(self, index: int) -> ExecutorSpec:
        """What slot ``index``'s executor needs (``slot_specs.slot_spec``)."""
        local = self.launcher is None or isinstance(self.launcher, LocalProcesses)
        return slot_spec(self.options, index, catalog=self.catalog, service_id=self.service_id,
                         local_dir=self.local_dir, address=self.address, slots=self.num_executors, local=local)

    def _joined(self, index: int) -> None:
        for scanner in self.scanners.values():
            scanner.request_full(index)
        self._registration_due.set()  # its address, for clients routed by the registration alone

    def _reassigned(self, gained: Set[int]) -> None:
        for index in gained:
            for scanner in self.scanners.values():
                scanner.request_full(index)
        self._registration_due.set()

    def _layout(self, table: str) -> TableLayout:
        scanner = self.scanners.get(table)
        return scanner.layout() if scanner is not None else TableLayout()

    async def _supervise(self) -> None:
        o = self.options
        while True:
            await asyncio.sleep(0.2)
            if self.launcher is not None:  # first: it sees its silent executors before they are dropped below
                self.launcher.supervise(self.registry, o.executor_timeout)
                if self.launcher.error is not None:
                    raise ServiceError(f"{self.launcher.description} executors failed: {self.launcher.error}")
            self.registry.expire()
            for member in self.registry.silent(o.executor_timeout):
                if not member.gone and (not member.slot or not self.registry.keep_slots):  # channels move
                    log.warning("executor %d at %s sent no heartbeat for %.1fs: dropping it", member.index,
                                member.address, time.monotonic() - member.last_heartbeat)
                    member.end()
            for name, scanner in self.scanners.items():
                if scanner.error is not None:
                    raise ServiceError(f"scanner for {name} failed: {scanner.error}")
            await self.probes.set_serving(self.role == ACTIVE and self.ready())

    # -- registration -------------------------------------------------------------------------------------
    def _registration(self) -> regmod.Registration:
        reg = self.registry
        return regmod.Registration(
            service_id=self.service_id, addresses=[self.address], host=socket.gethostname(), pid=os.getpid(),
            tables=list(self.options.tables), executors=len(reg.members), tls=self.options.security.tls,
            auth="token" if self.options.security.token else "none", started_ms=self._started_ms,
            heartbeat_ms=regmod.now_ms(), lease_ms=int(self.options.lease_seconds * 1000),
            channels=reg.assignment.channels, assignment=reg.registered(),
        )

    async def _refresh_registrations(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._registration_due.wait(), self.options.lease_seconds / 3)
            except asyncio.TimeoutError:
                pass
            self._registration_due.clear()
            if self.role != ACTIVE:
                continue
            try:
                renewed = await asyncio.to_thread(self.lease.renew)
            except Exception as e:  # a flaky object store: retry at the next beat, the lease covers it
                log.warning("could not refresh the registration: %s", e)
                continue
            if not renewed:
                await self._step_down()
                continue
            self.lease.tell_standbys(self.address)

    async def _step_down(self) -> None:
        """Another coordinator holds the registration now (this one could not renew it in time): stop acting.
        Executors that joined go to the coordinator of the moment; serve's own stay (a hot standby)."""
        self.announce(f"another coordinator took {', '.join(self.tables)} over: standing by")
        self.registry.send_elsewhere("another coordinator took over")
        await self.probes.set_serving(False)
        self._tasks.append(asyncio.create_task(self._stand_by(), name="standby"))

    # -- status -------------------------------------------------------------------------------------------
    def ready(self, settled: bool = False) -> bool:
        """Every channel is served at the latest snapshot (a standby without executors of its own: nothing to
        load)."""
        if self.role != ACTIVE and not self.num_executors and self.scanners:
            return all(s.snapshot is not None for s in self.scanners.values())
        for name, scanner in self.scanners.items():
            want = scanner.snapshot.id if scanner.snapshot is not None else 0
            if not self.registry.ready(name, want, settled):
                return False
        return bool(self.scanners)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready(settled=True):
            for name, scanner in self.scanners.items():
                if scanner.error is not None:
                    raise ServiceError(f"scanner for {name} failed: {scanner.error}")
            if time.monotonic() > deadline:
                raise ServiceError(f"the service was not ready within {timeout:.0f}s")
            await asyncio.sleep(0.05)
        if self.role == ACTIVE:  # the registration names every executor by the time "ready" is said
            try:
                if not await asyncio.to_thread(self.lease.renew):
                    await self._step_down()
            except Exception as e:  # noqa: BLE001 - storage away: the refresh loop tries again
                log.warning("could not refresh the registration: %s", e)
        await self.probes.set_serving(self.role == ACTIVE)  # at once, not at the supervisor's next round

    async def serve_forever(self) -> None:
        """Until ``request_stop`` or a task fails (a standby's wait ends when it takes over: that goes on)."""
        stop = asyncio.ensure_future(self._stopped.wait())
        try:
            while True:
                tasks = [t for t in self._tasks if not (t.done() and t.get_name() == "standby")]
                done, _ = await asyncio.wait(tasks + [stop], return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t is not stop and not t.cancelled() and t.exception() is not None:
                        raise t.exception()
                if stop in done or any(t.get_name() != "standby" for t in done):
                    return
        finally:
            stop.cancel()

    def request_stop(self) -> None:
        self._stopped.set()

    async def stop(self) -> None:
        self._stopped.set()
        await self.probes.drain()
        successor = None
        if self.lease is not None and self.role == ACTIVE and self.lease.standbys:
            self.lease.role = DRAINING
            successor = await self.lease.hand_over(self.options.handover_timeout)
            if successor is None:
                log.warning("no standby took over within %.0fs", self.options.handover_timeout)
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if successor is not None:  # joined executors go on under the new active; serve's own stop
            self.registry.send_elsewhere(f"handed over to {successor}", successor)
        elif self.lease is not None and self.role in (ACTIVE, DRAINING):
            await asyncio.to_thread(self.lease.release)
        if self.lease is not None:
            self.lease.role = STOPPED
        self.registry.stop_all("the service is stopping")
        if self.launcher is not None:
            try:
                await asyncio.to_thread(self.launcher.stop, 3.0 if isinstance(self.launcher, LocalProcesses)
                                        else 10.0)
            except Exception as e:  # noqa: BLE001 - the service is going down anyway
                log.warning("could not stop the %s executors cleanly: %s", self.launcher.description, e)
        if self.server is not None:
            await self.server.stop(0.5)
            self.server = None
        if self.routed is not None:
            await self.routed.close()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
            self._metrics_server.server_close()
            self._metrics_server = None
        if self._own_local_dir:
            shutil.rmtree(self.local_dir, ignore_errors=True)
        elif self._made_local_dir:
            try:
                os.rmdir(self.local_dir)
            except OSError:  # not empty: someone else's files are in it too
                pass

    async def __aenter__(self) -> "QueryService":
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


__all__ = ["QueryService", "ServeOptions"]
