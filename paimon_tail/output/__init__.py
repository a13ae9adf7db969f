"""Output formats: JSON lines, CSV/TSV, Arrow IPC stream and the rich live table, over one value mapping."""
from .renderers import FORMATS, Renderer, choose_format, make_renderer
from .values import plain_rows

__all__ = ["FORMATS", "Renderer", "choose_format", "make_renderer", "plain_rows"]
