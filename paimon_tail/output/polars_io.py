"""Writing through polars' NDJSON/CSV writers onto our streams: one flush per snapshot, a closed pipe as the
``BrokenPipeError`` it is. Shared by the row renderers (``renderers.py``) and the change events (``cdc.py``)."""
from __future__ import annotations


class _Unflushed:
    """The stream as polars sees it: polars flushes after every write_ndjson/write_csv (twice), i.e. per batch;
    we flush once per snapshot (``Renderer.flush``), so a snapshot of many small batches is one write to the OS."""

    __slots__ = ("write",)

    def __init__(self, stream) -> None:
        self.write = stream.write

    def flush(self) -> None:
        pass


def polars_write(write, stream) -> None:
    """polars reports a closed pipe as a plain OSError from Rust; make it the BrokenPipeError it is."""
    try:
        write(_Unflushed(stream))
    except BrokenPipeError:
        raise
    except OSError as e:
        if "Broken pipe" in str(e) or getattr(e, "errno", None) == 32:
            raise BrokenPipeError(32, "Broken pipe") from None
        raise


__all__ = ["polars_write"]
