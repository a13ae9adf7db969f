"""Consumer positions in Paimon's own consumer files: ``<table>/consumer/consumer-<id>``, ``{"nextSnapshot": N}``.

The same files Flink and Spark readers keep, so snapshot expiration (which honours consumers) never removes a
snapshot we still have to read. pypaimon's ``ConsumerManager`` overwrites in place; a crash mid-write would
leave a torn file, so writes here go to a temporary file that is renamed over the old one (atomic on a local
file system and on HDFS; object stores replace objects whole).
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Dict, Optional

from pypaimon.consumer.consumer_manager import ConsumerManager

from ..errors import UsageError


class ConsumerStore:
    def __init__(self, table) -> None:
        self.table = table
        self.file_io = table.file_io
        self.manager = ConsumerManager(table.file_io, table.table_path)

    @staticmethod
    def validate_id(consumer_id: str) -> str:
        try:
            ConsumerManager._validate_consumer_id(consumer_id)
        except ValueError as e:
            raise UsageError(f"bad consumer id {consumer_id!r}: {e}") from None
        return consumer_id

    def path(self, consumer_id: str) -> str:
        return self.manager._consumer_path(self.validate_id(consumer_id))

    def get(self, consumer_id: str) -> Optional[int]:
        """The next snapshot this consumer will read, or None if it has no position yet."""
        consumer = self.manager.consumer(self.validate_id(consumer_id))
        return consumer.next_snapshot if consumer else None

    def all(self) -> Dict[str, int]:
        return dict(sorted(self.manager.consumers().items()))

    def set(self, consumer_id: str, next_snapshot: int) -> None:
        path = self.path(consumer_id)
        content = json.dumps({"nextSnapshot": int(next_snapshot)})
        local = _local_path(path)
        if local is not None:
            os.makedirs(os.path.dirname(local), exist_ok=True)
            tmp = f"{os.path.dirname(local)}/.{os.path.basename(local)}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, local)
            return
        directory, _, name = path.rpartition("/")
        tmp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"  # a dot name is never listed as a consumer
        self.file_io.write_file(tmp, content, False)
        if self.file_io.exists(path):
            self.file_io.delete(path, False)
        self.file_io.rename(tmp, path)

    def delete(self, consumer_id: str) -> bool:
        path = self.path(consumer_id)
        existed = self.file_io.exists(path)
        self.manager.delete_consumer(consumer_id)
        return existed


def _local_path(path: str) -> Optional[str]:
    if path.startswith("file://"):
        return path[len("file://"):]
    if "://" not in path:
        return path
    return None
