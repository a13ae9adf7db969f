"""Small files that other processes read while we rewrite them: consumer positions, service registrations.

A reader must see the old content or the new, never a torn or missing file. On a local file system we write a
temporary file and rename it over the old one. Object stores replace an object whole on PUT, so there the file
system's plain overwrite is already atomic.
"""
from __future__ import annotations

import contextlib
import os
import time
import uuid
from typing import Iterator, Optional


def local_path(path: str) -> Optional[str]:
    """The OS path of a warehouse path on the local file system, or None for a remote one."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if "://" not in path:
        return path
    return None


def write_text_atomic(file_io, path: str, text: str, mode: int = 0o644, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically; ``durable`` also fsyncs it before the rename."""
    local = local_path(path)
    if local is None:
        from .storage.s3 import S3Client, split_path

        client = S3Client.for_file_io(file_io)
        if client is not None:  # one PUT (pyarrow < 20 uploads every object in 3 multipart requests)
            client.put(*split_path(file_io, path), text.encode("utf-8"))
        else:
            file_io.overwrite_file_utf8(path, text)
        return
    tmp = _temporary(local, text, mode, durable)
    try:
        os.replace(tmp, local)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _temporary(local: str, text: str, mode: int = 0o644, durable: bool = False) -> str:
    """``text`` in a new file beside ``local``, ready to be renamed over it."""
    directory, name = os.path.split(local)
    os.makedirs(directory, exist_ok=True)
    tmp = f"{directory}/.{name}.{uuid.uuid4().hex[:8]}.tmp"  # a dot name: never listed as a consumer or service
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def remove_file(file_io, path: str) -> None:
    """Delete one small file: one request on S3 (``storage.s3``), the file system's own delete elsewhere."""
    if local_path(path) is None:
        from .storage.s3 import S3Client, split_path

        client = S3Client.for_file_io(file_io)
        if client is not None:
            client.delete(*split_path(file_io, path))
            return
    file_io.delete(path)


# -- conditional replacement (the query service's registration: a lease with an epoch) ----------------------------
class Conflict(Exception):
    """Someone else replaced the file since the caller read it."""


# A holder keeps the lock for a compare and a rename of a small file: microseconds. One that keeps it this long
# is hung (SIGSTOP, a stalled mount, a paused VM) and must not hold a standby's takeover back.
LOCK_HUNG_SECONDS = 2.0


class Lock:
    """An exclusive lock beside a file: ``flock`` on a lock file opened for this holder, so it excludes other
    processes and other threads of this one alike (on NFS Linux maps it to the lock manager's byte-range locks)."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd

    def held(self) -> bool:
        """Still the lock file at its path: False once a waiter took this holder for hung and broke the lock."""
        try:
            return _same_file(self.fd, self.path)
        except FileNotFoundError:
            return False


def _same_file(fd: int, path: str) -> bool:
    mine, there = os.fstat(fd), os.stat(path)
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


@contextlib.contextmanager
def locked(local: str, hung_after: Optional[float] = None) -> Iterator[Lock]:
    """Hold the lock of ``local``. With ``hung_after``, a holder that keeps it that long is taken for hung: its lock
    file is unlinked and a new one locked. The hung holder's ``Lock.held()`` is False from then on, so a write it
    wakes into is refused (``replace_if`` checks it just before its rename)."""
    import fcntl

    directory, name = os.path.split(local)
    os.makedirs(directory, exist_ok=True)
    path = f"{directory}/.{name}.lock"
    since = time.monotonic()
    pause = 0.001
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if hung_after is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
                got = True
            else:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    got = True
                except BlockingIOError:
                    got = False
            if got and Lock(path, fd).held():
                break
            if not got and time.monotonic() - since >= hung_after and Lock(path, fd).held():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)  # the holder is hung: the next open makes a new lock file
                since = time.monotonic()
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # (closing releases the lock of a file that is no longer the lock file)
        if not got:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    try:
        yield Lock(path, fd)
    finally:
        os.close(fd)  # (closing releases the lock)


def read_versioned(file_io, path: str):
    """(text or None, version): ``version`` is what ``replace_if`` compares against."""
    local = local_path(path)
    if local is not None:
        try:
            with open(local, encoding="utf-8", errors="surrogateescape") as f:  # not UTF-8: not ours, replaceable
                text = f.read()
        except FileNotFoundError:
            return None, None
        return text, text
    from .storage.s3 import S3Client, split_path

    client = S3Client.for_file_io(file_io)
    if client is not None:
        data, etag = client.get_versioned(*split_path(file_io, path))
        return (data.decode("utf-8", "surrogateescape"), etag) if data is not None else (None, None)
    try:
        text = file_io.read_file_utf8(path) if file_io.exists(path) else None
    except FileNotFoundError:
        text = None
    return text, text


def replace_if(file_io, path: str, text: str, version) -> object:
    """Replace ``path`` with ``text`` only if it is still at ``version`` (``None``: only if it does not exist);
    returns the new version; raises ``Conflict`` otherwise.

    What each file system guarantees: a local (or NFS) path compares and renames under ``flock``, atomic between
    every process and thread that uses this function; S3 (and MinIO, and moto) does it in one conditional PUT (``If-Match``
    / ``If-None-Match``), atomic in the store. Other stores (OSS, HDFS, GCS through pyarrow) have no conditional
    write we can reach: read, compare, write, then read back after a moment — a race of two writers within that
    moment is possible (both may believe they won until the next renewal, when the loser sees the winner's file).
    (A local file's version is its content: a coordinator's own renewals differ by their heartbeat, and two
    coordinators' files by their service id.) A writer hung holding the lock (a SIGSTOPped coordinator) holds
    nobody back longer than ``LOCK_HUNG_SECONDS``, and the write it wakes into is refused.
    """
    local = local_path(path)
    if local is not None:
        tmp = _temporary(local, text)  # written before the lock: it is held for a compare and a rename
        try:
            with locked(local, hung_after=LOCK_HUNG_SECONDS) as lock:
                try:
                    with open(local, encoding="utf-8", errors="surrogateescape") as f:
                        current = f.read()
                except FileNotFoundError:
                    current = None
                if current != version or not lock.held():  # (not held: this writer hung and another took over)
                    raise Conflict(path)
                os.replace(tmp, local)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return text
    from .storage.s3 import PreconditionFailed, S3Client, split_path

    client = S3Client.for_file_io(file_io)
    if client is not None:
        try:
            return client.put_if(*split_path(file_io, path), text.encode("utf-8"), version)
        except PreconditionFailed:
            raise Conflict(path) from None
    current, _ = read_versioned(file_io, path)
    if current != version:
        raise Conflict(path)
    file_io.overwrite_file_utf8(path, text)
    import time

    time.sleep(0.2)
    if read_versioned(file_io, path)[0] != text:
        raise Conflict(path)
    return text


def remove_if(file_io, path: str, version) -> None:
    """Delete ``path`` if it is still at ``version`` (best effort on stores without conditional deletes)."""
    local = local_path(path)
    if local is not None:
        with locked(local, hung_after=LOCK_HUNG_SECONDS) as lock:
            try:
                with open(local, encoding="utf-8", errors="surrogateescape") as f:
                    if f.read() != version or not lock.held():
                        return
                os.unlink(local)
            except FileNotFoundError:
                pass
        return
    current, now = read_versioned(file_io, path)
    if current is not None and now == version:
        remove_file(file_io, path)
