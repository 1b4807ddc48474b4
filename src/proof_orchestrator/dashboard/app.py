"""The web dashboard: FastAPI pages and JSON API over the ledger, read-only.

Safety: it binds to loopback unless told otherwise, and then only with a
token (``ORCH_DASHBOARD_TOKEN``), checked in constant time on every request
(``Authorization: Bearer``, or ``?token=`` for a browser). Templates escape
everything. The only files it reads are ledger rows and, for ``/files/...``,
files inside the project root; any other path is refused.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    StreamingResponse,
)
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..ledger import Ledger, LedgerReader
from .charts import PLOTLY_JS
from .figures import overview_charts
from .live import live_gauges, live_payload, sse_events
from .templates import environment

__all__ = ["MAX_PAGE", "create_app"]

#: the largest page of ``/api/goals`` (``limit``)
MAX_PAGE = 1000


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


def _benchmarks(results_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(results_dir.glob("*.json"), reverse=True)[:20]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            totals = data["totals"]
        except (OSError, ValueError, KeyError):
            continue
        rows.append(
            {
                "name": path.name,
                "solved": totals["solved"],
                "lemmas": totals["lemmas"],
                "rate": totals["rate"],
                "wall": totals.get("wall_seconds"),
                "cpu": totals.get("search_cpu_seconds"),
                "strategies": ", ".join(
                    f"{k} {v['solved']}" for k, v in data.get("per_strategy", {}).items()
                ),
            }
        )
    return rows


def create_app(
    ledger: Ledger, project_root: Path, *, token: str | None = None, results_dir: Path | None = None
) -> FastAPI:
    """The dashboard for ``ledger``; ``project_root`` bounds what ``/files`` may show."""
    root = project_root.resolve()
    reader = LedgerReader(ledger)
    templates = environment()
    results = results_dir or root / "bench" / "results"
    app = FastAPI(
        title="orch dashboard",
        version="0.1.0",
        description="Read-only view of the proof-search ledger.",
    )
    registry = CollectorRegistry()
    registry.register(_LedgerCollector(ledger))

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        # the charting library is public code, loaded by a <script> tag that carries no token
        if token is not None and request.url.path != "/static/plotly.min.js":
            given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            given = given or request.query_params.get("token", "")
            if not hmac.compare_digest(given.encode(), token.encode()):
                return JSONResponse({"detail": "a valid token is required"}, status_code=401)
        return await call_next(request)

    def page(name: str, **context: Any) -> HTMLResponse:
        return HTMLResponse(templates.get_template(name).render(**context))

    def summary() -> dict[str, Any]:
        stats = ledger.stats()
        total = sum(stats["goals"].values())
        proved = stats["goals"].get("proved", 0)
        return {
            "holes": {"total": total, "proved": proved, "open": total - proved},
            "attempts": stats["attempts"],
            "proofs": stats["proofs"],
            "cpu_seconds": stats["cpu_seconds"],
            "strategies": stats["strategies"],
            "llm": stats["llm"],
        }

    # -- JSON API ----------------------------------------------------------------

    @app.get("/api/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/api/stats")
    def api_stats() -> dict[str, Any]:
        return summary()

    @app.get("/api/goals")
    def api_goals(
        response: Response,
        status: str | None = None,
        file: str | None = None,
        strategy: str | None = None,
        limit: int | None = Query(None, ge=1, le=MAX_PAGE, description="goals per page"),
        offset: int = Query(0, ge=0, description="goals to skip (in file, line order)"),
    ) -> list[dict[str, Any]]:
        """Goals in (file, line) order; ``limit``/``offset`` page them, and the
        ``X-Total-Count`` header gives the number of goals matching the filters."""
        total = reader.count_goals(status=status, file=file, strategy=strategy)
        response.headers["X-Total-Count"] = str(total)
        return reader.goals(status=status, file=file, strategy=strategy, limit=limit, offset=offset)

    @app.get("/api/goals/{goal_id}")
    def api_goal(goal_id: int) -> dict[str, Any]:
        goal = reader.goal(goal_id)
        if goal is None:
            raise HTTPException(404, f"no goal {goal_id}")
        return goal

    @app.get("/api/runs")
    def api_runs() -> dict[str, Any]:
        return {"runs": reader.runs(), "benchmarks": _benchmarks(results)}

    @app.get("/api/marketplace")
    def api_market() -> dict[str, Any]:
        return {"tickets": reader.tickets()}

    @app.get("/api/live")
    def api_live() -> dict[str, Any]:
        """What running commands do now: slots, queue, CPU share and target, ETA."""
        return live_payload(reader)

    @app.get("/api/live/stream")
    async def api_live_stream(request: Request) -> StreamingResponse:
        """The same state as server-sent events (``event: live``), sent when it changes."""
        return StreamingResponse(
            sse_events(reader, request.is_disconnected),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        return FileResponse(
            PLOTLY_JS,
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/api/files/{path:path}", response_class=PlainTextResponse)
    def api_file(path: str) -> str:
        return _read_inside(root, path)

    # -- pages -------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    def overview() -> HTMLResponse:
        stats = summary()
        return page(
            "overview.html",
            title="Overview",
            stats={**stats["holes"], "cpu_seconds": stats["cpu_seconds"], "llm": stats["llm"]},
            files=reader.files(),
            strategies=stats["strategies"],
            charts=overview_charts(reader, stats["strategies"]),
        )

    @app.get("/goals", response_class=HTMLResponse)
    def goals_page(
        status: str | None = Query(None),
        file: str | None = Query(None),
        strategy: str | None = Query(None),
    ) -> HTMLResponse:
        goals = reader.goals(status=status or None, file=file or None, strategy=strategy or None)
        return page(
            "goals.html", title="Goals", goals=goals, status=status, file=file, strategy=strategy
        )

    @app.get("/goals/{goal_id}", response_class=HTMLResponse)
    def goal_page(goal_id: int) -> HTMLResponse:
        goal = reader.goal(goal_id)
        if goal is None:
            raise HTTPException(404, f"no goal {goal_id}")
        return page("goal.html", title=goal["name"], goal=goal)

    @app.get("/runs", response_class=HTMLResponse)
    def runs_page() -> HTMLResponse:
        return page(
            "runs.html",
            title="Runs and benchmarks",
            runs=reader.runs(),
            benchmarks=_benchmarks(results),
        )

    @app.get("/marketplace", response_class=HTMLResponse)
    def market_page() -> HTMLResponse:
        return page("market.html", title="Helper-lemma market", tickets=reader.tickets())

    @app.get("/files/{path:path}", response_class=HTMLResponse)
    def file_page(path: str) -> HTMLResponse:
        return page("file.html", title=path, text=_read_inside(root, path))

    return app


def _read_inside(root: Path, relative: str) -> str:
    """The text of ``root/relative``; 403 for anything that leaves ``root``."""
    if ".." in Path(relative).parts or relative.startswith("/"):
        raise HTTPException(403, "paths outside the project are not served")
    target = (root / relative).resolve()
    if not target.is_relative_to(root):
        raise HTTPException(403, "paths outside the project are not served")
    if not target.is_file():
        raise HTTPException(404, f"{relative} is not a file in the project")
    return target.read_text(encoding="utf-8", errors="replace")
