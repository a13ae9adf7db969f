"""Shim: short S3 client retries and timeouts, so paimon-tail's storage policy decides how long to wait.

Patches
    ``pypaimon.filesystem.pyarrow_file_io.PyArrowFileIO._create_s3_retry_config`` (S3 and OSS)

Why
    pypaimon builds pyarrow's ``S3FileSystem`` with 10 attempts of the AWS standard retry strategy and 60 s connect
    and request timeouts, with no option to change them. A request to an endpoint that is down then takes 78–92 s
    to fail, each request of a poll loop stalls that long during an outage, and a wrong endpoint is reported a
    minute and a half late. paimon-tail retries storage itself (``paimon_tail.storage.retry``: backoff, outage
    status, ``--storage-timeout``), so the client below it should fail fast: 3 attempts, 5 s to connect,
    30 s per request. Catalog options ``fs.s3.connect-timeout``, ``fs.s3.request-timeout`` (seconds) and
    ``fs.s3.max-attempts`` override these.

Delete when
    pypaimon reads connect/request timeouts and retry attempts from catalog options.
"""
from __future__ import annotations

from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

NAME = "s3_client"
_ORIGINAL = PyArrowFileIO.__dict__["_create_s3_retry_config"]

MAX_ATTEMPTS = 3
CONNECT_TIMEOUT = 5
REQUEST_TIMEOUT = 30


def _option(self: PyArrowFileIO, key: str, default: float) -> float:
    value = self.properties.to_map().get(key)
    try:
        return float(value) if value is not None else default
    except ValueError:
        return default


def _retry_config(self: PyArrowFileIO, max_attempts: int = MAX_ATTEMPTS, request_timeout: int = REQUEST_TIMEOUT,
                  connect_timeout: int = CONNECT_TIMEOUT):
    return _ORIGINAL(
        self,
        max_attempts=int(_option(self, "fs.s3.max-attempts", max_attempts)),
        request_timeout=_option(self, "fs.s3.request-timeout", request_timeout),
        connect_timeout=_option(self, "fs.s3.connect-timeout", connect_timeout),
    )


def install() -> None:
    PyArrowFileIO._create_s3_retry_config = _retry_config


def uninstall() -> None:
    PyArrowFileIO._create_s3_retry_config = _ORIGINAL
