"""``--where`` text → a pypaimon predicate, with pypaimon's parser errors turned into one usage error."""
from __future__ import annotations

from typing import Optional, Sequence, Union

from ..errors import UsageError


def parse_where(text: Union[str, Sequence[str]], fields: Sequence, label: str = "--where") -> Optional[object]:
    """The predicate for ``text`` over the table ``fields`` (None for an empty filter); ``label`` names the input.

    Several texts (``--where A --where B``) must all hold: their predicates are combined with AND."""
    from pypaimon.common.predicate_builder import PredicateBuilder
    from pypaimon.common.where_parser import parse_where_clause

    texts = [text] if isinstance(text, str) else list(text)
    predicates = []
    for one in texts:
        _check_tokens(one, label)
        try:
            predicate = parse_where_clause(one, list(fields))
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise UsageError(f"bad {label} {one!r}: {e}") from None
        if predicate is not None:
            predicates.append(predicate)
    if len(predicates) > 1:
        return PredicateBuilder.and_predicates(predicates)
    return predicates[0] if predicates else None


def _check_tokens(text: str, label: str) -> None:
    """pypaimon's tokenizer skips what it cannot match (an unclosed quote, a lone ``!``), so ``status =
    'shipped`` would filter on the word ``shipped``: refuse anything it would skip."""
    from pypaimon.common.where_parser import _TOKEN_PATTERN

    stray = _TOKEN_PATTERN.sub(" ", text).strip()
    if not stray:
        return
    if stray[0] in "'\"":
        raise UsageError(f"bad {label} {text!r}: unclosed quote {stray[0]}")
    raise UsageError(f"bad {label} {text!r}: unexpected {stray[0]!r}")
