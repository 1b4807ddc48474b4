"""Where attempts run: in this process (``local``) or on a Ray cluster (``ray``).

The scheduler hands each attempt (one strategy on one goal, with its budget)
to an executor and gets a :class:`~.strategies.base.StrategyResult` back.
Everything else stays on the driver: the queue, the bandit, the ledger, the
whole-file verification and the writing of files.

``local`` opens a session from the project's tools in this process.

``ray`` keeps one long-lived actor per cluster node (:class:`ProverWorker`).
An actor holds warm provers per project, so attempts on a file are routed to
the actor that already loaded it; it runs its own CPU governor, so the CPU
target applies per node. Project files reach the actors through a shared path
(the attempt carries the file's text; ``_CoqProject`` flags and compiled
dependencies are read where the file lives). An actor whose process dies is
restarted by Ray on its node and the attempt that was running is retried there
(``max_restarts``/``max_task_retries``). An actor is pinned to its node: when
the node dies, the actor cannot be restarted, the driver drops it, its files
are routed to the actors of the surviving nodes, and the attempt is sent
again to one of them. The driver records an attempt only when its result
arrives, under an idempotency key, so none is recorded twice.

Per node, the driver counts the attempts that ran there, their prover CPU,
and how many found their file warm (the node's actor had already worked on
that file, so its prover pool holds a ``coqtop`` with the file loaded).

Ray is an optional dependency: ``pip install 'proof-orchestrator[distributed]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import OrchError, PrefixError, ProverError
from ..goals import Budget, Outcome
from ..provers.backend import Hole
from ..scheduler.governor import CpuGovernor, _tree_cpu
from ..strategies.base import Strategy, StrategyResult
from .attempts import run_attempt
from .lineup import build_lineup
from .reports import FillOptions
from .toolbox import Toolbox

__all__ = [
    "AttemptDone",
    "AttemptRequest",
    "ExecutorError",
    "RayExecutor",
    "make_strategies",
]

log = logging.getLogger(__name__)


class ExecutorError(OrchError):
    """The executor cannot run (Ray missing, cluster unreachable)."""


@dataclass(frozen=True, slots=True)
class AttemptRequest:
    """Everything a worker needs for one attempt (plain, picklable data)."""

    hole: Hole
    #: the file's text the goal was found in
    text: str
    strategy: str
    budget: Budget
    #: scripts for the ``cached`` strategy (the ledger stays on the driver)
    popular: tuple[str, ...] = ()
    #: a stable key for routing the attempt to a warm worker (the file)
    route: str = ""


@dataclass(frozen=True, slots=True)
class AttemptDone:
    """What an actor sends back: the result, where it ran, and whether the file was warm."""

    result: StrategyResult
    node_id: str
    #: the actor had already worked on this file (its provers hold it loaded)
    warm: bool


@dataclass(slots=True)
class NodeTally:
    """The driver's count of the attempts that ran on one node."""

    node_id: str
    address: str
    cpus: float
    attempts: int = 0
    warm: int = 0
    prover_cpu_seconds: float = 0.0
    #: the node died during the run (its files went to the other nodes)
    lost: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "address": self.address,
            "cpus": self.cpus,
            "attempts": self.attempts,
            "warm": self.warm,
            "warm_share": round(self.warm / self.attempts, 4) if self.attempts else 0.0,
            "prover_cpu_seconds": round(self.prover_cpu_seconds, 3),
            "lost": self.lost,
        }


#: how many times one attempt is sent again after the actor it went to was lost
MAX_RESENDS = 5
#: how long an attempt waits for some actor to answer while actors are unreachable
#: (Ray declares a node dead after its health checks fail: about 30 s by default)
UNAVAILABLE_SECONDS = 300.0


def make_strategies(options: FillOptions, popular: Sequence[str]) -> list[Strategy]:
    """Every strategy an executor may be asked to run, built without the ledger."""
    settings = dataclasses.replace(options.orch, profile=max(1, options.orch.profile))
    return build_lineup(settings, None, popular=popular)


class ProverWorker:
    """The body of the Ray actor: warm provers and a CPU governor for one node.

    Decorated with ``ray.remote`` by :class:`RayExecutor` (so that importing
    this module does not need Ray).
    """

    def __init__(self, options: FillOptions, cpu_target: float, sessions: int) -> None:
        self.options = options
        self.governor = CpuGovernor.for_settings(
            dataclasses.replace(options.orch, cpu_target=cpu_target), sessions
        )
        self.tools = Toolbox(options, self.governor.gate)
        #: the actor's life (its governor ticking, in a task group), from its first attempt
        #: to shutdown; a Ray actor's life is no one call, so this one task holds it
        self._life: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self.served = 0
        #: the files this actor has worked on (its provers keep them loaded)
        self._seen: set[str] = set()

    async def attempt(self, request: AttemptRequest) -> AttemptDone:
        import ray

        if self._life is None:
            # a restarted actor starts its life again with its first attempt
            self._life = asyncio.create_task(self._live(), name="node-life")
        strategies = {s.name: s for s in make_strategies(self.options, request.popular)}
        strategy = strategies[request.strategy]
        tools = self.tools.for_hole(request.hole)
        self.served += 1
        warm = bool(request.route) and request.route in self._seen
        self._seen.add(request.route)
        node = str(ray.get_runtime_context().get_node_id())
        async with self.governor.slot():
            try:
                result = await run_attempt(
                    tools, strategy, request.hole, request.text, request.budget
                )
            except (ProverError, PrefixError) as exc:
                result = StrategyResult(Outcome.ERROR, (), 0, 0.0, 0.0, str(exc))
        return AttemptDone(result, node, warm)

    def pid(self) -> int:
        return os.getpid()

    def cpu_seconds(self) -> float:
        """CPU of this worker process and the provers it runs, so far."""
        return _tree_cpu()

    def stats(self) -> dict[str, Any]:
        import ray

        return {
            "pid": os.getpid(),
            "node_id": str(ray.get_runtime_context().get_node_id()),
            "served": self.served,
            "cpu_seconds": _tree_cpu(),
        }

    async def _live(self) -> None:
        """Until shutdown: the node's governor ticks (owned by its task group)."""
        async with self.governor.running():
            await self._closing.wait()

    async def shutdown(self) -> None:
        """Stop the governor (the life ends on its own, nothing cancelled by hand), then
        close the provers."""
        self._closing.set()
        if self._life is not None:
            await self._life
        await self.tools.aclose()


@dataclass(slots=True)
class _Actor:
    handle: Any
    node_id: str
    busy: int = 0
    routes: set[str] = field(default_factory=set)
    #: unreachable until then (restarting, or its node is dying): others are picked first
    suspect_until: float = 0.0


class RayExecutor:
    """Attempts on a Ray cluster: one warm :class:`ProverWorker` actor per node."""

    name = "ray"

    def __init__(self, options: FillOptions, address: str = "") -> None:
        self.options = options
        self.address = address
        self.actors: list[_Actor] = []
        #: per node: attempts, warm attempts and prover CPU (kept on the driver, so a
        #: node that dies keeps its figures)
        self.nodes: dict[str, NodeTally] = {}
        self._started_ray = False

    async def start(self) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ExecutorError(
                "the Ray executor needs Ray: pip install 'proof-orchestrator[distributed]'"
            ) from exc
        await asyncio.to_thread(self._connect, ray)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        sessions = self.options.orch.max_light + self.options.orch.max_heavy
        remote = ray.remote(ProverWorker)
        nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
        if not nodes:
            raise ExecutorError(f"the Ray cluster at {self.address or 'local'} has no live node")
        for node in nodes:
            # pinned (soft=False): restarted on its node when its process dies, never
            # moved to another node (where it would double that node's CPU share)
            handle = remote.options(
                num_cpus=0,
                max_concurrency=sessions + 2,
                max_restarts=-1,
                max_task_retries=3,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote(self.options, self.options.orch.cpu_target, sessions)
            self.actors.append(_Actor(handle, node["NodeID"]))
            self.nodes[node["NodeID"]] = NodeTally(
                node["NodeID"],
                f"{node.get('NodeManagerAddress', '')}:{node.get('NodeManagerPort', '')}",
                float(node.get("Resources", {}).get("CPU", 0.0)),
            )
        # wait until every actor answers, so start-up failures surface here
        await asyncio.gather(*(a.handle.pid.remote() for a in self.actors))

    def _connect(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {
            "logging_level": logging.WARNING,
            "log_to_driver": False,
            "namespace": "orch",
        }
        host = self.address.rsplit(":", 1)[0] if ":" in self.address else self.address
        if not self.address or host in ("127.0.0.1", "localhost"):
            # a local cluster, or one on loopback: this driver joins it on loopback too
            kwargs["_node_ip_address"] = "127.0.0.1"
        if self.address and "RAY_AUTH_MODE" not in os.environ:
            # `ray start` turns token authentication on when a token exists
            # (~/.ray/auth_token); a driver must then present it too
            with contextlib.suppress(ImportError):
                from ray._private.authentication.authentication_token_setup import (
                    maybe_enable_token_auth_if_token_available,
                )

                maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
        try:
            if self.address:
                ray.init(address=self.address, **kwargs)
            else:
                ray.init(include_dashboard=False, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(
                f"cannot connect to the Ray cluster at {self.address or '(local)'}: {exc}. "
                "Start one with `ray start --head`, or leave --ray-address empty for a "
                "local one."
            ) from exc
        self._started_ray = True

    def _pick(self, route: str) -> _Actor:
        """The least busy actor that has this file warm, unless another is less busy.

        A node with less to do takes the file (and keeps it warm from then on):
        on a cluster with more nodes than files, every node works. Actors that
        were just unreachable are picked only when no other is left.
        """
        now = time.monotonic()
        candidates = [a for a in self.actors if a.suspect_until <= now] or self.actors
        idle = min(candidates, key=lambda a: a.busy)
        warm = [a for a in candidates if route and route in a.routes]
        coolest = min(warm, key=lambda a: a.busy) if warm else None
        chosen = coolest if coolest is not None and coolest.busy <= idle.busy else idle
        if route:
            chosen.routes.add(route)
        return chosen

    async def attempt(
        self, request: AttemptRequest, on_cancel: Callable[[float], None] | None = None
    ) -> StrategyResult:
        """Run one attempt on the actor that has its file warm; resend it if that node dies."""
        import ray
        from ray.exceptions import ActorUnavailableError, ActorUnschedulableError, RayActorError

        lost = 0
        deadline = time.monotonic() + UNAVAILABLE_SECONDS
        while True:
            if not self.actors:
                raise ExecutorError(
                    "no Ray node is left to run attempts on (every actor was lost); "
                    "check the cluster with `ray status`, then run the same command again "
                    "to resume"
                )
            actor = self._pick(request.route)
            actor.busy += 1
            ref = actor.handle.attempt.remote(request)
            try:
                done: AttemptDone = await ref
            except asyncio.CancelledError:
                ray.cancel(ref)
                if on_cancel is not None:
                    on_cancel(0.0)
                raise
            except ActorUnavailableError as exc:
                # restarting on its node, or its node is dying and not yet declared dead:
                # its files go elsewhere, and it is picked last for a while
                if time.monotonic() > deadline:
                    raise ExecutorError(
                        f"no Ray actor answered for {UNAVAILABLE_SECONDS:.0f} s; check the "
                        "cluster with `ray status`, then run the same command again to resume"
                    ) from exc
                log.warning("Ray actor on node %s unavailable (%s); resending", actor.node_id, exc)
                actor.routes.discard(request.route)
                actor.suspect_until = time.monotonic() + 5.0
                await asyncio.sleep(0.5)
                continue
            except (ActorUnschedulableError, RayActorError) as exc:
                # pinned to a node that died (unschedulable), or dead past its restarts
                self._drop(actor, exc)
                lost += 1
                if lost > MAX_RESENDS:
                    raise ExecutorError(
                        f"an attempt on {request.hole.goal.name} was lost {lost} times with "
                        "its Ray actor; check the cluster with `ray status`"
                    ) from exc
                continue
            finally:
                actor.busy -= 1
            tally = self.nodes.get(done.node_id)
            if tally is not None:
                tally.attempts += 1
                tally.warm += int(done.warm)
                tally.prover_cpu_seconds += done.result.cpu_seconds
            return done.result

    def _drop(self, actor: _Actor, exc: BaseException) -> None:
        """An actor is gone for good (its node died): its files go to the other actors."""
        import ray

        if actor not in self.actors:
            return
        self.actors.remove(actor)
        tally = self.nodes.get(actor.node_id)
        if tally is not None:
            tally.lost = True
        log.warning(
            "Ray node %s is gone (%s): its %d file(s) go to the %d other node(s)",
            actor.node_id,
            type(exc).__name__,
            len(actor.routes),
            len(self.actors),
        )
        with contextlib.suppress(Exception):
            ray.kill(actor.handle, no_restart=True)

    def node_stats(self) -> list[dict[str, Any]]:
        """Per node: attempts, warm attempts and their share, prover CPU, lost or not."""
        return [tally.as_dict() for tally in self.nodes.values()]

    async def worker_stats(self) -> list[dict[str, Any]]:
        """What each live actor served and the CPU its process tree used."""
        return list(await asyncio.gather(*(a.handle.stats.remote() for a in self.actors)))

    async def aclose(self) -> None:
        import ray

        for actor in self.actors:
            with contextlib.suppress(Exception):
                await actor.handle.shutdown.remote()
            with contextlib.suppress(Exception):
                ray.kill(actor.handle)
        self.actors.clear()
        if self._started_ray:
            await asyncio.to_thread(ray.shutdown)
            self._started_ray = False
