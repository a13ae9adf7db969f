"""A real S3-protocol server on loopback (moto's server mode), and a proxy of ours in front of it.

The proxy plays the network between paimon-tail and its object store: it adds latency to every request, counts
requests and bytes (what an object store bills), and can go down (connections refused) or answer 503 for a while.
Tests and benchmarks point paimon-tail at the proxy and their writers at moto directly, so the proxy counts what
paimon-tail alone costs.

    with S3Server() as s3, S3Proxy(s3.endpoint, latency=0.02) as proxy:
        s3.create_bucket("lake")
        options = proxy.catalog_options("s3://lake/warehouse")
"""
from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Sequence
from urllib.parse import urlsplit

ACCESS_KEY = "testing-key"
SECRET_KEY = "testing-secret"
REGION = "us-east-1"


def s3_options(endpoint: str, warehouse: str, access_key: str = ACCESS_KEY,
               secret_key: str = SECRET_KEY) -> Dict[str, str]:
    """pypaimon catalog options for a path-style S3-compatible endpoint (as for MinIO)."""
    return {
        "warehouse": warehouse,
        "fs.s3.endpoint": endpoint,
        "fs.s3.accessKeyId": access_key,
        "fs.s3.accessKeySecret": secret_key,
        "fs.s3.region": REGION,
        "fs.s3.path-style-access": "true",
    }


class S3Server:
    """moto's S3 in server mode on 127.0.0.1, in a process of its own (a real HTTP server speaking S3).

    ``auth=True`` makes it check every request's signature against IAM keys it issued (``create_credentials``),
    so wrong keys get the errors a real store sends; otherwise any key is accepted.
    """

    def __init__(self, auth: bool = False, host: str = "127.0.0.1", prefix: Sequence[str] = ()) -> None:
        """``host``/``prefix``: elsewhere than loopback, e.g. inside a network namespace the test made
        (``prefix=["ip", "netns", "exec", NAME]``, ``host`` one of its addresses: tests/service/test_hosts.py)."""
        self.auth = auth
        self.host = host
        self.prefix = list(prefix)
        self.port = _free_port()
        self.endpoint = f"http://{host}:{self.port}"
        self._proc: Optional[subprocess.Popen] = None
        self.access_key, self.secret_key = ACCESS_KEY, SECRET_KEY

    def start(self) -> "S3Server":
        env = dict(os.environ)
        if self.auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"  # create_user, create_access_key, create/attach policy
        self._proc = subprocess.Popen([*self.prefix, sys.executable, "-m", "moto.server", "-H", self.host,
                                       "-p", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start")
                time.sleep(0.05)
        if self.auth:
            self._issue_credentials()
        return self

    def _issue_credentials(self) -> None:
        import boto3

        iam = boto3.client("iam", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                           aws_secret_access_key=SECRET_KEY, region_name=REGION)
        iam.create_user(UserName="paimon-tail")
        key = iam.create_access_key(UserName="paimon-tail")["AccessKey"]
        policy = iam.create_policy(PolicyName="s3-all", PolicyDocument=(
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}'))
        iam.attach_user_policy(UserName="paimon-tail", PolicyArn=policy["Policy"]["Arn"])
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None

    def __enter__(self) -> "S3Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name=REGION)

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def catalog_options(self, warehouse: str) -> Dict[str, str]:
        return s3_options(self.endpoint, warehouse, self.access_key, self.secret_key)


@dataclass
class Request:
    at: float
    method: str
    path: str
    query: str
    status: int
    bytes_in: int
    bytes_out: int


@dataclass
class _State:
    latency: float = 0.0
    mode: str = "up"  # up | refuse | error
    log: List[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_ProxyServer"
    wbufsize = -1  # buffered: headers and body leave in one segment (see ``setup`` and ``_send``)

    def setup(self) -> None:
        super().setup()
        # Without this, headers and body in separate segments meet the client's delayed ACK: +40 ms a request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self) -> None:
        state = self.server.state
        body = self._body()
        if state.latency:
            time.sleep(state.latency)
        parts = urlsplit(self.path)
        if state.mode == "error":
            payload = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>ServiceUnavailable</Code>"
                       b"<Message>injected outage</Message></Error>")
            self._record(parts, 503, len(body), len(payload))
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            self.wfile.flush()
        else:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "expect")}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            for attempt in (0, 1):  # moto may close a kept-alive connection between requests
                conn = self.server.upstream()
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    break
                except (OSError, http.client.HTTPException):
                    self.server.drop_upstream()
                    if attempt:
                        raise
            self._record(parts, resp.status, len(body), len(data))
            self.send_response_only(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
                    self.send_header(k, v)
            if self.command == "HEAD":
                self.send_header("Content-Length", resp.getheader("Content-Length") or "0")
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            self.wfile.flush()

    def _record(self, parts, status: int, bytes_in: int, bytes_out: int) -> None:
        state = self.server.state
        with state.lock:
            state.log.append(Request(time.monotonic(), self.command, parts.path, parts.query, status,
                                     bytes_in, bytes_out))

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that went away (a follower killed by its test) is not the proxy's problem

    def __init__(self, address, upstream: str, state: _State) -> None:
        super().__init__(address, _Handler)
        self.state = state
        self._upstream = urlsplit(upstream)
        self._local = threading.local()
        self._sockets: set = set()
        self._sockets_lock = threading.Lock()

    def upstream(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._upstream.hostname, self._upstream.port, timeout=30)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = conn
        return conn

    def drop_upstream(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def process_request(self, request, client_address):
        with self._sockets_lock:
            self._sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._sockets_lock:
            self._sockets.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        with self._sockets_lock:
            sockets = list(self._sockets)
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class S3Proxy:
    """An HTTP proxy on 127.0.0.1 in front of an S3 endpoint: latency, request counts, outages."""

    def __init__(self, upstream: "S3Server | str", latency: float = 0.0, port: int = 0, host: str = "127.0.0.1") -> None:
        self.server = upstream if isinstance(upstream, S3Server) else None
        self.upstream = upstream.endpoint if isinstance(upstream, S3Server) else upstream
        self.state = _State(latency=latency)
        self.host = host
        self.port = port or _free_port()
        self._server: Optional[_ProxyServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def catalog_options(self, warehouse: str) -> Dict[str, str]:
        if self.server is not None:
            return s3_options(self.endpoint, warehouse, self.server.access_key, self.server.secret_key)
        return s3_options(self.endpoint, warehouse)

    # -- up and down ---------------------------------------------------------------------------------------
    def start(self) -> "S3Proxy":
        self._server = _ProxyServer((self.host, self.port), self.upstream, self.state)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="s3-proxy")
        self._thread.start()
        self.state.mode = "up"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.cut_connections()
            self._server.server_close()
            self._server = None

    def go_down(self, mode: str = "refuse") -> None:
        """``refuse``: nothing listens on the port (connection refused); ``error``: every request gets a 503."""
        if mode == "refuse":
            self.stop()
        self.state.mode = mode

    def come_back(self) -> None:
        if self._server is None:
            self.start()
        self.state.mode = "up"

    def set_latency(self, seconds: float) -> None:
        self.state.latency = seconds

    def __enter__(self) -> "S3Proxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what was asked -----------------------------------------------------------------------------------
    def requests(self, since: float = 0.0) -> List[Request]:
        with self.state.lock:
            return [r for r in self.state.log if r.at >= since]

    def count(self, since: float = 0.0) -> Counter:
        """Requests by kind since ``since`` (``time.monotonic()``): GET, HEAD, PUT, LIST, …"""
        return Counter(_kind(r) for r in self.requests(since))

    def reset(self) -> None:
        with self.state.lock:
            self.state.log.clear()


def _kind(r: Request) -> str:
    if r.method == "GET" and ("list-type" in r.query or r.path.rstrip("/").count("/") <= 1):
        return "LIST"
    if r.method == "POST" and "uploads" in r.query:
        return "MULTIPART"
    if r.method == "PUT" and "uploadId" in r.query:
        return "MULTIPART"
    return r.method


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def via(proxy: "S3Proxy", wh) -> list:
    """CLI catalog arguments that reach the warehouse ``wh`` through ``proxy``."""
    return wh.cli_args(proxy.catalog_options(wh.path))
