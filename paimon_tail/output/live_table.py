"""The terminal view.

* A live follow: a rich live table of the newest rows, with a status footer (and a catch-up progress bar); for
  several tables, one section per table. Only the rows that fit on the screen are turned into text; everything
  else stays in Arrow. Columns that do not fit the width are named under the table, not squeezed to ``a…``.
* A follow with an end (``-e``, ``--until``, ``-n``): every row is printed as a table in pieces that scroll into
  the terminal's history, like psql's result or kcat's lines, under a live footer whose last frame says done.

The footer's rate is over the last seconds, and a table with no commit for a while says so ("idle: no commit for
40 s"), see ``status.py``.

Why one module: the three renderers share the row window, the footer and the terminal's measurements; apart,
each would reach into the others' private helpers.
"""
from __future__ import annotations

import collections
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pyarrow as pa
from rich.console import Console, Group
from rich.progress_bar import ProgressBar
from rich.style import Style
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from .base import Renderer
from .pipe_console import PipeConsole
from .status import Pace, state
from .terminal_tables import (GAP, NARROW_GAP, Lines, RecordLines, aligned, fitting_columns, hidden_note, natural_width,
                              rule, width_of)
from .plain import short_time, text
from .values import plain_rows

if TYPE_CHECKING:
    from ..stream.follower import FollowBatch

ROW_KIND_STYLES = {"-D": "red", "-U": "dim", "+U": "yellow"}
_STYLES = {name: Style.parse(name) for name in ("bold", "dim", "bold cyan")} | \
    {kind: Style.parse(style) for kind, style in ROW_KIND_STYLES.items()}
# a printed row stays one line, and a value cannot move the cursor or recolour the terminal: control characters
# are shown escaped (the rows are written as segments, which rich does not sanitise as it does a Text)
_VISIBLE = {c: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(chr(c), f"\\x{c:02x}") for c in (*range(32), 127)}


def _text_rows(batch: pa.RecordBatch) -> List[List[str]]:
    names = batch.schema.names
    times = {f.name for f in batch.schema if pa.types.is_timestamp(f.type)}
    return [[short_time(row[c]) if c in times else text(row[c]) for c in names] for row in plain_rows(batch)]


def _row_style(columns: List[str], row: List[str]) -> Optional[str]:
    return ROW_KIND_STYLES.get(row[0]) if columns and columns[0] == "_row_kind" else None


def _column_styles(columns) -> Dict[str, Optional[str]]:
    return {name: "magenta" if name.startswith("_") else None for name in columns}


class RowWindow:
    """The newest rows of one table as text, at most ``capacity``; new columns (a schema change) start afresh.

    Column widths only grow (the widest cell seen), so the view does not jump as rows come and go."""

    def __init__(self, capacity: int) -> None:
        self.rows: collections.deque = collections.deque(maxlen=capacity)
        self.columns: List[str] = []
        self.widths: Dict[str, int] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        if names != self.columns:
            self.columns = list(names)
            self.rows.clear()
            self.widths = {}
        rows = _text_rows(batch.slice(max(0, batch.num_rows - self.rows.maxlen)))
        self.rows.extend(rows)
        for i, name in enumerate(names):
            self.widths[name] = max(self.widths.get(name, 0), natural_width(name, [r[i] for r in rows]))

    def table(self, title: str = "", limit: Optional[int] = None, width: Optional[int] = None
              ) -> Tuple[Table, List[str]]:
        """The table of the newest rows that fits ``width`` cells, and the columns left out."""
        columns = self.columns or ["(waiting for rows)"]
        shown = fitting_columns(columns, self.widths, width) if width else list(columns)
        table = Table(title=title or None, expand=False, show_edge=True, header_style="bold cyan")
        styles = _column_styles(shown)
        for name in shown:
            w = self.widths.get(name)
            if w is not None and width is not None:
                w = min(w, max(1, width - 4))  # a first column wider than the terminal
            table.add_column(name, style=styles[name], overflow="ellipsis", no_wrap=True, width=w)
        rows = list(self.rows)
        if limit is not None:
            rows = rows[-limit:] if limit > 0 else []
        for row in rows:
            table.add_row(*row[:len(shown)], style=_row_style(self.columns, row))
        return table, columns[len(shown):] if self.columns else []


def _ending() -> str:
    """How the view ends, asked while it closes: ``done``, or ``stopped`` (Ctrl-C, an error) when an exception
    is on its way out (``close`` runs in the follow's ``finally``)."""
    return "stopped" if sys.exc_info()[1] is not None else "done"


class _Footer:
    """The status line under the rows: compact when the terminal is narrow."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.pace = Pace(stats) if stats is not None else None
        self.ended: Optional[str] = None

    def state(self) -> Tuple[str, str]:
        """(what the follow is doing, its colour): live, idle: no commit for 40 s, catching up; done, stopped."""
        s = self.stats
        if self.ended == "done":
            return ("done: caught up" if s.lag_snapshots == 0 else "done"), "green"
        if self.ended == "stopped":
            return "stopped", "yellow"
        text = state(s, self.pace.idle())
        return text, {"live": "green", "catching up": "yellow"}.get(text, "cyan")

    def single(self, width: int, rows: Optional[int] = None, reading: Optional[int] = None) -> Text:
        """``rows``: what the view printed, when that is what to count (every row of a follow with an end);
        ``reading``: the snapshot of the last rows printed, when the follow stopped within it (``-c``)."""
        s = self.stats
        rows = s.rows if rows is None else rows
        if s.outage is not None:
            return Text(f"{s.outage.describe()} · retrying · snapshot "
                        f"{s.snapshot_id if s.snapshot_id is not None else '-'} · {rows:,} rows", style="bold red")
        if s.waiting_for_first_snapshot and s.snapshot_id is None and self.ended is None:
            return Text("waiting for the first snapshot of an empty table…", style="yellow")
        rate = self.pace.rate()
        state_text, style = self.state()
        snap = s.snapshot_id if s.snapshot_id is not None else "-"
        if reading is not None:
            snap = f"{reading} (part)"  # some of its rows printed, not yet (or, stopped by -c, never) all
        latest = s.latest_id if s.latest_id is not None else "-"
        return Text(_fitting(width, [
            [f"snapshot {snap}", f"latest {latest}", f"lag {s.lag_snapshots} snapshots ({s.lag_seconds:.1f} s)",
             f"{rows:,} rows", f"{rate:,.0f} rows/s", state_text] + ([s.mechanism] if s.mechanism else []),
            [f"snapshot {snap}/{latest}", f"lag {s.lag_snapshots} ({s.lag_seconds:.1f} s)", f"{rows:,} rows",
             f"{rate:,.0f}/s", state_text],
            [f"snapshot {snap}/{latest}", f"{rows:,} rows", state_text]]), style=style)

    def many(self, width: int, windows: int, hidden: int = 0, rows: Optional[int] = None) -> Text:
        s = self.stats
        rows = s.rows if rows is None else rows
        quiet = len(s.tables) - windows
        if s.outage is not None:
            return Text(f"{s.outage.describe()} · retrying · {len(s.tables)} tables · {rows:,} rows",
                        style="bold red")
        rate = self.pace.rate()
        state_text, style = self.state()
        live = [] if self.ended else [f"{s.tables_caught_up} live"]  # at the end, the state says it for all
        parts = [f"{len(s.tables)} tables", *live, f"lag {s.lag_snapshots} snapshots ({s.lag_seconds:.1f} s)",
                 f"{rows:,} rows", f"{rate:,.0f} rows/s", state_text] + ([s.mechanism] if s.mechanism else [])
        if hidden or quiet:
            parts.append(f"not shown: {hidden} more, {quiet} without rows yet")
        tables = f"{len(s.tables)} tables" + ("" if self.ended else f" ({s.tables_caught_up} live)")
        not_shown = [f"{hidden + quiet} not shown"] if hidden or quiet else []
        return Text(_fitting(width, [
            parts,
            [tables, f"lag {s.lag_snapshots} ({s.lag_seconds:.1f} s)", f"{rows:,} rows", f"{rate:,.0f}/s",
             state_text] + not_shown,
            [tables, f"{rows:,} rows", state_text]]), style=style)


def _fitting(width: int, forms: List[List[str]]) -> str:
    """The first of ``forms`` (each shorter than the one before) whose parts, joined, fit ``width``."""
    for parts in forms:
        line = " · ".join(parts)
        if cell_len(line) <= width:
            return line
    return line


def _progress(stats: Any, width: int) -> Optional[ProgressBar]:
    s = stats
    if s is None or s.caught_up or getattr(s, "tables", None) is not None or s.outage is not None \
            or s.latest_id is None or s.start_id is None:
        return None
    total = s.latest_id - s.start_id + 1
    if total < 3:
        return None
    done = (s.snapshot_id or s.start_id - 1) - s.start_id + 1
    return ProgressBar(total=total, completed=max(0, done), width=min(60, width))


class LiveTableRenderer(Renderer):
    def __init__(self, stats: Any = None, title: str = "", console: Optional[Console] = None,
                 max_rows: Optional[int] = None, auto_start: bool = True, label: str = "") -> None:
        self.console = console or PipeConsole()
        super().__init__(self.console.file)
        self.stats = stats
        self.title = title
        self.label = label  # the table's name at the start of the footer, in place of a title (a line less)
        self._max_rows = max_rows
        self._window = RowWindow(self._capacity())
        self._live = None
        self.auto_start = auto_start
        self.footer = _Footer(stats) if stats is not None else None

    def _capacity(self) -> int:
        if self._max_rows:
            return self._max_rows
        return max(3, self.console.size.height - 9)

    def start(self) -> None:
        from rich.live import Live

        if self._live is None:
            self._live = Live(get_renderable=self.render, console=self.console, refresh_per_second=8,
                              transient=False, redirect_stdout=False, redirect_stderr=False)
            self._live.start()

    def write(self, batch: pa.RecordBatch) -> None:
        if self.auto_start:
            self.start()
        if batch.num_rows == 0:
            return
        self._window.add(batch)
        self.rows += batch.num_rows

    def flush(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def notice(self, message: str) -> bool:
        return _notice_above(self._live, message)

    def close(self) -> None:
        if self.footer is not None:
            self.footer.ended = _ending()
        _stop(self._live)
        self._live = None

    def render(self):
        width = self.console.size.width
        table, hidden = self._window.table(self.title, width=width)
        parts: list = [table]
        note = hidden_note(hidden, width)
        if note is not None:
            parts.append(note)
        parts.append(self._footer(width))
        bar = _progress(self.stats, width)
        if bar is not None:
            parts.append(bar)
        return Group(*parts)

    def _footer(self, width: int) -> Text:
        if self.footer is None:
            return Text(f"{self.rows:,} rows", style="dim")
        if self.label:
            return Text.assemble((self.label, "bold"), " · ", self.footer.single(width - cell_len(self.label) - 3))
        return self.footer.single(width)


class MultiLiveTableRenderer(LiveTableRenderer):
    """Several tables: one section per table (its newest rows, titled with its snapshot and lag), the most
    recently changed first, as many as the screen holds; a footer with the totals over every table."""

    SECTION_ROWS = 5

    def __init__(self, stats: Any = None, title: str = "", console: Optional[Console] = None,
                 max_rows: Optional[int] = None, auto_start: bool = True) -> None:
        super().__init__(stats, title, console, max_rows or self.SECTION_ROWS, auto_start)
        self._windows: Dict[str, RowWindow] = {}  # in order of the last change: the newest last

    def write_item(self, item: "FollowBatch") -> None:
        if self.auto_start:
            self.start()
        if item.batch.num_rows == 0:
            return
        name = item.table.full_name
        window = self._windows.pop(name, None) or RowWindow(self._max_rows)
        self._windows[name] = window
        window.add(item.batch)
        self.rows += item.batch.num_rows

    def render(self):
        width = self.console.size.width
        names = list(reversed(self._windows))
        budget = max(8, self.console.size.height - 3)  # footer, an event line, the cursor
        shown = names[:max(1, budget // 6)]  # a section: title, borders, header and at least one row
        limit = max(1, min(self._max_rows, budget // max(1, len(shown)) - 5))
        parts: list = []
        for name in shown:  # the title above the table, not in it: a narrow table would wrap it
            table, hidden = self._windows[name].table("", limit, width)
            parts += [self._section_title(name), table]
            note = hidden_note(hidden, width)
            if note is not None:
                parts.append(note)
        if not parts:
            parts.append(Text("(waiting for rows)", style="dim"))
        parts.append(self._footer(width, len(names) - len(shown)))
        if self.stats is not None and self.stats.events:
            parts.append(Text(self.stats.events[-1], style="dim"))
        return Group(*parts)

    def _section_title(self, name: str) -> Text:
        title = Text(name, style="bold")
        s = self.stats.tables.get(name) if self.stats is not None else None
        if s is not None:
            title.append(f" · snapshot {s.snapshot_id if s.snapshot_id is not None else '-'}"
                         f" · lag {s.lag_snapshots} ({s.lag_seconds:.1f} s) · {s.rows:,} rows"
                         f" · {'live' if s.caught_up else 'catching up'}", style="dim")
        return title

    def _footer(self, width: int, hidden: int = 0) -> Text:
        if self.footer is None:
            return Text(f"{self.rows:,} rows", style="dim")
        return self.footer.many(width, len(self._windows), hidden)


class ScrollingTableRenderer(Renderer):
    """A follow with an end on a terminal: every row printed, in pieces of up to ``PIECE_ROWS`` rows that scroll
    into the terminal's history, nothing dropped. A table while the rows fit the width (its header again when the
    table, its columns or their widths change), else a record per row with a line per column (psql's expanded
    display), every value whole. The footer stays live below them and its last frame says ``done`` (or
    ``stopped``)."""

    PIECE_ROWS = 256

    def __init__(self, stats: Any = None, title: str = "", console: Optional[Console] = None,
                 many_tables: bool = False) -> None:
        self.console = console or PipeConsole()
        super().__init__(self.console.file)
        self.stats = stats
        self.title = title
        self.many_tables = many_tables
        self.footer = _Footer(stats) if stats is not None else None
        self._pending: List[List[str]] = []
        self._key: Optional[Tuple[str, Tuple[str, ...]]] = None  # (table, columns) of the pending rows
        self._printed: Optional[tuple] = None  # (table, columns, widths) of the last piece printed
        self._widths: Dict[Tuple[str, Tuple[str, ...]], Optional[Tuple[List[int], str]]] = {}  # None: records
        self._room: Dict[Tuple[str, Tuple[str, ...]], List[int]] = {}  # each column's headroom (_headroom)
        self._seen: Dict[Tuple[str, Tuple[str, ...]], List[int]] = {}  # each column's widest cell so far
        self._records = 0  # records printed, to number those whose first value is too long to title them
        self._reading: Optional[int] = None  # the snapshot whose rows are printed in part so far
        self._live = None
        self._loop = None
        self._timer = None

    def start(self) -> None:
        """The footer, redrawn 8 times a second by the event loop that prints the rows: rich's own refresh thread
        would race the prints above the footer (each thread renders into a buffer of its own) and leave a stale
        footer line in the history."""
        import asyncio

        from rich.live import Live

        if self._live is None and self.stats is not None:
            self._live = Live(get_renderable=self._view, console=self.console, auto_refresh=False, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # driven without an event loop: the footer changes as rows are printed
                return
            self._tick()

    def _tick(self) -> None:
        if self._live is not None:
            self._live.refresh()
            self._timer = self._loop.call_later(0.125, self._tick)

    def write_item(self, item: "FollowBatch") -> None:
        self._reading = None if item.last_in_snapshot else item.snapshot_id
        self._add(item.table.full_name, item.batch)

    def write(self, batch: pa.RecordBatch) -> None:
        self._add(self.title, batch)

    def _add(self, name: str, batch: pa.RecordBatch) -> None:
        self.start()
        key = (name, tuple(batch.schema.names))
        if key != self._key:
            self._print_pending()
            self._key = key
            self._room.setdefault(key, _headroom(batch.schema))
        for offset in range(0, batch.num_rows, self.PIECE_ROWS):
            self._pending.extend([[c if c.isprintable() else c.translate(_VISIBLE) for c in row]
                                  for row in _text_rows(batch.slice(offset, self.PIECE_ROWS))])
            if len(self._pending) >= self.PIECE_ROWS:
                self._print_pending()
        self.rows += batch.num_rows

    def _print_pending(self) -> None:
        if not self._pending or self._key is None:
            return
        key = self._key
        name, columns = key
        layout = self._layout(key)
        out: List[tuple] = []
        if self.many_tables and (self._printed is None or self._printed[0] != name):
            out.append((name, _STYLES["bold"]))
        kinds = columns[0] == "_row_kind"
        if layout is None:
            records = RecordLines(columns, self.console.size.width)
            for row in self._pending:
                self._records += 1
                lines = records.lines(row, self._records)
                style = _STYLES.get(row[0]) if kinds else None
                out.append((lines[0], _STYLES["dim"]))
                out.extend((line, style) for line in lines[1:])
        else:
            widths, gap = layout
            if self._printed != (name, columns, layout):  # the header again when the columns or widths change
                out += [(aligned(columns, widths, gap), _STYLES["bold cyan"]), (rule(widths, gap), _STYLES["dim"])]
            out.extend((aligned(row, widths, gap), _STYLES.get(row[0]) if kinds else None) for row in self._pending)
        self.console.print(Lines(out), soft_wrap=True, crop=False)
        self._printed = (name, columns, layout)
        self._pending = []

    def _layout(self, key) -> Optional[Tuple[List[int], str]]:
        """The pending rows' column widths and the gap between columns, or None for records, from the first rows
        that do not fit the terminal on. A column is as wide as its widest cell so far plus some headroom
        (``_headroom``) while the terminal has room for it, so later rows seldom need a wider column and the
        header is seldom printed again (without it, a status column went from "placed" to "shipped" to
        "delivered": three headers in 40 rows). Before records, the gap narrows from three cells to two."""
        columns = key[1]
        natural = [max([width_of(c), *(width_of(r[i]) for r in self._pending)]) for i, c in enumerate(columns)]
        needed = self._seen[key] = [max(a, b) for a, b in zip(self._seen.get(key, natural), natural)]
        layout = self._widths.get(key, ([0] * len(columns), GAP))
        if layout is None:
            return None
        if all(n <= w for n, w in zip(natural, layout[0])):
            return layout
        room = [_room_for(r, n) for r, n in zip(self._room.get(key) or [0] * len(columns), needed)]
        layout = None
        for gap in (GAP, NARROW_GAP):  # the narrow gap when it leaves more headroom, or is all that fits
            slack = self.console.size.width - sum(needed) - len(gap) * (len(columns) - 1)
            if slack >= 0 and (layout is None or slack < sum(room) and slack > sum(layout[0]) - sum(needed)):
                layout = (_widen(needed, room, slack), gap)
                if slack >= sum(room):
                    break
        self._widths[key] = layout
        return layout

    def flush(self) -> None:
        self._print_pending()
        if self._live is not None:
            self._live.refresh()

    def notice(self, message: str) -> bool:
        self._print_pending()  # the rows before it, then the notice, above the footer
        return _notice_above(self._live, message)

    def close(self) -> None:
        if self.footer is not None:
            self.footer.ended = _ending()
        if self._timer is not None:
            self._timer.cancel()
        self._print_pending()
        _stop(self._live)
        self._live = None

    def _view(self):
        width = self.console.size.width
        line = self.footer.many(width, len(self.stats.tables), rows=self.rows) \
            if getattr(self.stats, "tables", None) is not None else \
            self.footer.single(width, rows=self.rows, reading=self._reading)
        bar = _progress(self.stats, width) if self.footer.ended is None else None
        return Group(line, bar) if bar is not None else line


_TEXT = -1  # a column of text: its headroom grows with its width (_room_for)


def _headroom(schema: pa.Schema) -> List[int]:
    """Cells a column of rows printed as they come gets beyond its widest value so far: none for values of one
    width (times, dates, booleans, row kinds), two digits for numbers, more for text (``_room_for``)."""
    room = []
    for f in schema:
        t = f.type
        if f.name == "_row_kind" or pa.types.is_temporal(t) or pa.types.is_boolean(t):
            room.append(0)
        elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            room.append(2)
        else:
            room.append(_TEXT)
    return room


def _room_for(room: int, width: int) -> int:
    return max(3, width // 2) if room == _TEXT else room


def _widen(widths: List[int], room: List[int], slack: int) -> List[int]:
    """``widths`` with up to ``slack`` more cells, shared in proportion to each column's ``room`` (the
    remainder to those with the most room), never more than its room."""
    total = sum(room)
    if total <= slack:
        return [w + r for w, r in zip(widths, room)]
    extra = [r * slack // total for r in room]
    for i in sorted(range(len(room)), key=lambda i: -room[i])[:slack - sum(extra)]:
        extra[i] += 1
    return [w + e for w, e in zip(widths, extra)]


def _notice_above(live, message: str) -> bool:
    """``message`` printed above an active view (its footer redrawn below it), when stderr is the terminal the view
    is on: a line written to stderr meanwhile would land in the middle of the footer."""
    import os
    import sys

    if live is None or not live.console.is_terminal:
        return False
    try:
        if not (sys.stderr.isatty() and os.path.samestat(os.fstat(sys.stderr.fileno()), os.fstat(1))):
            return False
    except (OSError, ValueError, AttributeError):
        return False
    live.console.print(Text(message, style="yellow"), soft_wrap=True, crop=False)
    return True


def _stop(live) -> None:
    """The last frame, and the line it is on ended (rich ends it on a terminal only: piped, the next output would
    continue it)."""
    if live is None:
        return
    live.refresh()
    live.stop()
    if not live.console.is_terminal:
        live.console.line()




__all__ = ["LiveTableRenderer", "MultiLiveTableRenderer", "RowWindow", "ScrollingTableRenderer"]
