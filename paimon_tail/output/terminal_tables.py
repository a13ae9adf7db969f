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

from rich.cells import cell_len, chop_cells
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

MAX_CELL = 40  # the live view's widest column: longer values end in …


def report(columns: Sequence[str], rows: Sequence[Sequence[str]], console: Console, *, title: str = "",
           styles: Optional[Dict[str, str]] = None, optional: Sequence[str] = ()) -> RenderableType:
    """``rows`` as a table when it fits ``console``'s width, else as records (a line per column).

    ``optional``: columns that may be left out, the first first, for the table to fit (a status of a few
    executors stays a few lines at 80 columns); those left out are named under it."""
    styles = styles or {}
    shown = list(columns)
    left_out: List[str] = []
    for name in [None, *optional]:
        if name is not None:
            shown.remove(name)
            left_out.append(name)
        table = _table(shown, [[row[columns.index(c)] for c in shown] for row in rows], console, title, styles)
        if table is not None:
            return Group(table, Text(f"not shown: {', '.join(left_out)} (wider terminal, or --json)", style="dim")) \
                if left_out else table
    return records(columns, rows, title=title, styles=styles)


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], console: Console, title: str,
           styles: Dict[str, str]) -> Optional[Table]:
    """The table, when it fits the console's width."""
    table = Table(title=title or None, show_edge=False, header_style="bold")
    for name in columns:
        table.add_column(name, style=styles.get(name))
    for row in rows:
        table.add_row(*row)
    unbounded = console.options.update_width(1 << 20)  # a measurement is clamped to the width it is given
    return table if Measurement.get(console, unbounded, table).maximum <= console.size.width else None


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


GAP = "   "  # between the columns of rows printed as they come


class Lines:
    """Ready-made lines, each with one style, printed as they are: a rich ``Text`` of a few hundred lines is split
    and wrapped span by span (~2,500 records/s); these segments are not (~300,000 lines/s)."""

    def __init__(self, lines: Sequence[tuple]) -> None:
        self.lines = lines  # (text, rich Style or None)

    def __rich_console__(self, console: Console, options):
        from rich.segment import Segment

        newline = Segment.line()
        for text, style in self.lines:
            yield Segment(text, style)
            yield newline


def width_of(text: str) -> int:
    """Terminal cells of ``text``: its length when ASCII (most cells, and ``isascii`` is a C loop), else rich's."""
    return len(text) if text.isascii() else cell_len(text)


NARROW_GAP = "  "  # the gap when the widths fit with it only (before falling back to records)


def aligned(cells: Sequence[str], widths: Sequence[int], gap: str = GAP) -> str:
    """One line of rows printed as they come: each cell padded to its column's width (plain text, no rich table:
    rich lays a 256-row table out at ~1,000 rows/s, a join at ~60,000)."""
    return gap.join(c + " " * (w - width_of(c)) for c, w in zip(cells, widths)).rstrip()


def rule(widths: Sequence[int], gap: str = GAP) -> str:
    return "─" * (sum(widths) + len(gap) * (len(widths) - 1))


class RecordLines:
    """Records of psql's expanded display as plain lines, ``width`` cells wide: a title line, ``[ +U order_id
    42 ] ──`` (the row kind, if any, and the first other column when its value is short; else ``[ record N ]``),
    then ``column  value`` lines, long values folded."""

    def __init__(self, columns: Sequence[str], width: int) -> None:
        self.columns, self.width = list(columns), width
        self.kind = 1 if columns and columns[0] == "_row_kind" else 0
        self.layouts = {titled: self._layout(titled) for titled in (True, False)}

    def _layout(self, titled: bool) -> tuple:
        start = self.kind + (1 if titled else 0)
        names = self.columns[start:]
        name_width = max((cell_len(n) for n in names), default=0)
        return start, [n + " " * (name_width - cell_len(n)) + "  " for n in names], " " * (name_width + 2), \
            max(8, self.width - name_width - 2)

    def lines(self, row: Sequence[str], number: int) -> List[str]:
        kind = self.kind
        titled = kind < len(row) and cell_len(row[kind]) <= RECORD_TITLE
        label = " ".join(([row[0]] if kind else []) +
                         ([self.columns[kind], row[kind]] if titled else [f"record {number}"]))
        label = f"[ {label} ] "
        out = [label + "─" * max(0, self.width - cell_len(label))]
        start, names, blank, room = self.layouts[titled]
        for name, value in zip(names, row[start:]):
            if len(value) <= room and cell_len(value) <= room:
                out.append((name + value).rstrip())
            else:
                out.extend(((name if i == 0 else blank) + piece).rstrip()
                           for i, piece in enumerate(chop_cells(value, room)))
        return out


__all__ = ["GAP", "NARROW_GAP", "Lines", "MAX_CELL", "aligned", "width_of", "fitting_columns", "hidden_note", "natural_width", "RecordLines",
           "records", "report", "rule"]
