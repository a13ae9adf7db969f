"""Executors that are not child processes of ``serve``: the change hub and the remote executor entry point.

Local executors get the scanner's messages through a ``multiprocessing`` pipe. An executor started elsewhere (a
Spark task, see ``paimon_tail.spark.service_job``) dials the *change hub* instead: a TCP listener next to the
address server that speaks the same ``multiprocessing.connection`` framing, so the executor runs the very same
loop (``Executor(spec, conn).run()``) with a socket where the pipe was.

* Both ends prove they hold the service's random 32-byte key (``multiprocessing.connection``'s HMAC challenge in
  both directions) before anything is unpickled; the key travels to the executors inside the launcher's task
  closure. The channel is not encrypted: it carries file metadata (paths, sizes, levels), never rows.
* After the handshake the executor says ``("hello", index, instance_id)``; the hub hands the connection to the
  service, which makes it executor ``index``'s link (closing the previous one: an older instance of that index
  gets EOF and stops) and has the scanners send it the full state of its buckets.
* The executor stops on ``("stop",)``, on EOF (the service is gone) and, as a backstop for a vanished machine,
  after ``orphan_timeout`` seconds without a successful heartbeat.
"""
from __future__ import annotations

import logging
import os
import queue as queue_mod
import secrets
import shutil
import socket
import tempfile
import threading
import time
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Callable, Tuple

log = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0


def new_authkey() -> bytes:
    return secrets.token_bytes(32)


def _keepalive(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
            except OSError:  # pragma: no cover
                pass
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class RemoteLink:
    """The service's end of one remote executor's connection: a sender thread (the loop never blocks on a slow
    peer) and a reader thread that notices EOF (the executor or its machine went away)."""

    def __init__(self, index: int, instance_id: str, conn: Connection) -> None:
        self.index = index
        self.instance_id = instance_id
        self.conn = conn
        self.started = time.monotonic()
        self.closed = threading.Event()
        self.queue: queue_mod.Queue = queue_mod.Queue()
        threading.Thread(target=self._send_loop, daemon=True, name=f"remote-executor-{index}-send").start()
        threading.Thread(target=self._watch, daemon=True, name=f"remote-executor-{index}-watch").start()

    def _send_loop(self) -> None:
        while True:
            msg = self.queue.get()
            if msg is None:
                return
            try:
                self.conn.send(msg)
            except (OSError, EOFError, ValueError):
                self.closed.set()
                return

    def _watch(self) -> None:
        try:
            while True:
                self.conn.recv()  # executors send nothing after the hello: this returns at EOF
        except (OSError, EOFError, ValueError, TypeError):
            pass
        except Exception:  # noqa: BLE001 - a garbled frame from an authenticated peer: drop the link
            pass
        self.closed.set()

    def send(self, msg) -> None:
        self.queue.put(msg)

    def close(self) -> None:
        self.queue.put(None)
        self.closed.set()
        try:
            # shutdown, not only close: the reader thread is blocked in recv on the same socket
            socket.socket(fileno=os.dup(self.conn.fileno())).shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError):
            pass
        try:
            self.conn.close()
        except OSError:
            pass


class ChangeHub:
    """Listens for remote executors; ``on_connect(index, instance_id, conn)`` is called from a thread."""

    def __init__(self, host: str, authkey: bytes, num_executors: int,
                 on_connect: Callable[[int, str, Connection], None]) -> None:
        self.authkey = authkey
        self.num_executors = num_executors
        self.on_connect = on_connect
        bind = host if host not in ("", "[::]") else "0.0.0.0"
        bind = bind.strip("[]")
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((bind, 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True, name="change-hub")
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                sock, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handshake, args=(sock, peer), daemon=True,
                             name="change-hub-handshake").start()

    def _handshake(self, sock: socket.socket, peer) -> None:
        try:
            _keepalive(sock)
        except OSError:
            sock.close()
            return
        # A silent or slow peer cannot hold this thread: the socket is shut down when the handshake overruns.
        # (No socket timeout: Connection reads the raw descriptor, which must stay blocking.)
        fired: list = []
        timer = threading.Timer(HELLO_TIMEOUT, lambda: (fired.append(1), _shutdown(sock)))
        timer.start()
        conn = Connection(os.dup(sock.fileno()))
        try:
            deliver_challenge(conn, self.authkey)
            answer_challenge(conn, self.authkey)
            if not conn.poll(HELLO_TIMEOUT):
                raise TimeoutError("no hello")
            hello = conn.recv()
            if not (isinstance(hello, tuple) and len(hello) == 3 and hello[0] == "hello"
                    and isinstance(hello[1], int) and 0 <= hello[1] < self.num_executors
                    and isinstance(hello[2], str)):
                raise ValueError(f"bad hello {hello!r:.80}")
        except Exception as e:  # noqa: BLE001 - wrong key, garbage, timeouts: drop the connection
            log.warning("change hub: refused a connection from %s: %s", peer, e)
            timer.cancel()
            conn.close()
            sock.close()
            return
        timer.cancel()
        timer.join()
        sock.close()  # conn holds its own descriptor of the socket
        if fired:
            conn.close()
            return
        self.on_connect(hello[1], hello[2], conn)

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def connect(address: Tuple[str, int], authkey: bytes, index: int, instance_id: str,
            timeout: float = 30.0) -> Connection:
    """The executor's end: dial the hub, authenticate both ways, say hello."""
    host, port = address
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((host.strip("[]"), port), timeout=10.0)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    sock.settimeout(None)  # Connection reads the raw descriptor: it must be blocking
    _keepalive(sock)
    conn = Connection(sock.detach())
    try:
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
        conn.send(("hello", index, instance_id))
    except BaseException:
        conn.close()
        raise
    return conn


def split_address(address: str) -> Tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host.strip("[]"), int(port)


def run_remote_executor(spec, hub: str, authkey: bytes, orphan_timeout: float = 30.0) -> str:
    """Run one executor until the service stops it; returns why it ended: ``"stopped"`` (the service said so),
    otherwise a reason (EOF, apply failure, orphaned) — the caller decides whether that is a failure.

    ``spec.local_dir`` empty: a private temp dir on this machine, removed at the end.
    """
    import asyncio
    from dataclasses import replace

    from .executor import Executor

    own_dir = None
    if not spec.local_dir:
        # Named after the service (a digest of its key) and the index: a replacement removes what a killed
        # predecessor on this machine left behind.
        import glob
        import hashlib

        prefix = f"paimon-tail-executor-{hashlib.sha256(authkey).hexdigest()[:10]}-{spec.index}-"
        for stale in glob.glob(os.path.join(tempfile.gettempdir(), prefix + "*")):
            shutil.rmtree(stale, ignore_errors=True)
        own_dir = tempfile.mkdtemp(prefix=prefix)
        spec = replace(spec, local_dir=own_dir)
    else:
        os.makedirs(spec.local_dir, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)  # file copies, stores, directories: owner-only
    try:
        executor = Executor(spec, None)
        executor.orphan_timeout = orphan_timeout
        conn = connect(split_address(hub), authkey, spec.index, executor.instance_id)
        executor.conn = conn
        try:
            try:
                import uvloop

                uvloop.run(executor.run())
            except ImportError:  # pragma: no cover
                asyncio.run(executor.run())
        finally:
            try:
                conn.close()
            except OSError:
                pass
        return executor.stop_reason or "stopped"
    finally:
        os.umask(old_umask)
        if own_dir:
            shutil.rmtree(own_dir, ignore_errors=True)


__all__ = ["ChangeHub", "RemoteLink", "connect", "new_authkey", "run_remote_executor", "split_address"]
