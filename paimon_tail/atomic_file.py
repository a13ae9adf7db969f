"""Small files that other processes read while we rewrite them: consumer positions, service registrations.

A reader must see the old content or the new, never a torn or missing file. On a local file system we write a
temporary file and rename it over the old one. Object stores replace an object whole on PUT, so there the file
system's plain overwrite is already atomic.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from typing import Optional


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
        os.replace(tmp, local)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_file(file_io, path: str) -> None:
    """Delete one small file: one request on S3 (``storage.s3``), the file system's own delete elsewhere."""
    if local_path(path) is None:
        from .storage.s3 import S3Client, split_path

        client = S3Client.for_file_io(file_io)
        if client is not None:
            client.delete(*split_path(file_io, path))
            return
    file_io.delete(path)
