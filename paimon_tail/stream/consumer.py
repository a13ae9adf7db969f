"""Consumer positions in Paimon's own consumer files: ``<table>/consumer/consumer-<id>``, ``{"nextSnapshot": N}``
(a branch's in ``<table>/branch/branch-NAME/consumer/``, where Paimon keeps them: a branch has snapshots of its own).

The same files Flink and Spark readers keep, so snapshot expiration (which honours consumers) never removes a
snapshot we still have to read. pypaimon's ``ConsumerManager`` overwrites in place; a crash mid-write would
leave a torn file, so writes here go through ``atomic_file.write_text_atomic`` (a rename on a local file system;
object stores replace objects whole).
"""
from __future__ import annotations

import json
from typing import Dict, Optional

from pypaimon.consumer.consumer_manager import ConsumerManager

from ..atomic_file import remove_file, write_text_atomic
from ..compat.adapters.consumer_files import consumer_directory, consumer_path, validate_consumer_id
from ..errors import PaimonTailError, SnapshotExpired, UnreadableFile, UsageError
from ..storage.files import reading
from ..storage.s3 import read_text

_LONG_MAX = (1 << 63) - 1  # snapshot ids are Java longs


class ConsumerStore:
    def __init__(self, table) -> None:
        if not hasattr(table, "current_branch"):  # a system table (t$snapshots, t$audit_log, ...)
            from ..catalog import TableRef

            raise UsageError(f"{TableRef.of(table).full_name} keeps no consumer positions: Paimon keeps them per "
                             "table and branch (name the table, or TABLE$branch_NAME)")
        self.table = table
        self.file_io = table.file_io
        self.manager = ConsumerManager(table.file_io, table.table_path, table.current_branch())

    @staticmethod
    def validate_id(consumer_id: str) -> str:
        try:
            validate_consumer_id(consumer_id)
        except ValueError as e:
            raise UsageError(f"bad consumer id {consumer_id!r}: {e}") from None
        if len(f"consumer-{consumer_id}".encode("utf-8", "surrogateescape")) > 255:  # one file name
            raise UsageError(f"bad consumer id {consumer_id[:40]!r}…: longer than its file name can be (246 bytes)")
        return consumer_id

    def path(self, consumer_id: str) -> str:
        return consumer_path(self.manager, self.validate_id(consumer_id))

    def get(self, consumer_id: str) -> Optional[int]:
        """The next snapshot this consumer will read, or None if it has no position yet. A file that does not hold
        a position (empty, cut short, not JSON, no ``nextSnapshot`` number) is named, never read as none."""
        return self._read(self.validate_id(consumer_id))

    def all(self) -> Dict[str, int]:
        positions = {}
        for consumer_id in self.manager.list_all_ids():
            position = self._read(consumer_id)
            if position is not None:
                positions[consumer_id] = position
        return dict(sorted(positions.items()))

    def _read(self, consumer_id: str) -> Optional[int]:
        # pypaimon's Consumer.from_path retries a file it cannot parse for 2 s, then raises a bare RuntimeError
        path = consumer_path(self.manager, consumer_id)
        table = getattr(getattr(self.table, "identifier", None), "get_full_name", lambda: "TABLE")()
        hint = f"reset it with: paimon-tail consumers {table} --reset {consumer_id} --to N, or --delete it"
        with reading("consumer file", path, hint=hint):
            text = read_text(self.file_io, path)
            if text is None:
                return None
            position = json.loads(text)["nextSnapshot"]
        if isinstance(position, bool) or not isinstance(position, int) or not 0 < position <= _LONG_MAX:
            raise UnreadableFile("consumer file", path, f"nextSnapshot {position!r} is not a snapshot id", hint=hint)
        return position

    def set(self, consumer_id: str, next_snapshot: int) -> None:
        content = json.dumps({"nextSnapshot": int(next_snapshot)})
        write_text_atomic(self.file_io, self.path(consumer_id), content, durable=True)

    def check_writable(self) -> None:
        """Fail before the first row, not after it: a consumer that cannot save its position would print rows
        and then stop (and print them again on every restart). Writes and removes a probe file."""
        import uuid

        directory = consumer_directory(self.manager)
        probe = f"{directory}/.writable-{uuid.uuid4().hex[:8]}"  # a dot name: never listed as a consumer
        try:
            write_text_atomic(self.file_io, probe, "")
            remove_file(self.file_io, probe)
        except OSError as e:
            raise PaimonTailError(f"cannot write consumer positions in {directory}: "
                                  f"{e.strerror or type(e).__name__}",
                                  hint="--consumer-id needs write access to the table directory") from e

    def reset(self, consumer_id: str, next_snapshot: int) -> None:
        """``set``, for a person: the position must be a kept snapshot or the next one to be committed (beyond
        it the consumer would wait for snapshots that may never come, and list as 0 behind)."""
        snapshots = self.table.snapshot_manager()
        latest = snapshots.get_latest_snapshot()
        latest_id = latest.id if latest is not None else 0
        if next_snapshot > latest_id + 1:
            raise UsageError(f"--to {next_snapshot} is beyond the next snapshot to be committed",
                             hint=f"latest is {latest_id}: use --to {latest_id + 1} or less")
        from ..storage.snapshots import SnapshotFiles

        files = SnapshotFiles(snapshots)  # (an unreadable EARLIEST hint is no hint, as in Paimon)
        try:
            earliest = files.earliest_id() if latest is not None else None
        finally:
            files.close()
        if earliest is not None and next_snapshot < earliest:
            raise SnapshotExpired(f"--to {next_snapshot}: snapshot {next_snapshot} has expired",
                                  hint=f"earliest kept is {earliest}")
        self.set(consumer_id, next_snapshot)

    def delete(self, consumer_id: str) -> bool:
        path = self.path(consumer_id)
        existed = self.file_io.exists(path)
        self.manager.delete_consumer(consumer_id)
        return existed

