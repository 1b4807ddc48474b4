"""The bank on a Ray cluster of several nodes on this machine, with per-node figures.

    nice -n 19 .venv/bin/python bench/ray_nodes.py [--nodes 3] [--cpus 1] [-- ORCH BANK ARGS]

Starts ``--nodes`` Ray nodes on 127.0.0.1 (each its own ``ray start`` with
``--cpus`` CPUs, see ``tests/raycluster.py``), runs ``orch bank --executor ray``
on them, prints the bank's tables (with one row per node: attempts, prover
CPU, share of attempts that found their file warm) and stops the nodes it
started (by process group; never ``ray stop``). The result JSON in
``bench/results/`` holds the same figures under ``nodes``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.raycluster import local_cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=1, help="CPUs each node offers")
    parser.add_argument("bank_args", nargs="*", help="more arguments for orch bank")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orch-ray-") as temp:
        started = time.monotonic()
        with local_cluster(Path(temp), cpus=(args.cpus,) * args.nodes) as cluster:
            print(
                f"{args.nodes} Ray nodes up at {cluster.address} in "
                f"{time.monotonic() - started:.1f} s",
                flush=True,
            )
            done = subprocess.run(
                [
                    str(Path(sys.executable).with_name("orch")),
                    "bank",
                    "--executor",
                    "ray",
                    "--ray-address",
                    cluster.address,
                    "--out",
                    str(REPO / "bench" / "results"),
                    *args.bank_args,
                ],
                cwd=REPO,
                env=cluster.env,
                check=False,
            )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
