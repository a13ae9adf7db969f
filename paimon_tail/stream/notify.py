"""Wake the follower when a table may have a new snapshot, without burning CPU while idle.

On a local warehouse under Linux we watch ``<table>/snapshot/`` with inotify (a committed snapshot appears
there by an atomic rename): a commit reaches the follower in well under a millisecond and an idle follower
sleeps in the kernel. Elsewhere (object stores, macOS, no inotify) we poll adaptively: fast right after a
change, backing off to ``max_interval`` while the table is quiet. A periodic re-check also runs under inotify,
so a missed event can delay us but never stall us.
"""
from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import sys
from typing import Optional

_IN_CREATE = 0x00000100
_IN_MOVED_TO = 0x00000080
_IN_CLOSE_WRITE = 0x00000008
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000


class ChangeNotifier:
    """``await notifier.wait()`` returns when something may have changed, or after a timeout."""

    def __init__(self, min_interval: float = 0.005, max_interval: float = 0.5,
                 upgrade_path: Optional[str] = None) -> None:
        self.min_interval = min_interval
        self.max_interval = max_interval
        self._interval = min_interval
        # A local directory that did not exist yet: once it does, inotify can take over.
        self.upgrade_path = upgrade_path

    def upgradeable(self) -> bool:
        return self.upgrade_path is not None and os.path.isdir(self.upgrade_path)

    @property
    def mechanism(self) -> str:
        return "poll"

    def activity(self) -> None:
        """Something was found: poll fast again."""
        self._interval = self.min_interval

    async def wait(self) -> None:
        await asyncio.sleep(self._interval)
        self._interval = min(self.max_interval, self._interval * 2)

    def close(self) -> None:
        pass


class InotifyNotifier(ChangeNotifier):
    """inotify on a local directory; the fallback re-check every ``recheck`` seconds guards against misses."""

    def __init__(self, fd: int, recheck: float = 1.0) -> None:
        super().__init__()
        self._fd = fd
        self._recheck = recheck
        self._event: Optional[asyncio.Event] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    @property
    def mechanism(self) -> str:
        return "inotify"

    def _on_readable(self) -> None:
        try:
            while os.read(self._fd, 65536):
                pass
        except BlockingIOError:
            pass
        except OSError:
            return
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None:
                self._loop.remove_reader(self._fd)
            self._loop = loop
            self._event = asyncio.Event()
            loop.add_reader(self._fd, self._on_readable)
        try:
            await asyncio.wait_for(self._event.wait(), self._recheck)
        except asyncio.TimeoutError:
            pass
        self._event.clear()

    def close(self) -> None:
        if self._fd < 0:
            return
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.remove_reader(self._fd)
            except Exception:
                pass
        os.close(self._fd)
        self._fd = -1


def _inotify_fd(path: str) -> Optional[int]:
    if not sys.platform.startswith("linux"):
        return None
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return None
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
    if fd < 0:
        return None
    wd = libc.inotify_add_watch(fd, os.fsencode(path), _IN_CREATE | _IN_MOVED_TO | _IN_CLOSE_WRITE)
    if wd < 0:
        os.close(fd)
        return None
    return fd


LOCAL_POLL_INTERVAL = 0.5  # local file systems without inotify: polling is free, only latency matters
REMOTE_POLL_INTERVAL = 0.25  # object stores: one request per poll, 4 requests/s idle (docs/object-stores.md)


def notifier_for(directory: str, poll_interval: Optional[float] = None) -> ChangeNotifier:
    """The best notifier for a table's snapshot directory (``file://`` or a plain path can use inotify).

    ``poll_interval`` (``--poll-interval``) is how long an idle poller waits between polls; after a change it
    polls faster, backing off to that. A directory that does not exist yet (an empty table) is polled: we never
    create files in a user's table.
    """
    local = directory[len("file://"):] if directory.startswith("file://") else directory
    if "://" not in local:
        interval = poll_interval or LOCAL_POLL_INTERVAL
        if not os.path.isdir(local):
            return ChangeNotifier(max_interval=interval, upgrade_path=local)
        fd = _inotify_fd(local)
        if fd is not None:
            return InotifyNotifier(fd, recheck=max(1.0, interval))
        return ChangeNotifier(max_interval=interval)
    interval = poll_interval or REMOTE_POLL_INTERVAL
    return ChangeNotifier(min_interval=min(0.05, interval), max_interval=interval)


__all__ = ["ChangeNotifier", "InotifyNotifier", "notifier_for"]
