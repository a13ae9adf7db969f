"""A small S3 client for the small requests on paimon-tail's hot path: one request where pyarrow makes two to five.

pyarrow's S3 file system (what pypaimon reads S3 with) asks for a file's size (HEAD) before every read, even when
Paimon's metadata already holds the size, and writes every object with a multipart upload (3 requests, pyarrow
< 20). For the files paimon-tail reads on every commit — the snapshot it polls for, manifest lists and manifests
whose sizes the snapshot and manifest list give — and the consumer file it writes after every snapshot, that
doubles the latency and the request bill. This client sends one signed GET (a missing object is its 404) or one
PUT, with AWS Signature Version 4, over keep-alive connections (one per thread).

It is used only where it is sure to mean the same as pyarrow: ``s3://``/``s3a://``/``s3n://`` warehouses with
static credentials (catalog options or the ``AWS_*`` environment variables). Anything else — OSS, instance
profiles, credential files — keeps pyarrow's full client (``S3Client.for_file_io`` returns None).
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import os
import re
import socket
import ssl
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Dict, Optional, Tuple
from urllib.parse import quote, urlsplit

_S3_SCHEMES = ("s3", "s3a", "s3n")
_PREFIXES = ("fs.s3.", "s3.", "s3a.", "fs.s3a.")
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class S3RequestError(OSError):
    """An S3 error answer, worded like pyarrow's (``AWS Error CODE during OP operation: message``) so that
    ``storage.diagnosis.diagnose`` treats both clients alike."""

    def __init__(self, status: int, code: str, message: str, operation: str, bucket: str, key: str) -> None:
        aws = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", code).upper() if code else f"HTTP_{status}"
        super().__init__(f"When {operation} key '{key}' in bucket '{bucket}': AWS Error {aws} during {operation} "
                         f"operation: {message or code or status} (HTTP {status})")
        self.status = status
        self.code = code


class PreconditionFailed(S3RequestError):
    """A conditional PUT lost: the object is not the version the caller read (412, or 409 for a race S3 saw)."""


@dataclass(frozen=True)
class S3Config:
    endpoint: str  # scheme://host[:port]
    region: str
    access_key: str
    secret_key: str
    session_token: Optional[str] = None
    path_style: bool = False


def config_from_options(options: Dict[str, str], environ=os.environ) -> Optional[S3Config]:
    """Static credentials and endpoint from pypaimon's catalog options (the keys it reads), or None."""

    def get(*names: str) -> Optional[str]:
        for name in names:
            for prefix in _PREFIXES:
                value = options.get(prefix + name)
                if value:
                    return str(value)
        return None

    access = get("accessKeyId", "access-key", "access.key") or environ.get("AWS_ACCESS_KEY_ID")
    secret = get("accessKeySecret", "secret-key", "secret.key") or environ.get("AWS_SECRET_ACCESS_KEY")
    if not access or not secret:
        return None
    explicit = get("accessKeyId", "access-key", "access.key")
    token = get("securityToken", "session-token", "session.token", "security-token", "security.token")
    if not explicit:
        token = token or environ.get("AWS_SESSION_TOKEN")
    region = get("region") or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = get("endpoint")
    path_style = str(get("path-style-access", "path.style.access") or "").lower() == "true"
    if endpoint:
        if "://" not in endpoint:
            endpoint = "https://" + endpoint  # as pyarrow reads an endpoint without a scheme
    else:
        endpoint = f"https://s3.{region}.amazonaws.com"
    return S3Config(endpoint.rstrip("/"), region, access, secret, token, path_style)


def sign(config: S3Config, method: str, host: str, path: str, payload_hash: str,
         now: Optional[datetime.datetime] = None) -> Dict[str, str]:
    """The headers that sign one request (AWS Signature Version 4, service ``s3``, no query string)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    headers = {"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
    if config.session_token:
        headers["x-amz-security-token"] = config.session_token
    names = sorted(headers)
    canonical = "\n".join([
        method, path, "",
        "".join(f"{n}:{headers[n].strip()}\n" for n in names),
        ";".join(names), payload_hash,
    ])
    scope = f"{day}/{config.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{config.secret_key}".encode()
    for part in (day, config.region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={config.access_key}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return headers


class S3Client:
    """GET and PUT of whole small objects; thread-safe (a keep-alive connection per thread)."""

    def __init__(self, config: S3Config, timeout: float = 30.0) -> None:
        self.config = config
        self.timeout = timeout
        parts = urlsplit(config.endpoint)
        self._secure = parts.scheme == "https"
        self._host, self._port = parts.hostname or "", parts.port
        self._local = threading.local()

    @classmethod
    def for_file_io(cls, file_io) -> Optional["S3Client"]:
        """The client for a pypaimon FileIO's warehouse, or None where pyarrow's own client must be used."""
        try:
            return _CLIENTS[file_io]
        except (KeyError, TypeError):
            pass
        # A PyArrowFileIO exists only once its module is loaded: asking for the module would load it (and requests,
        # 0.15 s) for file IOs that cannot be one (compat/adapters/local_snapshots.py on `follow -e`'s quick path).
        pyarrow_file_io = sys.modules.get("pypaimon.filesystem.pyarrow_file_io")
        client = None
        # not OSS (a subclass), not a caching or resolving wrapper
        if pyarrow_file_io is not None and type(file_io) is pyarrow_file_io.PyArrowFileIO:
            options = file_io.properties.to_map()
            if urlsplit(options.get("warehouse") or "").scheme in _S3_SCHEMES:
                config = config_from_options(options)
                if config is not None:
                    client = cls(config)
        try:
            _CLIENTS[file_io] = client
        except TypeError:
            pass
        return client

    # -- requests -----------------------------------------------------------------------------------------
    def get(self, bucket: str, key: str) -> Optional[bytes]:
        """The object's bytes, or None if there is no such object."""
        status, body = self._request("GET", bucket, key, b"", "reading")
        return None if status == 404 and not _is_bucket_error(body) else body

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self._request("PUT", bucket, key, data, "writing")

    def get_versioned(self, bucket: str, key: str) -> Tuple[Optional[bytes], Optional[str]]:
        """The object's bytes and ETag, or (None, None) if there is no such object."""
        status, body, headers = self._request("GET", bucket, key, b"", "reading", with_headers=True)
        if status == 404 and not _is_bucket_error(body):
            return None, None
        return body, headers.get("etag")

    def put_if(self, bucket: str, key: str, data: bytes, etag: Optional[str]) -> Optional[str]:
        """PUT only if the object is still at ``etag`` (``None``: only if there is no object); the new ETag.
        Raises ``PreconditionFailed`` when it changed meanwhile (S3's conditional writes; MinIO and moto have
        them too)."""
        extra = {"if-match": etag} if etag is not None else {"if-none-match": "*"}
        _, _, headers = self._request("PUT", bucket, key, data, "writing", extra=extra, with_headers=True)
        return headers.get("etag")

    def delete(self, bucket: str, key: str) -> None:
        """One DELETE (pyarrow's also writes a marker for the parent "directory" when it empties)."""
        self._request("DELETE", bucket, key, b"", "deleting")

    def _target(self, bucket: str, key: str) -> Tuple[str, str]:
        path_key = "/" + quote(key, safe="/~")
        if self.config.path_style:
            return self._host_header(self._host), f"/{bucket}{path_key}"
        return self._host_header(f"{bucket}.{self._host}"), path_key

    def _host_header(self, host: str) -> str:
        default = 443 if self._secure else 80
        return host if self._port in (None, default) else f"{host}:{self._port}"

    def _request(self, method: str, bucket: str, key: str, body: bytes, operation: str,
                 extra: Optional[Dict[str, str]] = None, with_headers: bool = False):
        host, path = self._target(bucket, key)
        payload_hash = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
        headers = sign(self.config, method, host, path, payload_hash)
        headers.update(extra or {})  # (unsigned: conditional headers need not be signed)
        if method == "PUT":
            headers["content-length"] = str(len(body))
        for attempt in (0, 1):  # a kept-alive connection the server closed meanwhile is reopened once
            conn = self._connection(host)
            try:
                conn.request(method, path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._drop(host)
                if attempt:
                    raise ConnectionError(f"connection to {self.config.endpoint} broken: {e}") from e
            except (OSError, http.client.HTTPException):
                self._drop(host)
                raise
        if resp.status in (200, 204) or (resp.status == 404 and method == "GET" and not _is_bucket_error(data)):
            if with_headers:
                return resp.status, data, {k.lower(): v for k, v in resp.getheaders()}
            return resp.status, data
        code, message = _error_of(data)
        if resp.status == 412 or (resp.status == 409 and code == "ConditionalRequestConflict") or \
                (resp.status == 404 and extra and "if-match" in extra):
            raise PreconditionFailed(resp.status, code, message, operation, bucket, key)
        raise S3RequestError(resp.status, code, message, operation, bucket, key)

    def _connection(self, host: str) -> http.client.HTTPConnection:
        conns = self._conns()
        conn = conns.get(host)
        if conn is None:
            target = self._host if self.config.path_style else host.split(":")[0]
            if self._secure:
                conn = http.client.HTTPSConnection(target, self._port, timeout=self.timeout,
                                                   context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(target, self._port, timeout=self.timeout)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conns[host] = conn
        return conn

    def _conns(self) -> Dict[str, http.client.HTTPConnection]:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        return conns

    def _drop(self, host: str) -> None:
        conn = self._conns().pop(host, None)
        if conn is not None:
            conn.close()


def read_text(file_io, path: str) -> Optional[str]:
    """A small file's text, or None if it does not exist: one GET on S3 (a missing file is its 404), else the
    file system's own read (HEAD + GET through pyarrow)."""
    client = S3Client.for_file_io(file_io)
    if client is not None:
        data = client.get(*split_path(file_io, path))
        return data.decode("utf-8") if data is not None else None
    try:
        return file_io.read_file_utf8(path)
    except FileNotFoundError:
        return None


def split_path(file_io, path: str) -> Tuple[str, str]:
    """``s3://bucket/a/b`` → (``bucket``, ``a/b``)."""
    bucket, _, key = file_io.to_filesystem_path(path).partition("/")
    return bucket, key


def _is_bucket_error(body: bytes) -> bool:
    return b"NoSuchBucket" in body


def _error_of(body: bytes) -> Tuple[str, str]:
    text = body.decode("utf-8", "replace")
    code = re.search(r"<Code>([^<]*)</Code>", text)
    message = re.search(r"<Message>([^<]*)</Message>", text)
    return (code.group(1) if code else ""), (message.group(1) if message else "")


_CLIENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

__all__ = ["PreconditionFailed", "S3Client", "S3Config", "S3RequestError", "config_from_options", "read_text", "sign",
           "split_path"]
