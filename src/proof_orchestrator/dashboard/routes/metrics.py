"""``/metrics``: Prometheus metrics computed from the ledger at scrape time."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ...ledger import Ledger, LedgerReader
from ..context import Ctx
from ..live import live_gauges

__all__ = ["metrics_registry", "router"]

router = APIRouter()


class _LedgerCollector(Collector):
    """Prometheus metrics computed from the ledger at scrape time."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def collect(self) -> Any:
        stats = self.ledger.stats()
        goals = GaugeMetricFamily("orch_goals", "Goals by status", labels=["status"])
        for status, n in stats["goals"].items():
            goals.add_metric([status], n)
        yield goals
        attempts = CounterMetricFamily("orch_attempts", "Attempts by outcome", labels=["outcome"])
        for outcome, n in stats["attempts"].items():
            attempts.add_metric([outcome], n)
        yield attempts
        proofs = CounterMetricFamily("orch_proofs", "Verified proofs")
        proofs.add_metric([], stats["proofs"])
        yield proofs
        cpu = CounterMetricFamily(
            "orch_strategy_cpu_seconds", "CPU by strategy", labels=["strategy"]
        )
        for s in stats["strategies"]:
            cpu.add_metric([s["strategy"]], s["cpu_seconds"])
        yield cpu
        yield from live_gauges(LedgerReader(self.ledger))


def metrics_registry(ledger: Ledger) -> CollectorRegistry:
    """A registry of its own for one dashboard (several apps may serve in one process)."""
    registry = CollectorRegistry()
    registry.register(_LedgerCollector(ledger))
    return registry


@router.get("/metrics")
def metrics(ctx: Ctx) -> Response:
    return Response(generate_latest(ctx.registry), media_type=CONTENT_TYPE_LATEST)
