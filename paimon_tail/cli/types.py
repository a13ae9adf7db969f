"""The option types every command shares: a value is checked where it is parsed, so every command agrees.

What a person mistypes, or a script passes by accident (an unset shell variable, a doubled comma), is refused
here with a usage error naming the option (exit 2): an empty or blank value, a control character in a name, a
column or bucket listed twice, a number that is not one (nan) or out of range, an address that cannot be one.
What only use can tell (a port taken, a host that does not answer) is checked by the command that uses it, which
names the value. ``tests/cli/test_fuzz_options.py`` fuzzes every option of every command against them.

Light on purpose: click and the standard library only (``--help`` loads click alone).
"""
from __future__ import annotations

import codecs
import math
import re
from typing import Any, List, Optional, Tuple

import click

from ..errors import safe_text


def _shown(value: str) -> str:
    """The value as a message quotes it: ``repr`` (control characters escaped), as click quotes a bad choice."""
    return repr(value)


def _control(value: str) -> bool:
    return not value.isprintable() and safe_text(value) != value


class Text(click.ParamType):
    """A string that must say something: empty or blank is refused (``blank_ok`` for an option whose empty value
    has a documented meaning); ``name=True`` also refuses control characters (an id, a host, a directory: a name
    that ends up in a file name, a message or a terminal)."""

    name = "text"

    def __init__(self, *, blank_ok: bool = False, name: bool = False) -> None:
        self.blank_ok = blank_ok
        self.is_name = name

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        if not self.blank_ok and not value.strip():
            self.fail(f"{_shown(value)} is empty" if not value else f"{_shown(value)} is blank", param, ctx)
        if self.is_name and _control(value):
            self.fail(f"{_shown(value)} holds a control character", param, ctx)
        return value


class ConsumerId(Text):
    """A consumer's id, as Paimon takes it (no path separator, not ``.`` or ``..``) and as a file name can hold it
    (``consumer-<id>``: 255 bytes), without control characters."""

    name = "id"

    def __init__(self) -> None:
        super().__init__(name=True)

    def convert(self, value: Any, param, ctx) -> Any:
        value = super().convert(value, param, ctx)
        if isinstance(value, str):
            if "/" in value or "\\" in value or value in (".", ".."):
                self.fail(f"{_shown(value)}: a consumer id is a file name (no / or \\, not . or ..)", param, ctx)
            if len(value.encode("utf-8", "surrogateescape")) > MAX_CONSUMER_ID_BYTES:
                self.fail(f"{_shown(value[:40])}… is longer than a consumer id can be ({MAX_CONSUMER_ID_BYTES} "
                          "bytes: its file name holds it)", param, ctx)
        return value


MAX_CONSUMER_ID_BYTES = 255 - len("consumer-")
SNAPSHOT_ID_MAX = (1 << 63) - 1  # a Java long, as Paimon keeps snapshot ids


class Columns(click.ParamType):
    """``a,b,c``: column names, each once (a column named twice would be two columns of one name). Empty items
    (a trailing comma) are skipped; no column at all is refused."""

    name = "columns"

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        columns = [c.strip() for c in value.split(",") if c.strip()]
        if not columns:
            self.fail(f"{_shown(value)} names no column", param, ctx)
        seen = set()
        for column in columns:
            if column in seen:
                self.fail(f"column {safe_text(column)} is named twice in {_shown(value)}", param, ctx)
            seen.add(column)
        return columns


class Shard(click.ParamType):
    """``I/N``: this process reads the buckets b with b % N == I, so 0 <= I < N."""

    name = "I/N"

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        index, sep, count = value.strip().partition("/")
        try:
            if not sep:
                raise ValueError
            i, n = _integer(index), _integer(count)
        except ValueError:
            self.fail(f"{_shown(value)} is not I/N, e.g. 0/2", param, ctx)
        if n < 1 or not 0 <= i < n:
            self.fail(f"{_shown(value)}: use I/N with 0 <= I < N", param, ctx)
        return i, n


class Buckets(click.ParamType):
    """``0,3``: bucket numbers (>= 0), each once."""

    name = "list"

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        items = [b.strip() for b in value.split(",") if b.strip()]
        try:
            buckets = [_integer(b) for b in items]
        except ValueError:
            self.fail(f"{_shown(value)}: use comma-separated bucket numbers, e.g. 0,3", param, ctx)
        if not buckets:
            self.fail(f"{_shown(value)} names no bucket", param, ctx)
        if any(b < 0 for b in buckets):
            self.fail(f"{_shown(value)}: bucket numbers are >= 0", param, ctx)
        twice = sorted({b for b in buckets if buckets.count(b) > 1})
        if twice:
            self.fail(f"bucket {twice[0]} is named twice in {_shown(value)}", param, ctx)
        return buckets


def _integer(text: str) -> int:
    """A plain decimal integer: ``int()`` also takes ``1_000`` and other scripts' digits, which no one means."""
    text = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(text)
    return int(text)


class Seconds(click.FloatRange):
    """A number of seconds in a range: a finite number (``nan`` compares with nothing and would pass any range)."""

    name = "seconds"

    def convert(self, value: Any, param, ctx) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number) or math.isinf(number):
            self.fail(f"{_shown(str(value))} is not a finite number", param, ctx)
        return number


class Delimiter(click.ParamType):
    """kcat's -K: the text between a message's key and its value; escapes such as ``\\t`` are understood."""

    name = "delim"

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        try:
            delimiter = codecs.decode(value, "unicode_escape")
        except (UnicodeError, ValueError):
            self.fail(f"{_shown(value)} is not text with escapes such as '\\t'", param, ctx)
        if not delimiter or "\n" in delimiter:
            self.fail("must be non-empty and on one line, e.g. '\\t' or '|'", param, ctx)
        return delimiter


_HOST_NAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
                        r"(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?")


def host_problem(host: str) -> Optional[str]:
    """Why ``host`` cannot be an address to bind or dial (None when it can be): an IP address must be one, a
    name must be a DNS name. Whether it resolves is for its use to tell."""
    import ipaddress

    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in text or re.fullmatch(r"[0-9.]+", text):
        try:
            ipaddress.ip_address(text)
        except ValueError:
            return "is not an IP address"
        return None
    if not _HOST_NAME.fullmatch(text):
        return "is not a host name or an IP address"
    return None


class Host(click.ParamType):
    """An address to bind: an IP address (``0.0.0.0``, ``::``) or a host name."""

    name = "host"

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        problem = host_problem(value) if value.strip() else "is empty"
        if problem:
            self.fail(f"{_shown(value)} {problem}", param, ctx)
        return value


def split_host_port(text: str) -> Tuple[str, Optional[str]]:
    """``host:port``, ``[v6]:port``, ``host`` or ``v6`` → (host, port text or None)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, (rest[1:] if rest.startswith(":") else None) if rest else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None


def address_problem(text: str, port_required: bool) -> Optional[str]:
    """Why ``text`` cannot be HOST:PORT (or HOST[:PORT]); None when it can."""
    host, port = split_host_port(text)
    if port is None and port_required:
        return "is not HOST:PORT"
    problem = host_problem(host) if host else "has no host"
    if problem:
        return f"{'host ' + repr(host) + ' ' if host else ''}{problem}"
    if port is not None:
        if not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
            return f"port {port!r} is not a port (1-65535)"
    return None


class Address(click.ParamType):
    """``HOST:PORT`` (``port_required``) or ``HOST[:PORT]``; with ``many``, a comma-separated list of them (kept as
    the text given). ``blank_ok``: empty means the documented default."""

    def __init__(self, *, port_required: bool = True, many: bool = False, blank_ok: bool = False) -> None:
        self.port_required = port_required
        self.many = many
        self.blank_ok = blank_ok
        self.name = "host:port" if port_required else "host[:port]"

    def convert(self, value: Any, param, ctx) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            if self.blank_ok and not value:
                return value
            self.fail(f"{_shown(value)} is empty" if not value else f"{_shown(value)} is blank", param, ctx)
        parts: List[str] = value.split(",") if self.many else [value]
        for part in parts:
            problem = address_problem(part.strip(), self.port_required)
            if problem:
                self.fail(f"{_shown(value)}: {safe_text(part.strip()) or 'an empty entry'} {problem}"
                          if len(parts) > 1 else f"{_shown(value)} {problem}", param, ctx)
        return value


class KeyValue(Text):
    """``KEY=VALUE`` with a key (repeatable options: ``--spark-conf``)."""

    name = "key=value"

    def convert(self, value: Any, param, ctx) -> Any:
        value = super().convert(value, param, ctx)
        if isinstance(value, str):
            key, sep, _ = value.partition("=")
            if not sep or not key.strip():
                self.fail(f"{_shown(value)} is not KEY=VALUE", param, ctx)
        return value


class FilePath(click.Path):
    """A file to read (``--config``, TLS, token): not a directory, not blank. Whether it exists and what it holds
    is said by its reader, which names it."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False)

    def convert(self, value: Any, param, ctx) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail(f"{_shown(value)} is empty" if not value else f"{_shown(value)} is blank", param, ctx)
        return super().convert(value, param, ctx)


class DirPath(click.Path):
    """A directory to write in (``--local-dir``, the demo's warehouse): not a file, not blank, no control
    characters."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param, ctx) -> Any:
        if isinstance(value, str):
            if not value.strip():
                self.fail(f"{_shown(value)} is empty" if not value else f"{_shown(value)} is blank", param, ctx)
            if _control(value):
                self.fail(f"{_shown(value)} holds a control character", param, ctx)
        return super().convert(value, param, ctx)


__all__ = ["Address", "Buckets", "Columns", "ConsumerId", "MAX_CONSUMER_ID_BYTES", "SNAPSHOT_ID_MAX", "Delimiter", "DirPath", "FilePath", "Host", "KeyValue", "Seconds",
           "Shard", "Text", "address_problem", "host_problem", "split_host_port"]
