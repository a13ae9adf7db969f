"""The ``Renderer`` contract every output format implements (``renderers.py``, ``cdc.py``, ``live_table.py``), and
the ``_table`` column of several tables followed together. Imports no renderer, so none imports back."""
from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO

import pyarrow as pa

if TYPE_CHECKING:
    from ..stream.follower import FollowBatch

TABLE_COLUMN = "_table"


def with_table_column(batch: pa.RecordBatch, name: str) -> pa.RecordBatch:
    """``_table`` first: which table each row came from, when several are followed together."""
    column = pa.array([name] * batch.num_rows, pa.string())
    return pa.RecordBatch.from_arrays([column, *batch.columns],
                                      schema=batch.schema.insert(0, pa.field(TABLE_COLUMN, pa.string())))


class Renderer:
    # write_item() may run in a worker thread (one at a time, in order): tail() renders big batches off the loop
    thread_safe = False

    def __init__(self, stream: BinaryIO, table_column: bool = False) -> None:
        self.stream = stream
        self.rows = 0
        self.table_column = table_column

    def write_item(self, item: "FollowBatch") -> None:
        """A follower's batch. Row formats write its rows (tagged with ``_table`` when asked); formats that need
        more than the rows (the change-event envelopes: snapshot, commit time, table, full or delta) override it."""
        batch = item.batch
        if self.table_column:
            batch = with_table_column(batch, item.table.full_name)
        self.write(batch)

    def write(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.flush()

    def notice(self, message: str) -> bool:
        """Say ``message`` (a notice of the follow: an overwrite skipped, a gap, a schema change) where the output
        is read, when the output is a view on the terminal that stderr shares; False: the caller writes it to
        stderr, as for every other format."""
        return False


__all__ = ["Renderer", "TABLE_COLUMN", "with_table_column"]
