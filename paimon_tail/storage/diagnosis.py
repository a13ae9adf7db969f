"""What went wrong with storage, in words a person can act on, and whether waiting can fix it.

pypaimon wraps the error of the file system it calls ("Failed to load schema …"), and pyarrow's S3 client reports
AWS SDK codes ("AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7"). ``diagnose`` walks the
``__cause__``/``__context__`` chain to the file system's own error and names the real cause: connection refused to
host:port, a TLS handshake with a plain-HTTP endpoint, a bucket that does not exist, access denied, a wrong
region. ``transient`` says whether retrying makes sense: network failures, timeouts, 5xx and throttling do;
credentials, missing buckets and regions do not (docs/object-stores.md lists both).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Optional

from ..errors import PaimonTailError


class StorageError(PaimonTailError):
    """Storage refused us for a reason waiting cannot fix (credentials, bucket, region, endpoint form)."""


class StorageUnavailable(PaimonTailError):
    """Storage stayed unreachable for longer than ``--storage-timeout``."""


@dataclass(frozen=True)
class Diagnosis:
    message: str  # one line, names the cause
    transient: bool


_CURL = {
    "6": ("cannot resolve the host of {endpoint}", True),
    "7": ("cannot connect to {endpoint} (connection refused)", True),
    "28": ("timed out talking to {endpoint}", True),
    "35": ("TLS handshake with {endpoint} failed (a plain-HTTP endpoint must be written http://HOST:PORT)", False),
    "52": ("{endpoint} closed the connection without a reply", True),
    "55": ("connection to {endpoint} broken while sending", True),
    "56": ("connection to {endpoint} broken while receiving", True),
    "60": ("the TLS certificate of {endpoint} is not trusted", False),
}

_PERMANENT_CODES = {
    "NO_SUCH_BUCKET": "bucket {bucket} does not exist at {endpoint}",
    "ACCESS_DENIED": "access denied by {endpoint}{target}: check the access key, secret and bucket policy",
    "INVALID_ACCESS_KEY_ID": "{endpoint} does not know this access key id: check fs.s3.accessKeyId",
    "SIGNATURE_DOES_NOT_MATCH": "{endpoint} rejected the request signature: check the secret key (fs.s3.accessKeySecret)",
    "EXPIRED_TOKEN": "the session token for {endpoint} has expired",
    "INVALID_BUCKET_NAME": "{bucket!r} is not a valid bucket name",
}
_REGION = re.compile(r"PermanentRedirect|AuthorizationHeaderMalformed|wrong region|region '?[\w-]+'? is wrong|"
                     r"\b301\b", re.I)
_TRANSIENT = re.compile(r"SLOW_DOWN|SERVICE_UNAVAILABLE|INTERNAL_FAILURE|THROTTLING|REQUEST_TIME_TOO_SKEWED|"
                        r"\b50[0234]\b|Service ?Unavailable|InternalError|SlowDown|Throttl|timed? ?out|"
                        r"Connection reset|Broken pipe|NETWORK_CONNECTION", re.I)
_AWS_CODE = re.compile(r"AWS Error ([A-Z_]+)")
_BUCKET = re.compile(r"in bucket '([^']+)'|for bucket '([^']+)'")
_KEY = re.compile(r"for key '([^']*)' in bucket '([^']+)'|under key '([^']*)' in bucket '([^']+)'")


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes, outermost first (each once)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def _storage_text(exc: BaseException) -> Optional[str]:
    """The first error in the chain that comes from an object store client, in pyarrow's words (curl codes for
    socket errors, so both S3 clients read alike)."""
    import socket
    import ssl

    for e in chain(exc):
        text = str(e)
        if "AWS Error" in text or "curlCode" in text:
            return text
        for kind, curl in ((ConnectionRefusedError, 7), (socket.gaierror, 6), (ssl.SSLError, 35),
                           (ConnectionResetError, 56), (BrokenPipeError, 55), (TimeoutError, 28),
                           (ConnectionError, 52)):
            if isinstance(e, kind):
                return f"{text} (curlCode: {curl})"
    return None


def diagnose(exc: BaseException, endpoint: str = "the object store") -> Optional[Diagnosis]:
    """The storage cause of ``exc`` (or of an error in its cause chain); None when storage is not to blame."""
    text = _storage_text(exc)
    if text is None:
        return None
    bucket_match = _BUCKET.search(text)
    bucket = next((g for g in bucket_match.groups() if g), "?") if bucket_match else "?"
    key_match = _KEY.search(text)
    target = ""
    if key_match:
        key, kbucket = (key_match.group(1), key_match.group(2)) if key_match.group(2) else \
            (key_match.group(3), key_match.group(4))
        target = f" for {kbucket}/{key}"
    curl = re.search(r"curlCode: (\d+)", text)
    if curl and curl.group(1) in _CURL:
        template, transient = _CURL[curl.group(1)]
        return Diagnosis(template.format(endpoint=endpoint), transient)
    code = _AWS_CODE.search(text)
    if code and code.group(1) in _PERMANENT_CODES:
        return Diagnosis(_PERMANENT_CODES[code.group(1)].format(endpoint=endpoint, bucket=bucket, target=target),
                         False)
    if _REGION.search(text):
        return Diagnosis(f"{endpoint} says the bucket {bucket} is in another region: set fs.s3.region", False)
    if _TRANSIENT.search(text):
        return Diagnosis(f"{endpoint} is unavailable: {_short(text)}", True)
    return Diagnosis(f"{endpoint} refused the request: {_short(text)}", False)


def _short(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line[:200]


def endpoint_of(file_io) -> str:
    """A short name for where ``file_io`` goes: its configured endpoint, or the scheme's default."""
    props = getattr(file_io, "properties", None)
    data = props.to_map() if props is not None and hasattr(props, "to_map") else {}
    for key in ("fs.s3.endpoint", "s3.endpoint", "fs.s3a.endpoint", "s3a.endpoint", "fs.oss.endpoint"):
        if data.get(key):
            return str(data[key])
    return "the object store"


__all__ = ["Diagnosis", "StorageError", "StorageUnavailable", "chain", "diagnose", "endpoint_of"]
