"""``--where`` text → a pypaimon predicate, with pypaimon's parser errors turned into one usage error."""
from __future__ import annotations

from typing import Optional, Sequence

from ..errors import UsageError


def parse_where(text: str, fields: Sequence, label: str = "--where") -> Optional[object]:
    """The predicate for ``text`` over the table ``fields`` (None for an empty filter); ``label`` names the input."""
    from pypaimon.common.where_parser import parse_where_clause

    try:
        return parse_where_clause(text, list(fields))
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise UsageError(f"bad {label} {text!r}: {e}") from None
