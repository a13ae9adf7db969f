"""``paimon-tail serve``: the address server, the executors (processes) and one scanner per table.

    service = QueryService(ServeOptions(tables=["shop.orders"], catalog=catalog_config(warehouse="/wh")))
    await service.start()          # address server up, executors spawned, registrations written
    await service.wait_ready(60)   # every executor serves the latest snapshot of every table
    await service.serve_forever()  # until stop() / cancellation
    await service.stop()           # registrations removed, executors stopped, temp files removed

A supervisor restarts an executor that exits or stops heart-beating (SIGSTOP, a hung process) within
``executor_timeout`` seconds; the scanners then send it the full state of its buckets.

With ``ServeOptions.launcher`` the executors run elsewhere (``paimon_tail.spark.service_job.SparkExecutors``: tasks
of a Spark job). They dial the change hub (``remote.py``) for their file changes instead of reading a pipe; a new
connection for an index replaces the old one and gets the full state; the launcher restarts what died.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import queue as queue_mod
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import grpc

from ..catalog import CatalogConfig, open_table
from ..errors import ServiceError, UsageError
from . import lookup_pb2_grpc as pbg
from . import registration as regmod
from .address import AddressServicer, Registry
from .executor import ExecutorSpec, executor_main
from .routing import check_supported
from ..storage.retry import StorageHealth
from .scanner import TableScanner
from .security import Security, add_port, server_options

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH_KEYS = 100_000
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20


def default_executors() -> int:
    """One executor per core, leaving one core for the scanner and address server on bigger machines."""
    cpus = os.cpu_count() or 1
    return max(1, min(16, cpus - 1 if cpus > 2 else cpus))


@dataclass
class ServeOptions:
    tables: Sequence[str]
    catalog: CatalogConfig
    executors: Optional[int] = None
    host: str = "127.0.0.1"
    port: int = 0
    local_dir: Optional[str] = None
    security: Security = field(default_factory=Security)
    lease_seconds: float = 10.0
    heartbeat_timeout: float = 2.0  # an executor silent this long is not routed to
    executor_timeout: float = 3.0  # ... and this long is killed and restarted
    max_batch_keys: int = DEFAULT_MAX_BATCH_KEYS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # Idle polling of each table (s); None: 0.3 on object stores (≈3.3 requests/s a table), inotify locally.
    poll_interval: Optional[float] = None
    # Runs the executors somewhere else (None: local spawn processes). See ExecutorLauncher.
    launcher: Optional["ExecutorLauncher"] = None


class ExecutorLauncher:
    """Starts executors that are not child processes of the service (e.g. the tasks of a Spark job).

    ``start`` and ``stop`` are called in a worker thread and may block. Each launched executor runs
    ``paimon_tail.service.remote.run_remote_executor(specs[i], hub, authkey)``. The launcher keeps them running
    (restarting what dies); ``error`` set means it gave up, which stops the service. ``restart`` asks it to
    replace all executors (one of them hangs).
    """

    description = "remote"
    error: Optional[BaseException] = None

    def start(self, specs: List[ExecutorSpec], hub: str, authkey: bytes) -> None:  # pragma: no cover
        raise NotImplementedError

    def restart(self, reason: str) -> None:  # pragma: no cover
        pass

    def stop(self, timeout: float) -> None:  # pragma: no cover
        raise NotImplementedError


def _advertised(host: str, port: int) -> str:
    if host in ("0.0.0.0", "::", "[::]", ""):
        host = socket.getfqdn()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def _check_can_listen(host: str, port: int) -> None:
    """Bind (and release) ``host:port`` as gRPC will (SO_REUSEADDR): a port in use, a privileged port or an
    address not on this machine fails here with the operating system's reason."""
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ServiceError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as e:
                raise ServiceError(f"cannot listen on {host}:{port}: {e.strerror.lower()}") from None


@contextlib.contextmanager
def _sigint_ignored():
    """An executor is in our process group, so a Ctrl-C on the terminal reaches it too: while it imports (about
    a second), before executor_main ignores SIGINT, that was a KeyboardInterrupt traceback per executor. An
    ignored signal stays ignored across fork and exec (a handler does not), so it starts ignoring SIGINT. A
    Ctrl-C in the few milliseconds of the start is lost (press it again)."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers belong to the main thread
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _Link:
    """Pipe to one executor process, fed by a sender thread so the loop never blocks on a full pipe."""

    def __init__(self, index: int, process, conn) -> None:
        self.index = index
        self.process = process
        self.conn = conn
        self.started = time.monotonic()
        self.queue: queue_mod.Queue = queue_mod.Queue()
        self.thread = threading.Thread(target=self._send_loop, daemon=True, name=f"executor-{index}-pipe")
        self.thread.start()

    def _send_loop(self) -> None:
        while True:
            msg = self.queue.get()
            if msg is None:
                return
            try:
                self.conn.send(msg)
            except (OSError, EOFError, ValueError):
                return

    def send(self, msg) -> None:
        self.queue.put(msg)

    def close(self) -> None:
        self.queue.put(None)
        try:
            self.conn.close()
        except OSError:
            pass


class QueryService:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.num_executors = options.executors or default_executors()
        if self.num_executors < 1:
            raise UsageError("--executors must be at least 1")
        self.service_id = regmod.new_service_id()
        self.tables: Dict[str, object] = {}
        self.scanners: Dict[str, TableScanner] = {}
        self.health: Dict[str, StorageHealth] = {name: StorageHealth() for name in options.tables}
        self.links: List[Optional[_Link]] = [None] * self.num_executors
        self.registry = Registry(self.num_executors, list(options.tables), options.heartbeat_timeout)
        self.server: Optional[grpc.aio.Server] = None
        self.address = ""
        self.local_dir = ""
        self._own_local_dir = False
        self._tasks: List[asyncio.Task] = []
        self._started_ms = regmod.now_ms()
        self._stopped = asyncio.Event()
        self.restarts = 0
        self._ctx = multiprocessing.get_context("spawn")
        self.launcher: Optional[ExecutorLauncher] = options.launcher
        self.hub = None  # remote.ChangeHub when a launcher runs the executors
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._last_relaunch = 0.0

    # -- start --------------------------------------------------------------------------------------------
    def _open_tables(self) -> None:
        catalog = self.options.catalog.open()
        for name in self.options.tables:
            table = open_table(name, catalog)
            check_supported(table)
            current = regmod.read(table)
            if current is not None and current.is_live() and not self._dead_local(current):
                raise ServiceError(
                    f"table {name} is already served by {current.describe()}",
                    hint=f"stop that service, or wait {max(0, (current.expires_ms() - regmod.now_ms()) // 1000)}s "
                    "for its registration to expire",
                )
            self.tables[name] = table

    @staticmethod
    def _dead_local(reg: regmod.Registration) -> bool:
        if reg.host != socket.gethostname():
            return False
        try:
            os.kill(reg.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def _prepare_local_dir(self) -> None:
        if self.options.local_dir:
            self.local_dir = os.path.abspath(self.options.local_dir)
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
        self._prepare_local_dir()
        o = self.options
        self.server = grpc.aio.server(options=server_options(o.max_message_bytes),
                                      interceptors=o.security.server_interceptors())
        from .. import __version__

        pbg.add_AddressServiceServicer_to_server(
            AddressServicer(self.registry, lambda: self.address, o.max_batch_keys, o.max_message_bytes, __version__,
                            outage=lambda table: self.health[table].outage if table in self.health else None),
            self.server,
        )
        if o.port:
            _check_can_listen(o.host, o.port)  # before gRPC, whose own log line would come first and say less
        try:
            port = add_port(self.server, f"{o.host}:{o.port}", o.security)
        except RuntimeError as e:
            raise ServiceError(f"cannot listen on {o.host}:{o.port}: {e}") from None
        if not port:
            raise ServiceError(f"cannot listen on {o.host}:{o.port}")
        await self.server.start()
        self.address = _advertised(o.host, port)
        if self.launcher is None:
            for i in range(self.num_executors):
                self._spawn(i)
        for name, table in self.tables.items():
            scanner = TableScanner(name, table, self.num_executors, self._send, self.health[name],
                                   self.options.poll_interval)
            self.scanners[name] = scanner
            self._tasks.append(asyncio.create_task(scanner.run(), name=f"scanner-{name}"))
        if self.launcher is not None:
            await self._start_remote()
        await asyncio.to_thread(self._write_registrations)
        self._tasks.append(asyncio.create_task(self._refresh_registrations(), name="registration"))
        self._tasks.append(asyncio.create_task(self._supervise(), name="supervisor"))

    # -- executors ----------------------------------------------------------------------------------------
    def _spec(self, index: int) -> ExecutorSpec:
        o = self.options
        return ExecutorSpec(
            index=index, num_executors=self.num_executors, tables=list(o.tables), catalog=o.catalog,
            local_dir=self.local_dir, address_server=self._local_address(),
            host=o.host, security=o.security, max_batch_keys=o.max_batch_keys,
            max_message_bytes=o.max_message_bytes,
        )

    def _local_address(self) -> str:
        """How executors on this machine reach the address server."""
        host, port = self.options.host, self.address.rsplit(":", 1)[1]
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host in ("::", "[::]"):
            host = "[::1]"
        elif ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"{host}:{port}"

    # -- remote executors ---------------------------------------------------------------------------------
    def remote_spec(self, index: int) -> ExecutorSpec:
        """What a remote executor needs: the advertised address server (routable when --host is), its own
        local dir (``--local-dir`` as a path on its machine, or a private temp dir there), and a bind host:
        loopback stays loopback, anything else binds every interface and advertises the task machine's name."""
        from .security import is_loopback

        o = self.options
        host = o.host if is_loopback(o.host) else "0.0.0.0"
        return ExecutorSpec(
            index=index, num_executors=self.num_executors, tables=list(o.tables), catalog=o.catalog,
            local_dir=o.local_dir or "", address_server=self.address, host=host, security=o.security,
            max_batch_keys=o.max_batch_keys, max_message_bytes=o.max_message_bytes,
        )

    async def _start_remote(self) -> None:
        from . import remote

        self._loop = asyncio.get_running_loop()
        authkey = remote.new_authkey()
        self.hub = remote.ChangeHub(self.options.host, authkey, self.num_executors, self._on_connect)
        hub = _advertised(self.options.host, self.hub.port)
        specs = [self.remote_spec(i) for i in range(self.num_executors)]
        self._last_relaunch = time.monotonic()
        await asyncio.to_thread(self.launcher.start, specs, hub, authkey)

    def _on_connect(self, index: int, instance_id: str, conn) -> None:  # hub thread
        loop = self._loop
        if loop is None or loop.is_closed() or self._stopped.is_set():
            conn.close()
            return
        try:
            loop.call_soon_threadsafe(self._attach, index, instance_id, conn)
        except RuntimeError:  # the loop closed meanwhile
            conn.close()

    def _attach(self, index: int, instance_id: str, conn) -> None:
        from .remote import RemoteLink

        if self._stopped.is_set():
            conn.close()
            return
        old = self.links[index]
        if old is not None:
            log.warning("executor %d connected again (instance %s): replacing the previous one", index,
                        instance_id[:8])
            old.close()
            self.restarts += 1
        self.links[index] = RemoteLink(index, instance_id, conn)
        for scanner in self.scanners.values():
            scanner.request_full(index)

    def _supervise_remote(self, now: float) -> None:
        o = self.options
        for i, link in enumerate(self.links):
            rec = self.registry.executors[i]
            if link is not None and link.closed.is_set():
                log.warning("executor %d disconnected; waiting for the launcher to bring it back", i)
                self.links[i] = None
                if rec.instance_id == link.instance_id:
                    self.registry.forget(i)
                continue
            silent = rec.address and now - rec.last_heartbeat > max(10.0, 3 * o.executor_timeout)
            if silent and now - self._last_relaunch > 30.0:
                self._last_relaunch = now
                self.registry.forget(i)
                reason = f"executor {i} sent no heartbeat for {now - rec.last_heartbeat:.1f}s"
                log.warning("%s: restarting the executors", reason)
                self.restarts += 1
                threading.Thread(target=self.launcher.restart, args=(reason,), daemon=True).start()
        if self.launcher.error is not None:
            raise ServiceError(f"{self.launcher.description} executors failed: {self.launcher.error}")

    def _spawn(self, index: int) -> None:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=executor_main, args=(self._spec(index), child), daemon=True,
                                    name=f"paimon-tail-executor-{index}")
        with _sigint_ignored():
            process.start()
        child.close()
        self.links[index] = _Link(index, process, parent)

    def _send(self, index: int, msg) -> None:
        link = self.links[index]
        if link is not None:
            link.send(msg)

    def _restart(self, index: int, reason: str) -> None:
        log.warning("executor %d %s: restarting it", index, reason)
        self.restarts += 1
        link = self.links[index]
        self.registry.forget(index)
        if link is not None:
            link.close()
            if link.process.is_alive():
                try:
                    os.kill(link.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            link.process.join(timeout=0.5)
        self._spawn(index)
        for scanner in self.scanners.values():
            scanner.request_full(index)

    async def _supervise(self) -> None:
        o = self.options
        while True:
            await asyncio.sleep(0.2)
            now = time.monotonic()
            if self.launcher is not None:
                self._supervise_remote(now)
            for i, link in enumerate(self.links if self.launcher is None else ()):
                if link is None:
                    continue
                rec = self.registry.executors[i]
                if not link.process.is_alive():
                    self._restart(i, f"exited (code {link.process.exitcode})")
                elif rec.address and now - rec.last_heartbeat > o.executor_timeout:
                    self._restart(i, f"sent no heartbeat for {now - rec.last_heartbeat:.1f}s")
                elif not rec.address and now - link.started > 120:
                    self._restart(i, "did not register within 120s")
            for name, scanner in self.scanners.items():
                if scanner.error is not None:
                    raise ServiceError(f"scanner for {name} failed: {scanner.error}")

    # -- registration -------------------------------------------------------------------------------------
    def _registration(self, name: str) -> regmod.Registration:
        now = regmod.now_ms()
        return regmod.Registration(
            service_id=self.service_id, addresses=[self.address], host=socket.gethostname(), pid=os.getpid(),
            tables=list(self.options.tables), executors=self.num_executors, tls=self.options.security.tls,
            auth="token" if self.options.security.token else "none", started_ms=self._started_ms,
            heartbeat_ms=now, lease_ms=int(self.options.lease_seconds * 1000),
        )

    def _write_registrations(self) -> None:
        for name, table in self.tables.items():
            regmod.write(table, self._registration(name))

    async def _refresh_registrations(self) -> None:
        while True:
            await asyncio.sleep(self.options.lease_seconds / 3)
            try:
                await asyncio.to_thread(self._write_registrations)
            except Exception as e:  # a flaky object store: retry at the next beat, the lease covers it
                log.warning("could not refresh the registration: %s", e)

    # -- status -------------------------------------------------------------------------------------------
    def ready(self) -> bool:
        for name, scanner in self.scanners.items():
            want = scanner.snapshot.id if scanner.snapshot is not None else 0
            for rec in self.registry.executors:
                serving = rec.tables.get(name)
                if not rec.alive(self.options.heartbeat_timeout) or serving is None:
                    return False
                if want and serving.snapshot_id < want:
                    return False
        return True

    async def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            for name, scanner in self.scanners.items():
                if scanner.error is not None:
                    raise ServiceError(f"scanner for {name} failed: {scanner.error}")
            if time.monotonic() > deadline:
                raise ServiceError(f"the service was not ready within {timeout:.0f}s")
            await asyncio.sleep(0.05)

    async def serve_forever(self) -> None:
        tasks = list(self._tasks)
        stop = asyncio.ensure_future(self._stopped.wait())
        done, _ = await asyncio.wait(tasks + [stop], return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        for t in done:
            if t is not stop and not t.cancelled() and t.exception() is not None:
                raise t.exception()

    def request_stop(self) -> None:
        self._stopped.set()

    async def stop(self) -> None:
        self._stopped.set()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        for name, table in self.tables.items():
            try:
                await asyncio.to_thread(regmod.remove, table, self.service_id)
            except Exception as e:
                log.warning("could not remove the registration of %s: %s", name, e)
        for link in self.links:
            if link is not None:
                link.send(("stop",))
        deadline = time.monotonic() + 3.0
        if self.launcher is not None:
            await self._stop_remote(deadline)
        for link in self.links:
            if link is None:
                continue
            while link.process.is_alive() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if link.process.is_alive():
                link.process.kill()
            link.process.join(timeout=1.0)
            link.close()
        self.links = [None] * self.num_executors
        if self.server is not None:
            await self.server.stop(0.5)
            self.server = None
        if self._own_local_dir:
            shutil.rmtree(self.local_dir, ignore_errors=True)

    async def _stop_remote(self, deadline: float) -> None:
        for link in self.links:  # executors close their end when they exit
            while link is not None and not link.closed.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        for i, link in enumerate(self.links):
            if link is not None:
                link.close()
            self.links[i] = None
        if self.hub is not None:
            self.hub.close()
            self.hub = None
        try:
            await asyncio.to_thread(self.launcher.stop, 10.0)
        except Exception as e:  # noqa: BLE001 - the service is going down anyway
            log.warning("could not stop the %s executors cleanly: %s", self.launcher.description, e)

    async def __aenter__(self) -> "QueryService":
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()
