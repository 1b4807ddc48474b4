"""The dashboard's live view: the state running commands publish, as JSON, SSE and gauges."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from starlette.concurrency import run_in_threadpool

from ..ledger import LIVE_STALE_SECONDS, LedgerReader

__all__ = ["live_gauges", "live_payload", "sse_events"]

#: seconds between two looks at the ledger for the event stream
STREAM_INTERVAL = 1.0
#: a comment line is sent after this many quiet seconds, so proxies keep the stream open
KEEP_ALIVE_SECONDS = 15.0


def live_payload(reader: LedgerReader) -> dict[str, Any]:
    """What ``/api/live`` returns: every running command's state, dead ones flagged."""
    return {
        "now": datetime.now(UTC).isoformat(),
        "stale_after_seconds": LIVE_STALE_SECONDS,
        "runs": reader.live(),
    }


async def sse_events(
    reader: LedgerReader,
    is_disconnected: Callable[[], Awaitable[bool]],
    interval: float = STREAM_INTERVAL,
) -> AsyncIterator[str]:
    """Server-sent events: the live payload whenever it changed, until the client leaves."""
    last = ""
    quiet = 0.0
    while not await is_disconnected():
        payload = await run_in_threadpool(live_payload, reader)
        runs = json.dumps(payload["runs"], sort_keys=True)
        if runs != last:
            last = runs
            quiet = 0.0
            yield f"event: live\ndata: {json.dumps(payload)}\n\n"
        elif quiet >= KEEP_ALIVE_SECONDS:
            quiet = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(interval)
        quiet += interval


def live_gauges(reader: LedgerReader) -> Iterator[GaugeMetricFamily]:
    """Gauges of the commands running now (dead runs are left out), per run."""
    labels = ["run_id", "command"]
    slots = GaugeMetricFamily("orch_live_slots_busy", "Slots holding work now", labels=labels)
    queue = GaugeMetricFamily("orch_live_queue_length", "Goals waiting in the queue", labels=labels)
    share = GaugeMetricFamily(
        "orch_live_cpu_share",
        "Measured share of the machine used by the run's process tree (smoothed, 0-1)",
        labels=labels,
    )
    target = GaugeMetricFamily(
        "orch_live_cpu_target", "CPU share the run's governor aims at (0-1)", labels=labels
    )
    done = GaugeMetricFamily("orch_live_goals_done", "Goals finished in the run", labels=labels)
    total = GaugeMetricFamily("orch_live_goals_total", "Goals found by the run", labels=labels)
    for run in reader.live():
        if run["dead"]:
            continue
        key = [str(run["run_id"]), str(run["command"])]
        state = run["state"]
        slots.add_metric(key, len(state.get("slots", [])))
        queue.add_metric(key, float(state.get("queue", 0)))
        cpu = state.get("cpu", {})
        if cpu.get("measured") is not None:
            share.add_metric(key, float(cpu["measured"]))
        if cpu.get("target") is not None:
            target.add_metric(key, float(cpu["target"]))
        goals = state.get("goals", {})
        done.add_metric(key, float(goals.get("done", 0)))
        total.add_metric(key, float(goals.get("total", 0)))
    yield from (slots, queue, share, target, done, total)
