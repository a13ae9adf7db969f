"""The terminal view: a rich live table of the newest rows, with a status footer (and a catch-up progress bar);
for several tables, one section per table.

Only the rows that fit on the screen are turned into text; everything else stays in Arrow.
"""
from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Any, Dict, Optional

import pyarrow as pa
from rich.console import Console, Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .renderers import Renderer
from .values import plain_rows, text

if TYPE_CHECKING:
    from ..stream.follower import FollowBatch


class RowWindow:
    """The newest rows of one table as text, at most ``capacity``; new columns (a schema change) start afresh."""

    def __init__(self, capacity: int) -> None:
        self.rows: collections.deque = collections.deque(maxlen=capacity)
        self.columns: list[str] = []

    def add(self, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        if names != self.columns:
            self.columns = list(names)
            self.rows.clear()
        tail = batch.slice(max(0, batch.num_rows - self.rows.maxlen))
        times = {f.name for f in batch.schema if pa.types.is_timestamp(f.type)}
        for row in plain_rows(tail):
            self.rows.append([_short_time(row[c]) if c in times else text(row[c]) for c in names])

    def table(self, title: str = "", limit: Optional[int] = None) -> Table:
        table = Table(title=title or None, expand=False, show_edge=True, header_style="bold cyan")
        for name in self.columns or ["(waiting for rows)"]:
            style = "magenta" if name.startswith("_") else None
            table.add_column(name, style=style, overflow="ellipsis", no_wrap=True, min_width=min(len(name), 12))
        rows = list(self.rows)
        if limit is not None:
            rows = rows[-limit:] if limit > 0 else []
        for row in rows:
            kind = row[0] if self.columns and self.columns[0] == "_row_kind" else ""
            style = {"-D": "red", "-U": "dim", "+U": "yellow"}.get(kind)
            table.add_row(*row, style=style)
        return table


class LiveTableRenderer(Renderer):
    def __init__(self, stats: Any = None, title: str = "", console: Optional[Console] = None,
                 max_rows: Optional[int] = None, auto_start: bool = True) -> None:
        self.console = console or Console()
        super().__init__(self.console.file)
        self.stats = stats
        self.title = title
        self._max_rows = max_rows
        self._window = RowWindow(self._capacity())
        self._live = None
        self.auto_start = auto_start

    def _capacity(self) -> int:
        if self._max_rows:
            return self._max_rows
        return max(3, self.console.size.height - 8)

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

    def close(self) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    def render(self):
        parts = [self._window.table(self.title), self._footer()]
        bar = self._progress()
        if bar is not None:
            parts.append(bar)
        return Group(*parts)

    def _footer(self) -> Text:
        s = self.stats
        if s is None:
            return Text(f"{self.rows:,} rows", style="dim")
        if s.outage is not None:
            return Text(f"{s.outage.describe()} · retrying · snapshot "
                        f"{s.snapshot_id if s.snapshot_id is not None else '-'} · {s.rows:,} rows", style="bold red")
        if s.waiting_for_first_snapshot and s.snapshot_id is None:
            return Text("waiting for the first snapshot of an empty table…", style="yellow")
        state = "live" if s.caught_up else "catching up"
        line = (f"snapshot {s.snapshot_id if s.snapshot_id is not None else '-'}"
                f" · latest {s.latest_id if s.latest_id is not None else '-'}"
                f" · lag {s.lag_snapshots} snapshots ({s.lag_seconds:.1f} s)"
                f" · {s.rows:,} rows · {s.rows_per_second:,.0f} rows/s · {state}")
        if s.mechanism:
            line += f" · {s.mechanism}"
        return Text(line, style="green" if s.caught_up else "yellow")

    def _progress(self) -> Optional[ProgressBar]:
        s = self.stats
        if s is None or s.caught_up or s.outage is not None or s.latest_id is None or s.start_id is None:
            return None
        total = s.latest_id - s.start_id + 1
        if total < 3:
            return None
        done = (s.snapshot_id or s.start_id - 1) - s.start_id + 1
        return ProgressBar(total=total, completed=max(0, done), width=min(60, self.console.size.width))


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
        names = list(reversed(self._windows))
        budget = max(8, self.console.size.height - 3)  # footer, an event line, the cursor
        shown = names[:max(1, budget // 6)]  # a section: title, borders, header and at least one row
        limit = max(1, min(self._max_rows, budget // max(1, len(shown)) - 5))
        parts: list = []
        for name in shown:  # the title above the table, not in it: a narrow table would wrap it
            parts += [self._section_title(name), self._windows[name].table("", limit)]
        if not parts:
            parts.append(Text("(waiting for rows)", style="dim"))
        parts.append(self._footer(len(names) - len(shown)))
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

    def _footer(self, hidden: int = 0) -> Text:
        s = self.stats
        if s is None:
            return Text(f"{self.rows:,} rows", style="dim")
        quiet = len(s.tables) - len(self._windows)
        if s.outage is not None:
            return Text(f"{s.outage.describe()} · retrying · {len(s.tables)} tables · {s.rows:,} rows",
                        style="bold red")
        line = (f"{len(s.tables)} tables · {s.tables_caught_up} live · lag {s.lag_snapshots} snapshots "
                f"({s.lag_seconds:.1f} s) · {s.rows:,} rows · {s.rows_per_second:,.0f} rows/s"
                f" · {'live' if s.caught_up else 'catching up'}")
        if s.mechanism:
            line += f" · {s.mechanism}"
        if hidden or quiet:
            line += f" · not shown: {hidden} more, {quiet} without rows yet"
        return Text(line, style="green" if s.caught_up else "yellow")


def _short_time(value: Any) -> str:
    """'2026-11-22T05:59:43.214000+00:00' → '2026-11-22 05:59:43.214' (the cell, not the data: JSON keeps it all)."""
    if not isinstance(value, str) or len(value) < 19:
        return text(value)
    head, frac = value[:19].replace("T", " "), value[19:]
    digits = frac[1:].split("+")[0].split("-")[0] if frac.startswith(".") else ""
    return head + (f".{digits[:3]}" if digits else "")


def status_line(stats: Any) -> str:
    """The footer as one plain line, for ``--stats`` on stderr when piped."""
    from ..stream.multi import MultiStats

    if isinstance(stats, MultiStats):
        outage = f" {stats.outage.describe()} (retrying)" if stats.outage is not None else ""
        return (f"[paimon-tail {time.strftime('%H:%M:%S')}] tables {len(stats.tables)} ({stats.tables_caught_up} "
                f"live) lag {stats.lag_snapshots} ({stats.lag_seconds:.1f}s) rows {stats.rows} "
                f"({stats.rows_per_second:.0f}/s){' live' if stats.caught_up and not outage else ''}{outage}")
    head = f"[paimon-tail {time.strftime('%H:%M:%S')}] snapshot {stats.snapshot_id}"
    if stats.outage is not None:
        return f"{head} rows {stats.rows} {stats.outage.describe()} (retrying)"
    return (f"{head} latest {stats.latest_id} lag {stats.lag_snapshots} ({stats.lag_seconds:.1f}s) rows {stats.rows} "
            f"({stats.rows_per_second:.0f}/s){' live' if stats.caught_up else ''}")
