"""Tables that fit the terminal, whatever its width.

* A report (``service status``, ``consumers``, ``lookup``) is a table when it fits and, when it does not, one
  record per row with a line per column: psql's expanded display (``\\x auto``), where every value is shown whole.
* The live view keeps the columns that fit at the width their values need, from the left, and names the others
  (``hidden_note``): cut-down cells (``ex… ┃ ad…``) would show nothing readable.
* Rows printed as they come (``follow -e`` on a terminal, ``ScrollingTableRenderer``): a table in pieces while
  they fit, records once they do not.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

MAX_CELL = 40  # the live view's widest column: longer values end in …


def report(columns: Sequence[str], rows: Sequence[Sequence[str]], console: Console, *, title: str = "",
           styles: Optional[Dict[str, str]] = None) -> RenderableType:
    """``rows`` as a table when it fits ``console``'s width, else as records (a line per column)."""
    styles = styles or {}
    table = Table(title=title or None, show_edge=False, header_style="bold")
    for name in columns:
        table.add_column(name, style=styles.get(name))
    for row in rows:
        table.add_row(*row)
    unbounded = console.options.update_width(1 << 20)  # a measurement is clamped to the width it is given
    if Measurement.get(console, unbounded, table).maximum <= console.size.width:
        return table
    return records(columns, rows, title=title, styles=styles)


RECORD_TITLE = 30  # a first value up to this wide titles its record; a longer one gets a line like the others


def records(columns: Sequence[str], rows: Sequence[Sequence[str]], *, title: str = "",
            styles: Optional[Dict[str, Optional[str]]] = None, first: int = 1) -> RenderableType:
    """psql's expanded display: ``[ first column value ] ──`` (or ``[ record number ]``) then ``column  value``
    lines, values folded."""
    styles = styles or {}
    parts: List[RenderableType] = [Text(title, style="bold")] if title else []
    for number, row in enumerate(rows, first):
        short = cell_len(row[0]) <= RECORD_TITLE
        label = f"[ {columns[0]} {row[0]} ]" if short else f"[ record {number} ]"
        parts.append(Rule(label, align="left", style="dim", characters="─"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        start = 1 if short else 0
        for name, value in zip(columns[start:], row[start:]):
            grid.add_row(name, Text(value, style=styles.get(name) or ""))
        parts.append(grid)
    return Group(*parts)


def fitting_columns(columns: Sequence[str], widths: Dict[str, int], available: int) -> List[str]:
    """The columns, from the left, that fit ``available`` cells in a table with borders (3 cells a column and
    one at the end); at least the first."""
    shown: List[str] = []
    used = 1
    for name in columns:
        need = widths.get(name, cell_len(name)) + 3
        if shown and used + need > available:
            break
        shown.append(name)
        used += need
    return shown


def hidden_note(hidden: Sequence[str], width: int) -> Optional[Text]:
    """'not shown (too narrow): a, b; widen the terminal or use --select', the advice only when it fits."""
    if not hidden:
        return None
    note = f"not shown (too narrow): {', '.join(hidden)}"
    advice = "; widen the terminal or use --select"
    return Text(note + advice if cell_len(note + advice) <= width else note, style="dim")


def natural_width(header: str, cells: Sequence[str]) -> int:
    return min(MAX_CELL, max([cell_len(header), *(cell_len(c) for c in cells)]))


def flowing_table(columns: Sequence[str], widths: Sequence[int], header: bool,
                  styles: Optional[Dict[str, Optional[str]]] = None) -> Table:
    """A piece of a table printed in pieces: the same widths every time, the header only on the first."""
    styles = styles or {}
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, show_header=header, header_style="bold cyan")
    for name, width in zip(columns, widths):
        table.add_column(name, width=width, no_wrap=False, overflow="fold", style=styles.get(name))
    return table


__all__ = ["MAX_CELL", "fitting_columns", "flowing_table", "hidden_note", "natural_width", "records", "report"]
