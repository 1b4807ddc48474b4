"""The HTML pages (overview, goals, one goal, runs, market, a project file), a project file
as plain text (``/api/files``), and Plotly's script."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse

from ..charts import PLOTLY_JS
from ..context import Ctx
from ..figures import overview_charts

__all__ = ["PUBLIC_PATHS", "router"]

#: served without the token: the charting library is public code, loaded by a
#: <script> tag that carries no token
PUBLIC_PATHS = frozenset({"/static/plotly.min.js"})

router = APIRouter()


@router.get("/static/plotly.min.js", include_in_schema=False)
def plotly_js() -> FileResponse:
    return FileResponse(
        PLOTLY_JS,
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )


@router.get("/api/files/{path:path}", response_class=PlainTextResponse)
def api_file(ctx: Ctx, path: str) -> str:
    return ctx.read_inside(path)


@router.get("/", response_class=HTMLResponse)
def overview(ctx: Ctx) -> HTMLResponse:
    stats = ctx.summary()
    return ctx.page(
        "overview.html",
        title="Overview",
        stats={**stats["holes"], "cpu_seconds": stats["cpu_seconds"], "llm": stats["llm"]},
        repairs=stats["repairs"],
        repair_rows=ctx.reader.repairs(),
        files=ctx.reader.files(),
        strategies=stats["strategies"],
        charts=overview_charts(ctx.reader, stats["strategies"]),
    )


@router.get("/goals", response_class=HTMLResponse)
def goals_page(
    ctx: Ctx,
    status: str | None = Query(None),
    file: str | None = Query(None),
    strategy: str | None = Query(None),
) -> HTMLResponse:
    goals = ctx.reader.goals(status=status or None, file=file or None, strategy=strategy or None)
    modulo = {row["goal_id"]: row for row in ctx.ledger.modulo_holes()}
    return ctx.page(
        "goals.html",
        title="Goals",
        goals=goals,
        status=status,
        file=file,
        strategy=strategy,
        modulo=modulo,
    )


@router.get("/goals/{goal_id}", response_class=HTMLResponse)
def goal_page(ctx: Ctx, goal_id: int) -> HTMLResponse:
    goal = ctx.reader.goal(goal_id)
    if goal is None:
        raise HTTPException(404, f"no goal {goal_id}")
    return ctx.page("goal.html", title=goal["name"], goal=goal)


@router.get("/runs", response_class=HTMLResponse)
def runs_page(ctx: Ctx) -> HTMLResponse:
    return ctx.page(
        "runs.html",
        title="Runs and benchmarks",
        runs=ctx.reader.runs(),
        benchmarks=ctx.benchmarks(),
    )


@router.get("/marketplace", response_class=HTMLResponse)
def market_page(ctx: Ctx) -> HTMLResponse:
    return ctx.page("market.html", title="Helper-lemma market", tickets=ctx.reader.tickets())


@router.get("/files/{path:path}", response_class=HTMLResponse)
def file_page(ctx: Ctx, path: str) -> HTMLResponse:
    return ctx.page("file.html", title=path, text=ctx.read_inside(path))
