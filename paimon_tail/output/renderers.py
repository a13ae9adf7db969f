"""Renderers: Arrow batches → bytes on a stream. One class per format; ``make_renderer`` picks one.

Every renderer writes whole rows and ``flush()`` pushes them to the OS, which is what the follower's consumer
position waits for. A schema change mid-stream (the table evolved) is handled per format: JSON lines simply carry
the new fields; CSV/TSV print a new header line; Arrow closes the IPC stream and starts a new one on the same
pipe (read them with a loop over ``pa.ipc.open_stream`` until EOF, see docs/follow.md).

Several tables followed together (``table_column=True``): every row gets ``_table`` (``db.table``) as its first
column; CSV/TSV print a header line and Arrow starts a new IPC stream whenever the columns change, i.e. when the
next batch comes from a table with other columns. The change-event formats (Debezium, Canal, Maxwell) are in
``cdc.py``, the live table in ``live_table.py``; both build on ``base.py`` (the ``Renderer`` contract) and
``polars_io.py``, which this module imports too, so nothing here imports back.
"""
from __future__ import annotations

import sys
from typing import BinaryIO, Optional

import pyarrow as pa

from ..errors import UsageError
from .base import TABLE_COLUMN, Renderer, with_table_column
from .formats import CDC_FORMATS, FORMATS, choose_format
from .polars_io import polars_write
from .values import dumps, plain_rows, polars_can_write, to_polars


class JsonLinesRenderer(Renderer):
    thread_safe = True

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if polars_can_write(batch.schema):
            polars_write(to_polars(batch).write_ndjson, self.stream)
        else:
            self.stream.write("".join(dumps(row) + "\n" for row in plain_rows(batch)).encode("utf-8"))
        self.rows += batch.num_rows


class DelimitedRenderer(Renderer):
    thread_safe = True

    def __init__(self, stream: BinaryIO, separator: str = ",", table_column: bool = False) -> None:
        super().__init__(stream, table_column)
        self.separator = separator
        self._schema: Optional[pa.Schema] = None

    def write(self, batch: pa.RecordBatch) -> None:
        header = self._schema is None or not batch.schema.equals(self._schema)
        if batch.num_rows == 0 and not header:
            return
        self._schema = batch.schema
        df = to_polars(batch, nested_as_json=True)
        if not polars_can_write(batch.schema):
            # maps (and oddly nested values): write each as JSON text through the Python path
            import polars as pl

            rows = plain_rows(batch)
            df = df.with_columns([
                pl.Series(f.name, [None if r[f.name] is None else dumps(r[f.name]) for r in rows], pl.String)
                for f in batch.schema if pa.types.is_map(f.type)
            ])
        polars_write(lambda out: df.write_csv(out, include_header=header, separator=self.separator), self.stream)
        self.rows += batch.num_rows


class ArrowStreamRenderer(Renderer):
    thread_safe = True

    def __init__(self, stream: BinaryIO, table_column: bool = False) -> None:
        super().__init__(stream, table_column)
        self._writer: Optional[pa.ipc.RecordBatchStreamWriter] = None
        self._schema: Optional[pa.Schema] = None

    def write(self, batch: pa.RecordBatch) -> None:
        if self._writer is not None and not batch.schema.equals(self._schema):
            self._writer.close()  # end of stream marker; a new stream with the new schema follows
            self._writer = None
        if self._writer is None:
            self._schema = batch.schema
            self._writer = pa.ipc.new_stream(self.stream, batch.schema)
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def begin(self, schema: pa.Schema) -> None:
        """Write the schema up front, so a reader can open the stream before the first row arrives."""
        if self.table_column and TABLE_COLUMN not in schema.names:
            schema = schema.insert(0, pa.field(TABLE_COLUMN, pa.string()))
        if self._writer is None:
            self._schema = schema
            self._writer = pa.ipc.new_stream(self.stream, schema)
            self.stream.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.flush()


def make_renderer(fmt: str, stream: Optional[BinaryIO] = None, *, many_tables: bool = False,
                  key_delimiter: Optional[str] = None, **table_options) -> Renderer:
    """A renderer for ``fmt`` (after ``choose_format``) writing to ``stream`` (default: stdout's bytes).

    ``many_tables``: rows of several tables interleave (``_table`` column; the live view gets a section per table).
    ``bounded`` (the table format): the follow has an end (``-e``, ``--until``, ``-n``), so every row is printed
    rather than a live window of the newest.
    ``key_delimiter``: change-event formats only, each line is ``KEY<delimiter>EVENT`` (kcat -K).
    """
    stream = stream if stream is not None else sys.stdout.buffer
    if key_delimiter is not None and fmt not in CDC_FORMATS:
        raise UsageError("--key-delimiter goes with --format debezium, canal or maxwell")
    if fmt == "jsonl":
        return JsonLinesRenderer(stream, many_tables)
    if fmt == "csv":
        return DelimitedRenderer(stream, ",", many_tables)
    if fmt == "tsv":
        return DelimitedRenderer(stream, "\t", many_tables)
    if fmt == "arrow":
        return ArrowStreamRenderer(stream, many_tables)
    if fmt in CDC_FORMATS:
        from .cdc import change_renderer

        return change_renderer(fmt, stream, key_delimiter)
    if fmt == "table":
        from .live_table import LiveTableRenderer, MultiLiveTableRenderer, ScrollingTableRenderer

        if table_options.pop("bounded", False):  # a follow with an end: every row, scrolling
            return ScrollingTableRenderer(many_tables=many_tables, **table_options)
        return MultiLiveTableRenderer(**table_options) if many_tables else LiveTableRenderer(**table_options)
    raise UsageError(f"unknown format {fmt!r}")


__all__ = ["CDC_FORMATS", "FORMATS", "TABLE_COLUMN", "Renderer", "choose_format", "make_renderer", "with_table_column"]
