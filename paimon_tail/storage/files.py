"""What is wrong with a file we could not read, in words, and the error that names it.

Paimon's metadata files (snapshots, schemas, manifest lists, manifests, index manifests), its data and deletion
files, and our own small files (consumer positions, the service registration) are read by pypaimon, fastavro,
pyarrow and the json module, whose errors say what they expected ("Expecting value: line 1 column 1", "cannot
read header - is it an avro file?", "Parquet magic bytes not found") but not which file: ``unreadable`` turns such
an error into an ``UnreadableFile`` that names the file, its kind, and what is wrong (empty, cut short, not JSON,
not Avro, not Parquet, not text), and a missing file into a ``MissingFile``. ``compat/patches/file_errors.py`` puts it
around pypaimon's readers; our own readers call it themselves.
"""
from __future__ import annotations

import contextlib
import json
from typing import Iterator, Optional

from ..errors import MissingFile, UnreadableFile, one_line


def problem(e: BaseException) -> str:
    """What ``e`` says about the file it was raised reading, in words: the innermost error of its cause chain that
    says something specific (pypaimon wraps the parser's error in a RuntimeError of its own)."""
    from .diagnosis import chain

    errors = list(chain(e))
    for inner in reversed(errors):
        said = _classify(inner)
        if said is not None:
            return said
    return f"{type(errors[-1]).__name__}: {one_line(errors[-1])}"


def _classify(e: BaseException) -> Optional[str]:
    if isinstance(e, FileNotFoundError):
        return "it does not exist"
    if isinstance(e, IsADirectoryError):
        return "it is a directory"
    if isinstance(e, PermissionError):
        return "permission denied"
    if isinstance(e, json.JSONDecodeError):
        if not e.doc.strip():
            return "it is empty"
        if e.pos >= len(e.doc.rstrip()) - 1 or "Unterminated" in e.msg:
            return f"it ends early: cut short? (not valid JSON: {e.msg} at line {e.lineno} column {e.colno})"
        return f"it is not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
    if isinstance(e, UnicodeDecodeError):
        return f"it is not text (byte 0x{e.object[e.start]:02x} at {e.start} is not UTF-8)"
    if isinstance(e, EOFError):
        return "it ends early: cut short?"
    text = one_line(e)
    low = text.lower()
    if "size is 0 bytes" in low or "empty file" in low:
        return "it is empty"
    if "cannot read header" in low or "is it an avro file" in low:
        return "it is not an Avro file (empty, cut short or overwritten?)"
    if "magic bytes not found" in low or "corrupt footer" in low or "not a parquet file" in low:
        return "it is not a Parquet file (cut short or overwritten?)"
    if "range exceeds content length" in low or "unexpected end" in low or "truncated" in low:
        return "it ends early: cut short?"
    if "paimon data invalid" in low or "invalid magic number" in low or "size not match" in low:
        return f"it is not what this kind of file holds ({text})"
    if isinstance(e, KeyError) and e.args:
        return f"it has no {e.args[0]!r} (not what this kind of file holds)"
    if isinstance(e, (KeyError, TypeError, AttributeError)):
        return f"it is not what this kind of file holds ({type(e).__name__}: {text})"
    return None


def unreadable(what: str, path: str, e: BaseException, hint: Optional[str] = None) -> UnreadableFile:
    """The error for ``e``, raised reading ``what`` (``"snapshot"``, ``"manifest"``) at ``path``."""
    if isinstance(e, UnreadableFile):
        return e
    cls = MissingFile if isinstance(e, FileNotFoundError) else UnreadableFile
    return cls(what, path, problem(e), hint=hint)


# What a reader of a file raises when the file, not the code, is at fault (parsers' and storage's errors).
FILE_FAULTS = (OSError, ValueError, EOFError, KeyError, TypeError, IndexError, AttributeError, RuntimeError)


@contextlib.contextmanager
def reading(what: str, path: str, hint: Optional[str] = None) -> Iterator[None]:
    """Errors raised in the block, reading ``what`` at ``path``, become an ``UnreadableFile`` naming it."""
    try:
        yield
    except UnreadableFile:
        raise
    except FILE_FAULTS as e:
        raise unreadable(what, path, e, hint) from e




def broken_file(file_io, splits, e: BaseException) -> Optional[UnreadableFile]:
    """When reading ``splits`` failed with ``e`` and ``e`` does not say which file: the data or deletion file of the
    splits that is missing or not what it should be (a Parquet file without its magic bytes, a deletion vector that
    does not parse), as an ``UnreadableFile``; else one naming the splits' data files together. Only called on
    failure: it reads the files' ends, not their rows."""
    if isinstance(e, UnreadableFile):
        return e
    files = [(f, d) for split in splits for f, d in zip(split.files, _deletions(split))]
    for meta, deletion in files:
        path = meta.file_path
        if path and not _exists(file_io, path):
            return MissingFile("data file", path, "it does not exist")
        if deletion is not None and not _exists(file_io, deletion.dv_index_path):
            return MissingFile("deletion file", deletion.dv_index_path, "it does not exist")
    from pypaimon.deletionvectors.deletion_vector import DeletionVector

    for meta, deletion in files:
        if deletion is not None:
            try:
                DeletionVector.read(file_io, deletion)
            except UnreadableFile as bad:
                return bad
            except FILE_FAULTS as bad:
                return unreadable("deletion file", deletion.dv_index_path, bad)
        if meta.file_path and meta.file_path.endswith(".parquet"):
            wrong = _parquet_problem(file_io, meta.file_path)
            if wrong:
                return UnreadableFile("data file", meta.file_path, wrong)
    names = ", ".join(f.file_name for f, _ in files[:4]) + (", …" if len(files) > 4 else "")
    if not names or not _says_what(e):  # not a file's fault that we can tell: the error stands (a bug is a bug)
        return None
    return UnreadableFile("the data files", names, problem(e))


def _says_what(e: BaseException) -> bool:
    from .diagnosis import chain

    return any(_classify(inner) is not None for inner in chain(e))


def _deletions(split) -> list:
    deletions = getattr(split, "data_deletion_files", None) or []
    return list(deletions) + [None] * (len(split.files) - len(deletions))


def _exists(file_io, path: str) -> bool:
    try:
        return bool(file_io.exists(path))
    except Exception:  # noqa: BLE001 - cannot tell: not named as missing
        return True


def _parquet_problem(file_io, path: str) -> Optional[str]:
    """What is wrong with the ends of a Parquet file (its magic bytes and footer length), or None."""
    try:
        size = file_io.get_file_size(path)
        if size == 0:
            return "it is empty"
        with file_io.new_input_stream(path) as f:
            head = f.read(4)
            if size < 12 or head != b"PAR1":
                return "it is not a Parquet file (cut short or overwritten?)"
            f.seek(size - 8)
            tail = f.read(8)
    except Exception:  # noqa: BLE001 - cannot look: say nothing about this one
        return None
    footer = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or footer > size - 12:
        return "it is not a Parquet file (cut short or overwritten?)"
    return None


__all__ = ["FILE_FAULTS", "broken_file", "problem", "reading", "unreadable"]
