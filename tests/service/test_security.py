"""Security with real servers: loopback by default and a loud warning beyond it, TLS and mutual TLS (certificates
made at test time with the openssl CLI), a bearer token on every gRPC method of both services, a registration
without secrets, owner-only local files. See docs/security.md.

tests/service/test_faults.py::test_token_required covers the CLI without / with a wrong / with the right token.
"""
from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess

import grpc
import pytest

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, run_cli, wait_until

TOKEN = "t0ken-for-tests-7f3a"
METHODS = {
    "address": ["/paimon_tail.lookup.v1.AddressService/Join", "/paimon_tail.lookup.v1.AddressService/Executors",
                "/paimon_tail.lookup.v1.AddressService/Status"],
    "executor": ["/paimon_tail.lookup.v1.ExecutorService/Lookup"],
}


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all signed by the CA."""
    d = tmp_path_factory.mktemp("certs")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=paimon-tail test CA", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", "-extfile", "san.ext", cwd=d)
    (d / "other-ca.key").write_text("")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.pem",
             "-days", "2", "-subj", "/CN=another CA", cwd=d)
    return d


@pytest.fixture(scope="module")
def secure(tmp_path_factory, certs):
    """One service with mutual TLS and a token, its executors' files in a known --local-dir."""
    wh = Warehouse(str(tmp_path_factory.mktemp("wh")))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=2)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(50)])
    local = tmp_path_factory.mktemp("local") / "executors"
    svc = ServeProcess(wh.path, ["db.kv"], "--tls-cert", str(certs / "server.pem"), "--tls-key",
                       str(certs / "server.key"), "--tls-ca", str(certs / "ca.pem"), "--local-dir", str(local),
                       env={"PAIMON_TAIL_TOKEN": TOKEN}).wait_ready()
    yield wh, svc, local
    assert svc.stop() == 0


def _client_tls(certs, client_cert=True):
    args = ["--tls-ca", str(certs / "ca.pem")]
    if client_cert:
        args += ["--tls-cert", str(certs / "client.pem"), "--tls-key", str(certs / "client.key")]
    return args


def _registration(wh) -> str:
    return open(f"{wh.path}/db.db/kv/service/service-paimon-tail-lookup").read()


def _executor_addresses(wh, certs):
    r = run_cli("service", "status", "db.kv", "--warehouse", wh.path, "--json", *_client_tls(certs),
                env={"PAIMON_TAIL_TOKEN": TOKEN})
    assert r.returncode == 0, r.stderr
    return [e["address"] for e in json.loads(r.stdout)["executor"]]


def test_loopback_by_default_tls_registration_without_secrets(secure, certs):
    wh, svc, _ = secure
    text = _registration(wh)
    reg = json.loads(text)
    assert reg["addresses"][0].startswith("127.0.0.1:")
    assert all(a.startswith("127.0.0.1:") for a in _executor_addresses(wh, certs))
    assert reg["tls"] is True and reg["auth"] == "token"
    assert TOKEN not in text and "PRIVATE KEY" not in text and "BEGIN" not in text
    assert not any(word in text.lower() for word in ("secret", "password", ".key"))
    assert not any("WARNING" in line for line in svc.lines)  # loopback: no warning
    for name in os.listdir(f"{wh.path}/db.db/kv/service"):  # nothing else there holds the token either
        assert TOKEN not in open(f"{wh.path}/db.db/kv/service/{name}").read()


def test_mutual_tls_and_token_through_the_cli(secure, certs, tmp_path):
    wh, _, _ = secure
    env = {"PAIMON_TAIL_TOKEN": TOKEN}
    ok = run_cli("lookup", "db.kv", "7", "--warehouse", wh.path, *_client_tls(certs), env=env)
    assert ok.returncode == 0 and json.loads(ok.stdout)["v"] == "v7", ok.stderr
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    ok = run_cli("lookup", "db.kv", "7", "--warehouse", wh.path, *_client_tls(certs), "--token-file", str(token_file))
    assert ok.returncode == 0, ok.stderr
    cases = [
        ([], env, "uses TLS"),  # no TLS options at all
        (_client_tls(certs), {}, "requires a token"),  # TLS but no token
        (_client_tls(certs), {"PAIMON_TAIL_TOKEN": "wrong"}, "refused the credentials"),
        (_client_tls(certs, client_cert=False), env, "no live service"),  # mutual TLS: no client cert
        (["--tls-ca", str(certs / "other-ca.pem"), "--tls-cert", str(certs / "client.pem"), "--tls-key",
          str(certs / "client.key")], env, "TLS handshake failed"),  # server not trusted
    ]
    for args, e, message in cases:
        r = run_cli("lookup", "db.kv", "7", "--warehouse", wh.path, "--timeout", "3", *args, env=e)
        assert r.returncode == 1 and message in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
        assert r.stdout == ""


def _raw(address: str, method: str, creds, metadata) -> grpc.StatusCode:
    async def go():
        if creds is None:
            ch = grpc.aio.insecure_channel(address)
        else:
            ch = grpc.aio.secure_channel(address, creds)
        async with ch:
            call = ch.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            try:
                await call(b"", timeout=3, metadata=metadata)
            except grpc.aio.AioRpcError as e:
                return e.code()
            return grpc.StatusCode.OK

    return asyncio.run(go())


def test_token_on_every_method_of_both_servers(secure, certs):
    wh, _, _ = secure
    address = json.loads(_registration(wh))["addresses"][0]
    executor = _executor_addresses(wh, certs)[0]
    creds = grpc.ssl_channel_credentials(
        (certs / "ca.pem").read_bytes(), (certs / "client.key").read_bytes(), (certs / "client.pem").read_bytes())
    for server, methods in METHODS.items():
        target = address if server == "address" else executor
        for method in methods:
            assert _raw(target, method, creds, ()) == grpc.StatusCode.UNAUTHENTICATED, method
            assert _raw(target, method, creds, (("authorization", "Bearer nope"),)) == \
                grpc.StatusCode.UNAUTHENTICATED, method
            assert _raw(target, method, creds, (("authorization", TOKEN),)) == \
                grpc.StatusCode.UNAUTHENTICATED, method  # the scheme matters
            # the right token gets past authentication (the empty request may then be refused as invalid)
            assert _raw(target, method, creds, (("authorization", f"Bearer {TOKEN}"),)) != \
                grpc.StatusCode.UNAUTHENTICATED, method
            # plaintext to a TLS port, or TLS without a client certificate: no call gets through at all
            assert _raw(target, method, None, (("authorization", f"Bearer {TOKEN}"),)) == \
                grpc.StatusCode.UNAVAILABLE, method
            no_client_cert = grpc.ssl_channel_credentials((certs / "ca.pem").read_bytes())
            assert _raw(target, method, no_client_cert, (("authorization", f"Bearer {TOKEN}"),)) == \
                grpc.StatusCode.UNAVAILABLE, method


def test_executor_local_files_are_owner_only(secure):
    _, _, local = secure
    assert stat.S_IMODE(os.stat(local).st_mode) == 0o700
    seen_files = frames = 0
    for root, dirs, files in os.walk(local):
        for d in dirs:
            mode = stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode)
            assert mode & 0o077 == 0, f"{os.path.join(root, d)} is {oct(mode)}"
        for f in files:
            mode = stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode)
            assert mode & 0o077 == 0, f"{os.path.join(root, f)} is {oct(mode)}"
            seen_files += 1
            frames += f.endswith(".frames")
    assert frames >= 1 and seen_files >= 2  # row files of the stores (and more): there is something to check


@pytest.mark.slow
def test_beyond_loopback_warns_loudly(tmp_path, certs):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=1)
    wh.write("kv", [{"k": 1, "v": "a", "op": "+I"}])
    svc = ServeProcess(wh.path, ["db.kv"], "--host", "0.0.0.0", executors=1)
    try:
        wait_until(lambda: any("WARNING" in line for line in svc.lines), 30)
        warning = next(line for line in svc.lines if "WARNING" in line)
        assert warning == ("paimon-tail: WARNING: serving on 0.0.0.0, reachable beyond this machine WITHOUT a token "
                           "(set PAIMON_TAIL_TOKEN or --token-file) and WITHOUT TLS")
    finally:
        svc.stop()
    svc = ServeProcess(wh.path, ["db.kv"], "--host", "0.0.0.0", "--tls-cert", str(certs / "server.pem"),
                       "--tls-key", str(certs / "server.key"), executors=1, env={"PAIMON_TAIL_TOKEN": TOKEN})
    try:
        wait_until(lambda: any("WARNING" in line for line in svc.lines), 30)
        warning = next(line for line in svc.lines if "WARNING" in line)
        assert warning == "paimon-tail: WARNING: serving on 0.0.0.0, reachable beyond this machine"
    finally:
        svc.stop()
