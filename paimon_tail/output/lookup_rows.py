"""Lookup answers → a command's ``Output``, in request order, for every lookup path.

One writer for both kinds of answer: a ``LookupResult`` (Arrow rows, ``LookupClient``) and the ``FewRows`` of a few
keys looked up without pyarrow (``service/client/few_keys.py``: Python values, JSON lines or the terminal table
only). Keys not found and keys the service could not answer are counted by ``missing`` (the command's
``--missing`` policy: ``add``, ``add_failed``, ``printed``) and, when it prints them, answered in place: ``null``
in JSON lines, the key columns alone in the other formats. The terminal table is drawn once, at the end.

Imports pyarrow only when an Arrow answer is written.
"""
from __future__ import annotations

import io
from typing import Any, List

from .command_output import Output


class LookupRows:
    def __init__(self, out: Output, missing) -> None:
        self.out = out
        self.fmt = out.fmt
        self.missing = missing
        self._renderer = None  # the row renderer of a non-table format, made with the first Arrow answer
        self._tables: List[Any] = []  # Arrow answers for the terminal table
        self._names: List[str] = []
        self._values: List[List[Any]] = []  # Python-value rows for the terminal table
        self._schema = None

    def _count(self, answer) -> None:
        self.missing.add(len(answer), answer.missing, answer.key)
        if answer.failed:
            self.missing.add_failed(answer.failed, answer.key)

    def _rows_renderer(self):
        if self._renderer is None:
            self._renderer = self.out.renderer()
        return self._renderer

    # -- a few keys as Python values ----------------------------------------------------------------------
    def write_values(self, few) -> None:
        """``FewRows``: the bytes ``write`` gives the same answer as Arrow (``plain.py`` matches polars)."""
        self._count(few)
        rows = dict(zip(few.found, few.rows))
        shown = [i for i in range(len(few)) if i in rows or self.missing.printed]
        if self.fmt == "jsonl":
            from .plain import json_line

            lines = [json_line(few.columns, rows[i]) if i in rows else "null" for i in shown]
            if lines:
                self.out.stream.write("\n".join(lines) + "\n")
            return
        self._names = [name for name, _ in few.columns]
        self._values += [rows[i] if i in rows else [few.key(i).get(n) for n in self._names] for i in shown]

    # -- Arrow answers ------------------------------------------------------------------------------------
    def write(self, result) -> None:
        """A ``LookupResult``."""
        rows = result.rows
        self._schema = rows.schema
        self._count(result)
        if self.missing.printed and result.missing:
            if self.fmt == "jsonl":
                return self._jsonl_with_nulls(result)
            rows = _with_missing_keys(result)
        if self.fmt == "table":
            self._tables.append(rows)
            return
        renderer = self._rows_renderer()
        for batch in rows.to_batches():
            renderer.write(batch)
        renderer.flush()

    def _jsonl_with_nulls(self, result) -> None:
        """JSON lines, ``null`` for each key not found: the rows rendered as usual, then interleaved."""
        from .renderers import make_renderer

        buf = io.BytesIO()
        renderer = make_renderer("jsonl", buf)
        for batch in result.rows.to_batches():
            renderer.write(batch)
        lines: List[bytes] = [b"null"] * len(result)
        for pos, line in zip(result.found, buf.getvalue().split(b"\n")):
            lines[pos] = line
        if result.failed:  # no line for a key the service could not answer (it is named on stderr)
            lines = [line for pos, line in enumerate(lines) if pos not in result.failed]
        out = self._rows_renderer()
        out.stream.write(b"\n".join(lines) + b"\n")
        out.flush()

    def close(self) -> None:
        if self._renderer is not None:
            if self.fmt == "arrow" and self._renderer.rows == 0 and self._schema is not None:
                self._renderer.begin(self._schema)  # an empty answer is still a readable stream
            self._renderer.close()
            return
        if self._tables:
            import pyarrow as pa

            rows = pa.concat_tables(self._tables)
            self._print(rows.schema.names, [list(row.values()) for row in rows.to_pylist()])
        elif self._values:
            self._print(self._names, self._values)

    def _print(self, names: List[str], rows: List[List[Any]]) -> None:
        from .plain import cell

        self.out.report(names, [[cell(v) for v in row] for row in rows])


def _with_missing_keys(result):
    """The rows with one row per requested key: a key not found shows its key columns, the rest null."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows, keys = result.rows, result.key_table
    position = np.full(len(result), -1, dtype=np.int64)
    position[np.asarray(result.found, dtype=np.int64)] = np.arange(len(result.found))
    found = pa.array(position >= 0)
    taken = rows.take(pa.array(position, mask=position < 0))
    columns = [pc.if_else(found, taken.column(f.name), keys.column(f.name).cast(f.type))
               if f.name in keys.column_names else taken.column(f.name) for f in rows.schema]
    table = pa.Table.from_arrays(columns, schema=rows.schema)
    if result.failed:  # no row for a key the service could not answer (it is named on stderr)
        keep = np.ones(len(result), dtype=bool)
        keep[list(result.failed)] = False
        table = table.filter(pa.array(keep))
    return table


__all__ = ["LookupRows"]
