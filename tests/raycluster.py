"""A Ray cluster of several nodes on one machine, on 127.0.0.1, for tests and benchmarks.

Each node is its own ``ray start --block`` process (a raylet with its own
resources) started in a new process group, so that one node can be killed
with its raylet and its workers (``kill_node``) without touching any other
Ray on the machine. ``ray stop`` is never used: it stops every Ray instance
of the machine. Every port is picked free on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

RAY = Path(sys.executable).with_name("ray")

#: several nodes (Ray refuses a multi-node cluster when this is "0"); the cluster and its
#: drivers stay on loopback, share a token, and find a dead
#: node within a few seconds (Ray's default health check takes ~30 s)
LOOPBACK = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


#: every port handed out in this process: the kernel may give a port that was just
#: released again, and two components of one node on one port stop the node
_GIVEN: set[int] = set()


def free_port() -> int:
    """A free port on 127.0.0.1 that no earlier call returned."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


@dataclass(slots=True)
class Node:
    """One ``ray start --block`` process group."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    #: the raylet's port (Ray reports it as a node's ``NodeManagerPort``)
    node_manager_port: int

    def pids(self) -> list[int]:
        """Every live process of this node: its group (raylet, agents) and their descendants.

        The raylet starts its workers in process groups of their own, so they
        are found as its descendants.
        """
        found: set[int] = set()
        for proc in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(proc.pid) == self.process.pid:
                    found.add(proc.pid)
                    found.update(child.pid for child in proc.children(recursive=True))
            except (ProcessLookupError, psutil.Error):
                continue
        return sorted(found)


@dataclass(slots=True)
class LocalCluster:
    address: str
    temp: Path
    env: dict[str, str]
    nodes: list[Node] = field(default_factory=list)

    def add_node(self, num_cpus: int, *, head: bool = False) -> Node:
        name = "head" if head else f"node{len(self.nodes)}"
        log = self.temp / f"{name}.log"
        manager = free_port()
        ports = [
            f"--node-manager-port={manager}",
            f"--object-manager-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
        ]
        where = (
            [
                "--head",
                f"--port={self.address.rsplit(':', 1)[1]}",
                f"--temp-dir={self.temp}",
                "--include-dashboard=false",
                # the minimal dashboard process still starts, by default on port 8265
                f"--dashboard-port={free_port()}",
            ]
            if head
            else [f"--address={self.address}"]
        )
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    str(RAY),
                    "start",
                    "--block",
                    "--node-ip-address=127.0.0.1",
                    f"--num-cpus={num_cpus}",
                    "--object-store-memory=100000000",
                    "--disable-usage-stats",
                    *where,
                    *ports,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        node = Node(name, process, log, manager)
        self.nodes.append(node)
        return node

    def alive_nodes(self) -> int:
        """How many nodes the cluster itself reports alive (asks the GCS in a subprocess)."""
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, ray._raylet as r; from ray.core.generated import gcs_pb2; "
                "nodes = r.GcsClient(address=sys.argv[1]).get_all_node_info(timeout=10); "
                "print(sum(n.state == gcs_pb2.GcsNodeInfo.ALIVE for n in nodes.values()))",
                self.address,
            ],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        lines = done.stdout.strip().splitlines()
        return int(lines[-1]) if lines and lines[-1].isdigit() else 0

    def wait_for(self, count: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.process.poll() is not None:
                    raise RuntimeError(
                        f"ray node {node.name} exited: {node.log.read_text()[-2000:]}"
                    )
            if self.alive_nodes() >= count:
                return
            time.sleep(1)
        raise RuntimeError(f"the Ray cluster did not reach {count} live nodes in {timeout} s")

    def kill_node(self, node: Node) -> list[int]:
        """SIGKILL a node's whole process group: its raylet, agents and workers."""
        pids = node.pids()
        os.killpg(node.process.pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.process.wait(timeout=30)
        return pids

    def stop(self) -> None:
        """Stop every node this cluster started (worker nodes first), by process group.

        The processes are listed before the signal: once a raylet is gone, its
        workers are no longer its descendants.
        """
        listed = {node.name: node.pids() for node in self.nodes}
        for node in reversed(self.nodes):
            if node.process.poll() is None:
                os.killpg(node.process.pid, signal.SIGTERM)
        for node in reversed(self.nodes):
            try:
                # a node drains for up to 30 s on SIGTERM; nothing here needs draining
                node.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait(timeout=20)
        time.sleep(1)
        for node in self.nodes:
            # workers (and their provers) that outlived their raylet
            for pid in set(listed[node.name]) | set(node.pids()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@contextmanager
def local_cluster(temp: Path, cpus: tuple[int, ...] = (1, 1, 1)) -> Iterator[LocalCluster]:
    """A cluster of ``len(cpus)`` nodes (the first is the head) on 127.0.0.1."""
    cluster = LocalCluster(f"127.0.0.1:{free_port()}", temp, {**os.environ, **LOOPBACK})
    try:
        cluster.add_node(cpus[0], head=True)
        cluster.wait_for(1)
        # one at a time: nodes that register at once can time out on 2 cores
        for number, count in enumerate(cpus[1:], start=2):
            cluster.add_node(count)
            cluster.wait_for(number)
        yield cluster
    finally:
        cluster.stop()
