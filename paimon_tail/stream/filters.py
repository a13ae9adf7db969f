"""``--where`` text → a pypaimon predicate, with pypaimon's parser errors turned into one usage error.

Read as SQL reads it: a bare word is a column (``status = shipped`` names a column ``shipped``, it is not the
string ``'shipped'`` that pypaimon's parser would make of it), and ``==`` is ``=`` (as in jq, Python, sqlite).
A bare word that is no column is refused with the table's columns; comparing two columns is refused too
(pushed-down predicates compare a column with a value).
"""
from __future__ import annotations

import difflib
import re
from typing import List, Optional, Sequence, Union

from ..errors import UsageError

_COMPARISONS = {"=", "!=", "<>", "<", "<=", ">", ">="}
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE"}
_LITERAL = re.compile(r"[+-]?(\d|\.\d)")  # numbers, and dates and times written bare (2026-11-01, 12:00)
GRAMMAR = ("=, !=, <>, <, <=, >, >=, IN (...), NOT IN, BETWEEN ... AND ..., LIKE, IS [NOT] NULL, AND, OR, "
           "( ); strings in single quotes")


def parse_where(text: Union[str, Sequence[str]], fields: Sequence, label: str = "--where") -> Optional[object]:
    """The predicate for ``text`` over the table ``fields`` (None for an empty filter); ``label`` names the input.

    Several texts (``--where A --where B``) must all hold: their predicates are combined with AND."""
    from pypaimon.common.predicate_builder import PredicateBuilder
    from pypaimon.common.where_parser import parse_where_clause

    texts = [text] if isinstance(text, str) else list(text)
    names = [f.name for f in fields]
    predicates = []
    for one in texts:
        tokens = _tokens(one, label)
        _check_words(one, tokens, names, label)
        try:
            predicate = parse_where_clause(" ".join(tokens), list(fields))
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise UsageError(f"bad {label} {one!r}: {_reason(e)}") from None
        if predicate is not None:
            predicates.append(predicate)
    if len(predicates) > 1:
        return PredicateBuilder.and_predicates(predicates)
    return predicates[0] if predicates else None


def _tokens(text: str, label: str) -> List[str]:
    """pypaimon's tokens of ``text``, ``==`` made ``=``. Its tokenizer skips what it cannot match (an unclosed
    quote, a lone ``!``), so ``status = 'shipped`` would filter on the word ``shipped``: refuse anything skipped."""
    from ..compat.adapters.where_tokens import token_pattern

    pattern = token_pattern()
    stray = pattern.sub(" ", text).strip()
    if stray:
        if stray[0] in "'\"":
            raise UsageError(f"bad {label} {text!r}: unclosed quote {stray[0]}")
        raise UsageError(f"bad {label} {text!r}: unexpected {stray[0]!r}")
    tokens: List[str] = []
    end = -1
    for m in pattern.finditer(text):
        if m.group() == "=" and tokens and tokens[-1] == "=" and m.start() == end:
            end = m.end()
            continue  # '==' is '='
        tokens.append(m.group())
        end = m.end()
    return tokens


def _check_words(text: str, tokens: List[str], columns: List[str], label: str) -> None:
    """Every bare word is a keyword, a literal or a column; a column where a value goes is refused."""
    prev = ""
    in_list = False  # inside IN ( ... )
    between = False  # after BETWEEN, before its AND
    for token in tokens:
        upper = token.upper()
        if token == "(" and prev == "IN":
            in_list = True
        elif token == ")":
            in_list = False
        value_position = in_list or prev in _COMPARISONS or prev in ("LIKE", "BETWEEN") or \
            (prev == "AND" and between)
        if prev == "AND" and between:
            between = False
        if upper == "BETWEEN":
            between = True
        bare = token[0] not in "'\"()," and token not in _COMPARISONS
        if bare and upper not in _KEYWORDS and not _LITERAL.match(token):
            if token not in columns:
                raise UsageError(f"bad {label} {text!r}: {_unknown(token, columns, value_position)}")
            if value_position:
                raise UsageError(f"bad {label} {text!r}: {token} is a column, and a filter compares a column with "
                                 f"a value (for the string, quote it: '{token}')")
        prev = upper if bare else token
    return None


def _unknown(word: str, columns: List[str], value_position: bool) -> str:
    close = difflib.get_close_matches(word, columns, n=1) or \
        [c for c in columns if c.lower() == word.lower()][:1]
    hint = f"did you mean {close[0]}? " if close and not value_position else ""
    quote = f"a bare word is a column, as in SQL: for the string, quote it: '{word}'; " if value_position else ""
    return f"unknown column {word} ({hint}{quote}columns are {', '.join(columns)})"


def _reason(e: Exception) -> str:
    text = str(e)
    unknown = re.match(r"Unknown field '([^']*)'", text)
    if unknown:  # every bare word is a column by now: a keyword where a condition starts
        return f"a condition is COLUMN OPERATOR VALUE, not {unknown.group(1)} ... (the grammar: {GRAMMAR})"
    if text.startswith("Unexpected tokens after parsing") or text.startswith("Unsupported operator") \
            or text.startswith("Unexpected end"):
        return f"{text} (the grammar: {GRAMMAR})"
    return text
