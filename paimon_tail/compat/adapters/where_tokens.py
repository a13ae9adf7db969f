"""The token pattern of pypaimon's ``--where`` parser, to find what its tokenizer would skip (``stream/filters.py``).

Uses (pypaimon private API)
    ``pypaimon.common.where_parser._TOKEN_PATTERN``.

Why
    pypaimon's tokenizer skips what it cannot match (an unclosed quote, a lone ``!``), so ``status = 'shipped``
    would filter on the word ``shipped``. ``filters.py`` refuses such text, and reads the words to check them
    against the columns, with the parser's own tokens (a copy of the pattern could drift from the parser).

Delete when
    pypaimon's ``parse_where_clause`` refuses text its tokenizer skips and takes a bare word as a column.
"""
from __future__ import annotations


def token_pattern():
    """The compiled regular expression pypaimon's where parser splits text with."""
    from pypaimon.common.where_parser import _TOKEN_PATTERN

    return _TOKEN_PATTERN


__all__ = ["token_pattern"]
