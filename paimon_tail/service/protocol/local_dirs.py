"""Whose directory is whose on an executor's machine: an executor keeps its file copies and stores in a
directory named by its pid, so that whoever outlives it (serve's launcher after a kill, the next executor in the
same ``--local-dir``, the next executor run outside serve on this machine) can tell a dead one's from a living
one's and remove it. Both sides use these names (the executor makes and removes its own; the coordinator's
launcher removes those of the executors it killed), so they live here, where the two sides meet.
"""
from __future__ import annotations

import os
import re
import shutil
from typing import List, Optional

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


__all__ = ["own_dir_name", "private_dir", "remove_dead_dirs", "remove_dirs_of"]
