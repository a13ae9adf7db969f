"""Driver-side Paimon commits for Spark writes. No PySpark import here.

One Spark job (batch write) or one micro-batch (streaming write) is one Paimon commit, made on the driver from
the commit messages the write tasks produced. A streaming micro-batch commits with ``commit_identifier =
batch id`` under a commit user that is stable for the query; before committing, the newest snapshot of that
user is looked up (what Paimon's ``TableCommit#filterCommitted`` does) and a batch id it already covers is not
committed again. So a micro-batch that Spark replays after a crash between the Paimon commit and Spark's
commit log is written once.
"""
from __future__ import annotations

import hashlib
import logging
import threading
from typing import Dict, List, Optional, Sequence

from ..compat.adapters.commit_user import batch_write_builder, stream_write_builder
from ..errors import UsageError
from .runtime import deserialize_messages, get_table

log = logging.getLogger(__name__)

_lock = threading.Lock()
# (table path, commit user) -> (newest snapshot id scanned, newest identifier of that user or None)
_scanned: Dict[tuple, tuple] = {}


def stream_commit_user(options: Dict[str, str], ident: str, explicit: Optional[str]) -> str:
    """A commit user that is the same for every micro-batch of a query, also after a restart.

    ``commit.user`` if given; otherwise derived from the query's checkpoint location (which Spark passes to
    the sink as the ``checkpointLocation`` option) and the table.
    """
    if explicit:
        return explicit
    location = options.get("checkpointlocation")
    if not location:
        raise UsageError(
            "a streaming write to Paimon needs a checkpointLocation or a commit.user option",
            hint="without one, a replayed micro-batch could not be recognised as already committed",
        )
    digest = hashlib.sha256(f"{location}\0{ident}".encode()).hexdigest()[:24]
    return f"spark-{digest}"


def last_committed(table, commit_user: str) -> Optional[int]:
    """The commit identifier of the newest snapshot ``commit_user`` committed, or None."""
    sm = table.snapshot_manager()
    latest = sm.get_latest_snapshot()
    if latest is None:
        return None
    key = (table.table_path, commit_user)
    with _lock:
        scanned_to, found = _scanned.get(key, (0, None))
    try:
        earliest = sm.try_get_earliest_snapshot()
    except RuntimeError:
        earliest = None
    low = max(scanned_to + 1, earliest.id if earliest is not None else 1)
    newest = None
    sid = latest.id
    while sid >= low and newest is None:
        ids = list(range(sid, max(low, sid - 31) - 1, -1))
        snaps = sm.get_snapshots_batch(ids)
        for i in ids:
            snap = snaps.get(i)
            if snap is not None and snap.commit_user == commit_user:
                newest = snap.commit_identifier
                break
        sid = ids[-1] - 1
    result = newest if newest is not None else found
    with _lock:
        _scanned[key] = (latest.id, result)
    return result


def commit_stream(catalog: Dict[str, str], ident: str, commit_user: str, payloads: Sequence[bytes],
                  batch_id: int) -> bool:
    """Commit one micro-batch; False if this batch id was already committed (nothing done)."""
    table = get_table(catalog, ident, fresh=True)
    done = last_committed(table, commit_user)
    if done is not None and done >= batch_id:
        log.info("micro-batch %s of %s is already committed (commit user %s): skipped", batch_id, ident, commit_user)
        return False
    messages = deserialize_messages(table, payloads)
    commit = stream_write_builder(table, commit_user).new_commit()
    try:
        commit.commit(messages, batch_id)
    finally:
        commit.close()
    return True


def commit_batch(catalog: Dict[str, str], ident: str, commit_user: str, payloads: Sequence[bytes],
                 overwrite: bool) -> None:
    table = get_table(catalog, ident, fresh=True)
    messages = deserialize_messages(table, payloads)
    builder = batch_write_builder(table, commit_user)
    if overwrite:
        builder.overwrite()
    commit = builder.new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()


def check_writable(table) -> None:
    """Spark tasks write independently; that is safe for append tables and fixed-bucket primary-key tables."""
    mode = table.bucket_mode().name
    if table.is_primary_key_table and mode != "HASH_FIXED":
        raise UsageError(
            f"table {table.identifier.get_full_name()} has bucket mode {mode}; Spark writes need a fixed bucket "
            "count for primary-key tables",
            hint="create it with a 'bucket' option > 0 (e.g. bucket=4)",
        )


def create_table_if_missing(catalog: Dict[str, str], ident: str, arrow_schema, primary_keys: List[str],
                            partition_keys: List[str], table_options: Dict[str, str]) -> bool:
    """Create ``ident`` from the DataFrame's schema when it does not exist; True if created."""
    import pyarrow as pa
    from pypaimon import Schema

    from ..catalog import CatalogConfig
    from ..errors import TableNotFound
    from .runtime import forget_table

    try:
        get_table(catalog, ident, fresh=True)
        return False
    except TableNotFound:
        pass
    cat = CatalogConfig(dict(catalog)).open()
    db = ident.split(".")[0]
    cat.create_database(db, True)
    unknown = [k for k in list(primary_keys) + list(partition_keys) if k not in arrow_schema.names]
    if unknown:
        raise UsageError(f"primary-key / partition column {', '.join(unknown)} is not in the data")
    fields = [pa.field(f.name, f.type, nullable=f.nullable and f.name not in primary_keys) for f in arrow_schema]
    options = dict(table_options)
    if primary_keys:
        options.setdefault("bucket", "4")
    schema = Schema.from_pyarrow_schema(
        pa.schema(fields), partition_keys=list(partition_keys) or None, primary_keys=list(primary_keys) or None,
        options=options,
    )
    cat.create_table(ident, schema, True)
    forget_table(catalog, ident)
    return True
