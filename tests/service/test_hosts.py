"""The query service across hosts: network namespaces made by the test (tests/netns.py), a warehouse on the
S3-protocol test server, a coordinator on one host, executors on two others, lookups from a fourth.

* storage: moto's S3 server in its own namespace; the service reads it through our proxy on the bridge's address,
  the test's writer writes to it directly;
* coord: ``paimon-tail serve --executors 0`` (a coordinator alone), TLS + token;
* exa, exb: ``paimon-tail executor --join coord:7700 --host <own address>``, each advertising its own address;
* client: a loop of lookups of every key (and a few that do not exist) while a writer commits.

Then host exa is killed (every process in its namespace): its channels move to exb and answers resume within
5 s; exa comes back and takes its share again. Every answer is checked against pypaimon's batch read at the
snapshot it reports; the change stream refuses a caller without TLS or without the token.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

import grpc
import pyarrow as pa
import pytest

from tests.conftest import TestWarehouse
from paimon_tail.service.protocol.addresses import resolves_beyond_loopback

from tests.objectstore import S3Proxy, S3Server
from tests.netns import Network
from tests import REPO

pytestmark = [pytest.mark.hosts, pytest.mark.slow, pytest.mark.timeout(600)]

_REASON = Network.unavailable()
if _REASON:  # pragma: no cover - machines that forbid namespaces
    pytest.skip(f"!!! MULTI-HOST TESTS SKIPPED: {_REASON}. They need root and `ip netns`.", allow_module_level=True)

ROOT = REPO
TOKEN = "hosts-t0ken-9c1e"
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("amount", pa.float64()),
                    ("op", pa.string())])
DATES = ("2026-11-01", "2026-11-02")
N = 400
PORT = 7700


def _certs(d: Path, addresses: List[str]) -> Dict[str, str]:
    """A CA and one server certificate naming every executor's and the coordinator's address."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=paimon-tail hosts CA")
    (d / "san.ext").write_text("subjectAltName=" + ",".join(f"IP:{a}" for a in addresses) + "\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=svc")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "server.pem", "-days", "2", "-extfile", "san.ext")
    return {"ca": str(d / "ca.pem"), "cert": str(d / "server.pem"), "key": str(d / "server.key")}


class Lines:
    """A process's stderr, line by line, in a thread."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lines: List[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"no {text!r}:\n" + "\n".join(self.lines[-30:]))
            time.sleep(0.1)


def _rows(i: int, tag: str, op: str = "+I") -> dict:
    return {"id": i, "dt": DATES[i % 2], "name": f"{tag}-{i}", "amount": i * 0.25, "op": op}


def test_coordinator_two_executors_and_a_client_on_four_hosts(tmp_path):
    with Network() as net:
        storage, coord, exa, exb, client = (net.host(n) for n in ("storage", "coord", "exa", "exb", "client"))
        certs = _certs(tmp_path, [coord.address, exa.address, exb.address])
        with S3Server(host=storage.address, prefix=storage.prefix) as s3, S3Proxy(s3, host=net.gateway) as proxy:
            s3.create_bucket("lake")
            path = "s3://lake/hosts/warehouse"
            writer = TestWarehouse(path, s3.catalog_options(path))  # the writer goes to the storage host directly
            writer.create("t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
            writer.commit("t", [_rows(i, "v0") for i in range(N)])
            service_options = proxy.catalog_options(path)  # the service's hosts read through the proxy
            catalog = TestWarehouse(path, service_options).cli_args()
            env = dict(os.environ, PAIMON_TAIL_TOKEN=TOKEN, PYTHONPATH=str(ROOT))
            env.pop("PAIMON_WAREHOUSE", None)
            # mutual TLS: every server asks for a certificate signed by the CA (executors and clients show one)
            tls = ["--tls-cert", certs["cert"], "--tls-key", certs["key"], "--tls-ca", certs["ca"]]

            serve = Lines(coord.run([sys.executable, "-m", "paimon_tail", "serve", "db.t", *catalog, "--executors",
                                     "0", "--host", coord.address, "--port", str(PORT), *tls],
                                    env=env, stderr=subprocess.PIPE, text=True))
            serve.wait_for("waiting for executors", 60)

            def join(host):
                return Lines(host.run([sys.executable, "-m", "paimon_tail", "executor", "--join",
                                       f"{coord.address}:{PORT}", *catalog, "--host", host.address, *tls],
                                      env=env, stderr=subprocess.PIPE, text=True))

            executors = {"exa": join(exa), "exb": join(exb)}
            serve.wait_for("ready in", 90)

            # the registration (in the warehouse) says which executor serves which channels, at their addresses
            table = writer.table("t")
            reg = json.loads(table.file_io.read_file_utf8(f"{table.table_path}/service/service-paimon-tail-lookup"))
            assert reg["addresses"] == [f"{coord.address}:{PORT}"] and reg["tls"] and reg["auth"] == "token"
            assert sorted(a["address"].rsplit(":", 1)[0] for a in reg["assignment"]) == [exa.address, exb.address]
            assert sorted(c for a in reg["assignment"] for c in a["channels"]) == list(range(reg["channels"]))

            # the change stream has the lookups' TLS and token: no plaintext caller, none without a client
            # certificate, none without the token
            assert _join_code(f"{coord.address}:{PORT}", None, ()) == grpc.StatusCode.UNAVAILABLE
            ca = Path(certs["ca"]).read_bytes()
            assert _join_code(f"{coord.address}:{PORT}", grpc.ssl_channel_credentials(ca), ()) == \
                grpc.StatusCode.UNAVAILABLE
            creds = grpc.ssl_channel_credentials(ca, Path(certs["key"]).read_bytes(), Path(certs["cert"]).read_bytes())
            assert _join_code(f"{coord.address}:{PORT}", creds, ()) == grpc.StatusCode.UNAUTHENTICATED
            assert _join_code(f"{coord.address}:{PORT}", creds, (("authorization", f"Bearer {TOKEN}"),)) == \
                grpc.StatusCode.INVALID_ARGUMENT  # authenticated: then refused for not saying hello
            no_token = client.run([sys.executable, "-m", "paimon_tail", "executor", "--join", f"{coord.address}:{PORT}",
                                   *catalog, "--host", client.address, *tls],
                                  env={k: v for k, v in env.items() if k != "PAIMON_TAIL_TOKEN"},
                                  stderr=subprocess.PIPE, text=True)
            _, err = no_token.communicate(timeout=60)
            assert no_token.returncode == 1 and "refused this executor: missing bearer token" in err, err

            keys = [(i, DATES[i % 2]) for i in range(N + 20)] + [(i, "2026-11-09") for i in range(10)]
            loop = client.run([sys.executable, str(ROOT / "tests" / "lookup_loop.py"), "db.t",
                               json.dumps(keys), "--timeout", "8"],
                              env=dict(env, PAIMON_TAIL_LOOP_OPTIONS=json.dumps(service_options),
                                       PAIMON_TAIL_LOOP_TLS=json.dumps(certs)),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            answers: List[dict] = []
            threading.Thread(target=lambda: answers.extend(json.loads(line) for line in loop.stdout),
                             daemon=True).start()
            stop = threading.Event()
            commits: List[int] = []

            def write():
                n = 0
                while not stop.is_set():
                    n += 1
                    rows = [_rows(i, f"v{n}", "+U") for i in range(n % 7, N, 7)]
                    rows += [_rows(i, "gone", "-D") for i in range(n % 11, N, 53)]
                    commits.append(writer.commit("t", rows))
                    stop.wait(0.4)

            writing = threading.Thread(target=write, daemon=True)
            writing.start()
            try:
                _wait(lambda: sum("rows" in a for a in answers) >= 5 and commits, 60, lambda: answers[-3:])
                assert not any("error" in a or a["failed"] for a in answers), answers
                killed_at = time.time()
                exa.kill()  # the host dies: every process in its namespace
                _wait(lambda: any(a["start"] > killed_at + 0.5 and "rows" in a and not a["failed"]
                                  for a in answers), 30,
                      lambda: f"no answers after the kill: {answers[-3:]}\n" + "\n".join(serve.lines[-20:] + executors["exb"].lines[-40:]))
                time.sleep(2)
                executors["exa"] = join(exa)  # it comes back and takes its share again
                executors["exa"].wait_for("joined the service", 60)
                back_at = time.time()
                _wait(lambda: any(a["start"] > back_at + 1 for a in answers), 30)
                time.sleep(2)
                # many answers checked across many commits: on a busy machine the writer (through moto) is slower
                _wait(lambda: len(commits) > 5 and sum("rows" in a for a in answers) > 20, 60,
                      lambda: f"{len(commits)} commits, {len(answers)} answers")
            finally:
                stop.set()
                writing.join(30)
                loop.stdin.close()
                loop.wait(30)
            assert loop.returncode == 0, loop.stderr.read()

            serve.proc.terminate()
            assert serve.proc.wait(30) == 0, "\n".join(serve.lines[-30:])
            for name, ex in executors.items():  # told to stop by the coordinator
                assert ex.proc.wait(30) == 0, (name, ex.lines)

            # -- every answer, checked ----------------------------------------------------------------------------
            ok = [a for a in answers if "rows" in a]
            errors = [a for a in answers if "error" in a]
            assert len(ok) > 20 and len(commits) > 5
            resumed = min(a["end"] for a in ok if a["start"] > killed_at and not a["failed"])
            assert resumed - killed_at < 5.0, f"answers resumed {resumed - killed_at:.1f}s after the host died"
            print(f"answers resumed {resumed - killed_at:.2f}s after the host died; {len(ok)} lookups of "
                  f"{len(keys)} keys at {len(commits)} commits")
            assert all(killed_at <= a["start"] <= resumed for a in errors), errors  # only during the outage
            assert all(not a["failed"] for a in ok if a["start"] > resumed), "keys unanswered after the recovery"
            oracles: Dict[int, dict] = {}

            def at(snapshot: int) -> dict:
                if snapshot not in oracles:
                    t = writer.table("t").copy({"scan.snapshot-id": str(snapshot)})
                    rb = t.new_read_builder()
                    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
                    oracles[snapshot] = {(r["id"], r["dt"]): json.loads(json.dumps(r)) for r in rows}
                return oracles[snapshot]

            checked = 0
            for a in ok:
                rows = {int(pos): row for pos, row in a["rows"].items()}
                for pos, key in enumerate(keys):
                    if str(pos) in a["failed"]:
                        continue
                    assert rows.get(pos) == at(a["snapshots"][str(pos)]).get(key), (key, a["snapshots"][str(pos)])
                    checked += 1
            assert checked > 20 * len(keys) and len({s for a in ok for s in a["snapshots"].values()}) > 3


def _join_code(address: str, creds, metadata) -> grpc.StatusCode:
    """A Join call that sends nothing: how far it gets."""
    import asyncio

    async def go():
        ch = grpc.aio.insecure_channel(address) if creds is None else grpc.aio.secure_channel(address, creds)
        async with ch:
            call = ch.stream_stream("/paimon_tail.lookup.v1.AddressService/Join", request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)(iter([b""]), metadata=metadata, timeout=5)
            try:
                async for _ in call:
                    pass
            except grpc.aio.AioRpcError as e:
                return e.code()
            return grpc.StatusCode.OK

    return asyncio.run(go())


def _wait(predicate, timeout: float, why=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time {why()}"[:6000])
        time.sleep(0.1)


def test_wildcard_hosts_advertise_an_address_others_reach(tmp_path):
    """``--host 0.0.0.0`` on hosts whose name means loopback (a network namespace: ``getfqdn()`` is
    ``localhost``) and without a default route. The coordinator cannot tell where it is reached: one line asking
    for ``--advertise`` (it used to register ``localhost:PORT``). An executor dials the coordinator and
    advertises its own address on that route (it used to advertise ``localhost``, unreachable from the client's
    host), so a lookup from a third host is answered. A local warehouse: namespaces share the file system."""
    writer = TestWarehouse(str(tmp_path / "wh"))
    writer.create("t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    writer.commit("t", [_rows(i, "v0") for i in range(50)])
    env = dict(os.environ, PAIMON_TAIL_TOKEN=TOKEN, PYTHONPATH=str(ROOT))
    env.pop("PAIMON_WAREHOUSE", None)
    cli = [sys.executable, "-m", "paimon_tail"]
    with Network() as net:
        coord, exa, client = (net.host(n) for n in ("coord", "exa", "client"))
        name = socket.getfqdn()
        if not resolves_beyond_loopback(name):  # as in a container (here: the namespace shares /etc/hosts)
            refused = coord.run([*cli, "serve", "db.t", "-w", writer.path, "--executors", "0", "--host", "0.0.0.0"],
                                env=env, stderr=subprocess.PIPE, text=True)
            _, err = refused.communicate(timeout=60)
            lines = err.strip().splitlines()
            assert refused.returncode == 1 and "Traceback" not in err, err
            assert all("WARNING: serving on 0.0.0.0" in line for line in lines[:-1]), err  # no token/TLS: warned
            assert lines[-1] == ("paimon-tail: cannot tell clients and executors where to dial --host 0.0.0.0: this "
                                 f"machine's name ({name}) and routes lead only to loopback (give --advertise with "
                                 "an address the others reach this machine at)"), err

        serve = Lines(coord.run([*cli, "serve", "db.t", "-w", writer.path, "--executors", "0", "--host", "0.0.0.0",
                                 "--port", str(PORT), "--advertise", coord.address],
                                env=env, stderr=subprocess.PIPE, text=True))
        serve.wait_for("waiting for executors", 60)
        executor = Lines(exa.run([*cli, "executor", "--join", f"{coord.address}:{PORT}", "-w", writer.path,
                                  "--host", "0.0.0.0"], env=env, stderr=subprocess.PIPE, text=True))
        serve.wait_for("ready in", 90)
        table = writer.table("t")
        reg = json.loads(table.file_io.read_file_utf8(f"{table.table_path}/service/service-paimon-tail-lookup"))
        assert reg["addresses"] == [f"{coord.address}:{PORT}"]
        assert [a["address"].rsplit(":", 1)[0] for a in reg["assignment"]] == [exa.address], reg["assignment"]
        looked = client.run([*cli, "lookup", "db.t", "id=7,dt=2026-11-02", "-w", writer.path, "--format", "jsonl",
                             "--timeout", "10"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = looked.communicate(timeout=60)
        assert looked.returncode == 0 and '"name":"v0-7"' in out.replace(" ", ""), (out, err, executor.lines)
        serve.proc.terminate()
        assert serve.proc.wait(30) == 0, "\n".join(serve.lines[-30:])
        assert executor.proc.wait(30) == 0, executor.lines


def test_the_coordinator_host_dies_and_its_standby_takes_over(tmp_path):
    """Two coordinators (``serve --executors 0``) on hosts of their own, the second standing by; two executors
    joined from two more hosts (``--join`` naming both coordinators); a client host looking up every key every
    50 ms. The active coordinator's host dies: the standby takes over, the executors re-join it with the channels
    they had and keep answering meanwhile — no lookup fails. A local warehouse: namespaces share the file
    system (the registration's conditional write is the flock one)."""
    writer = TestWarehouse(str(tmp_path / "wh"))
    writer.create("t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    writer.commit("t", [_rows(i, "v0") for i in range(N)])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PAIMON_WAREHOUSE", None)
    env.pop("PAIMON_TAIL_TOKEN", None)
    cli = [sys.executable, "-m", "paimon_tail"]
    wh = ["-w", writer.path]
    path = f"{writer.path}/db.db/t/service/service-paimon-tail-lookup"
    with Network() as net:
        c1, c2, exa, exb, client = (net.host(n) for n in ("c1", "c2", "exa", "exb", "client"))
        first = Lines(c1.run([*cli, "serve", "db.t", *wh, "--executors", "0", "--host", c1.address, "--port",
                              str(PORT)], env=env, stderr=subprocess.PIPE, text=True))
        first.wait_for("waiting for executors", 60)
        join = f"{c1.address}:{PORT},{c2.address}:{PORT}"
        executors = [Lines(h.run([*cli, "executor", "--join", join, *wh, "--host", h.address], env=env,
                                 stderr=subprocess.PIPE, text=True)) for h in (exa, exb)]
        first.wait_for("ready in", 90)
        second = Lines(c2.run([*cli, "serve", "db.t", *wh, "--executors", "0", "--host", c2.address, "--port",
                               str(PORT)], env=env, stderr=subprocess.PIPE, text=True))
        second.wait_for("ready in", 60)
        _wait(lambda: json.load(open(path))["standbys"] == [f"{c2.address}:{PORT}"], 20)
        before = {a["address"]: sorted(a["channels"]) for a in json.load(open(path))["assignment"]}
        assert sorted(a.rsplit(":", 1)[0] for a in before) == [exa.address, exb.address]

        keys = [(i, DATES[i % 2]) for i in range(N)]
        loop = client.run([sys.executable, str(ROOT / "tests" / "lookup_loop.py"), "db.t", json.dumps(keys),
                           "--timeout", "8"], env=dict(env, PAIMON_TAIL_LOOP_OPTIONS=json.dumps(writer.options)),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        answers: List[dict] = []
        threading.Thread(target=lambda: answers.extend(json.loads(line) for line in loop.stdout), daemon=True).start()
        try:
            _wait(lambda: len(answers) >= 10, 60, lambda: answers[-3:])
            killed_at = time.time()
            c1.kill()  # the active coordinator's host dies
            second.wait_for("took over db.t", 30)
            _wait(lambda: json.load(open(path))["addresses"] == [f"{c2.address}:{PORT}"] and
                  {a["address"]: sorted(a["channels"]) for a in json.load(open(path))["assignment"]} == before, 30,
                  lambda: json.load(open(path)))
            _wait(lambda: sum(a["start"] > killed_at + 3 for a in answers) >= 20, 60)
        finally:
            loop.stdin.close()
            loop.wait(30)
        assert loop.returncode == 0, loop.stderr.read()
        bad = [a for a in answers if "error" in a or a["failed"] or a["missing"]]
        after = [a for a in answers if a["end"] > killed_at]
        slowest = max(a["end"] - a["start"] for a in after)
        print(f"\ncoordinator host killed: {len(answers)} lookups of {len(keys)} keys, {len(bad)} failed, slowest "
              f"after the kill {slowest * 1000:.0f} ms")
        assert not bad, bad[:3]
        assert all(a["rows"][str(pos)]["name"] == f"v0-{k[0]}" for a in answers for pos, k in enumerate(keys))
        for ex in executors:  # each joined the new active (their stderr says so twice)
            assert sum("joined the service at" in line for line in ex.lines) == 2, ex.lines
        second.proc.terminate()
        assert second.proc.wait(30) == 0, "\n".join(second.lines[-30:])
        for ex in executors:
            assert ex.proc.wait(30) == 0, ex.lines
