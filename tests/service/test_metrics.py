"""Prometheus metrics: ``serve --metrics-port`` (one scrape: the coordinator and its executors) and ``executor
--metrics-port``, scraped by a real Prometheus server (Debian's ``prometheus`` package, installed here when
missing) on loopback and read back through its HTTP API; the alert rules of docs/examples load in it."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from paimon_tail.catalog import catalog_config
from paimon_tail.service.client import LookupClient

from tests.service.conftest import PLAIN_SCHEMA, ServeProcess, Warehouse, wait_until
from tests.service.executor.test_join import Joined

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parent.parent.parent
RULES = ROOT / "docs" / "examples" / "paimon-tail-alerts.yml"


def prometheus_binary() -> str:
    """Debian's prometheus, installed with apt-get when it is not there yet (as .ci/run does)."""
    found = shutil.which("prometheus")
    if found:
        return found
    why = "not root" if os.geteuid() != 0 else ""
    if not why:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "prometheus"]):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
            if r.returncode != 0:
                why = f"{' '.join(cmd)} failed: {r.stderr.strip()[-300:]}"
                break
    found = shutil.which("prometheus")
    if not found:
        pytest.skip(f"!!! PROMETHEUS TEST SKIPPED: Debian's prometheus package could not be installed ({why})")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def _samples(text: str) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _metrics_address(proc) -> str:
    for line in proc.lines:
        m = re.search(r"metrics at http://([^/]+)/metrics", line)
        if m:
            return m.group(1)
    raise AssertionError(f"no metrics line: {proc.lines}")


def test_prometheus_scrapes_serve_and_an_executor(tmp_path):
    binary = prometheus_binary()
    wh = Warehouse(str(tmp_path / "wh"))
    wh.create("kv", PLAIN_SCHEMA, primary_keys=["k"], bucket=4)
    wh.write("kv", [{"k": k, "v": f"v{k}", "op": "+I"} for k in range(500)])
    svc = ServeProcess(wh.path, ["db.kv"], "--metrics-port", "0").wait_ready()
    joined = prom = None
    try:
        serve_metrics = _metrics_address(svc)
        coordinator = json.load(open(f"{wh.path}/db.db/kv/service/service-paimon-tail-lookup"))["addresses"][0]
        joined = Joined(wh.path, coordinator, "--metrics-port", "0")
        assert joined.announced.wait(30), joined.lines
        executor_metrics = _metrics_address(joined)
        with LookupClient("db.kv", catalog_config(wh.path)) as c:
            wait_until(lambda: len(c.status_sync().executors) == 3 and all(
                e.info.alive and e.info.snapshot_id for e in c.status_sync().executors), 30)
            for _ in range(5):
                r = c.lookup_sync(list(range(490, 510)))  # 10 found, 10 missing per call
                assert len(r.found) == 10 and len(r.missing) == 10
            sid = wh.write("kv", [{"k": 1, "v": "w1", "op": "+U"}])
            assert c.get_sync(1, min_snapshot=sid)["v"] == "w1"

        # one scrape of serve: the coordinator and its three executors (two of its own, one joined)
        def scraped() -> dict:
            return _samples(_get(f"http://{serve_metrics}/metrics"))

        wait_until(lambda: sum(v for (n, l), v in scraped().items()
                               if n == "paimon_tail_lookup_keys_total" and ("result", "found") in l) >= 51, 10)
        s = scraped()
        executors = {dict(l)["executor"] for (n, l) in s if n == "paimon_tail_lookup_requests_total"}
        assert len(executors) == 3, executors
        assert sum(v for (n, l), v in s.items() if n == "paimon_tail_lookup_keys_total" and
                   ("result", "missing") in l) == 50
        assert s[("paimon_tail_executors", (("state", "alive"),))] == 3
        assert s[("paimon_tail_channels", (("state", "served"),))] == 16
        assert s[("paimon_tail_coordinator_active", ())] == 1 and s[("paimon_tail_ready", ())] == 1
        assert s[("paimon_tail_table_snapshot", (("table", "db.kv"),))] == sid
        assert all(v == sid for (n, l), v in s.items() if n == "paimon_tail_served_snapshot")
        assert sum(v for (n, l), v in s.items() if n == "paimon_tail_files") >= 4
        assert sum(v for (n, l), v in s.items() if n == "paimon_tail_disk_bytes") > 0
        assert sum(v for (n, l), v in s.items() if n == "paimon_tail_commit_visible_seconds_count") >= 3
        assert any(n == "paimon_tail_lag_seconds" for (n, _) in s)
        # the executor's own endpoint: its counters alone
        own = _samples(_get(f"http://{executor_metrics}/metrics"))
        assert {dict(l)["executor"] for (n, l) in own if n == "paimon_tail_lookup_requests_total"} == \
            {next(iter(executors - {"0", "1"}))}
        assert own[("paimon_tail_ready", ())] == 1

        # a real Prometheus scrapes both every second; the result read through its HTTP API
        port = _free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{RULES}']\n"
            "scrape_configs:\n"
            f"  - job_name: paimon-tail\n    static_configs: [{{targets: ['{serve_metrics}']}}]\n"
            f"  - job_name: paimon-tail-executor\n    static_configs: [{{targets: ['{executor_metrics}']}}]\n")
        prom = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        api = f"http://127.0.0.1:{port}/api/v1"

        def query(q: str) -> list:
            try:
                answer = json.loads(_get(f"{api}/query?query={urllib.parse.quote(q)}"))
            except OSError:
                return []
            return answer["data"]["result"] if answer.get("status") == "success" else []

        wait_until(lambda: len(query('up == 1')) == 2, 60)
        wait_until(lambda: query('sum(paimon_tail_lookup_keys_total{job="paimon-tail",result="found"})'), 30)
        found = float(query('sum(paimon_tail_lookup_keys_total{job="paimon-tail",result="found"})')[0]["value"][1])
        assert found >= 51
        alive = query('paimon_tail_executors{job="paimon-tail",state="alive"}')
        assert float(alive[0]["value"][1]) == 3
        assert query('paimon_tail_served_snapshot{job="paimon-tail-executor"}')
        wait_until(lambda: query('histogram_quantile(0.99, sum by (le) '
                                 '(rate(paimon_tail_lookup_duration_seconds_bucket{job="paimon-tail"}[1m])))'), 30)
        rules = json.loads(_get(f"{api}/rules"))["data"]["groups"][0]["rules"]
        assert {r["name"] for r in rules} >= {"PaimonTailNotReady", "PaimonTailLagging", "PaimonTailNoStandby"}
        wait_until(lambda: all(r["health"] == "ok" for r in json.loads(_get(f"{api}/rules"))["data"]["groups"][0]
                               ["rules"]), 30)
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(30)
        assert svc.stop() == 0, svc.lines
        if joined is not None:
            assert joined.wait(15) == 0, joined.lines
