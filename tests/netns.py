"""Hosts made of Linux network namespaces: each an ``ip netns`` with one veth into a bridge the test creates, on a
10.213.N.0/24 network (N from the test's pid), the bridge itself at .1 in the test's own namespace (so the test
process reaches every host). A host's processes run under ``ip netns exec``; killing a host kills every process
in its namespace, as pulling the plug on a machine would (the kernel closes their sockets).

    with Network() as net:
        a = net.host("a")                     # 10.213.N.2
        proc = a.run([sys.executable, "-m", "paimon_tail", ...])
        a.kill()

Needs root and ``ip``; ``Network.unavailable()`` says why not, for a skip.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid
from typing import Dict, List, Optional, Sequence


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class Host:
    def __init__(self, network: "Network", name: str, netns: str, address: str) -> None:
        self.network = network
        self.name = name
        self.netns = netns
        self.address = address
        self.processes: List[subprocess.Popen] = []

    @property
    def prefix(self) -> List[str]:
        return ["ip", "netns", "exec", self.netns]

    def run(self, argv: Sequence[str], env: Optional[Dict[str, str]] = None, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(self.prefix + list(argv), env=env, start_new_session=True, **kwargs)
        self.processes.append(proc)
        return proc

    def pids(self) -> List[int]:
        out = _ip("netns", "pids", self.netns, check=False).stdout
        return [int(p) for p in out.split()]

    def kill(self) -> None:
        """SIGKILL every process in the namespace (the host dies; its sockets close)."""
        for _ in range(3):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for proc in self.processes:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass


class Network:
    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:4]
        self.tag = tag
        self.subnet = 10 + os.getpid() % 240
        self.bridge = f"ptbr{tag}"
        self.gateway = f"10.213.{self.subnet}.1"
        self.hosts: Dict[str, Host] = {}
        self._veths: List[str] = []

    @staticmethod
    def unavailable() -> Optional[str]:
        """Why this machine cannot make hosts (None when it can)."""
        if not shutil.which("ip"):
            return "the ip command (iproute2) is not installed"
        if os.geteuid() != 0:
            return "network namespaces need root"
        probe = f"ptprobe{uuid.uuid4().hex[:4]}"
        r = _ip("netns", "add", probe, check=False)
        if r.returncode != 0:
            return f"ip netns add is not allowed here: {r.stderr.strip()}"
        _ip("netns", "del", probe, check=False)
        return None

    def start(self) -> "Network":
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def host(self, name: str) -> Host:
        index = len(self.hosts) + 2
        netns = f"pt{self.tag}{name}"
        inside, outside = f"v{self.tag}{index}a", f"v{self.tag}{index}b"
        address = f"10.213.{self.subnet}.{index}"
        _ip("netns", "add", netns)
        _ip("link", "add", inside, "type", "veth", "peer", "name", outside)
        self._veths.append(outside)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        _ip("link", "set", inside, "netns", netns)
        _ip("-n", netns, "addr", "add", f"{address}/24", "dev", inside)
        _ip("-n", netns, "link", "set", inside, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        host = self.hosts[name] = Host(self, name, netns, address)
        return host

    def close(self) -> None:
        for host in self.hosts.values():
            host.kill()
            _ip("netns", "del", host.netns, check=False)
        for veth in self._veths:
            _ip("link", "del", veth, check=False)
        _ip("link", "del", self.bridge, check=False)

    def __enter__(self) -> "Network":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
