"""The JSON API: stats, goals (paged), broken proofs, runs and benchmarks, tickets."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response

from ..context import Ctx

__all__ = ["MAX_PAGE", "router"]

#: the largest page of ``/api/goals`` (``limit``)
MAX_PAGE = 1000

router = APIRouter()


@router.get("/api/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/api/stats")
def api_stats(ctx: Ctx) -> dict[str, Any]:
    return ctx.summary()


@router.get("/api/goals")
def api_goals(
    ctx: Ctx,
    response: Response,
    status: str | None = None,
    file: str | None = None,
    strategy: str | None = None,
    limit: int | None = Query(None, ge=1, le=MAX_PAGE, description="goals per page"),
    offset: int = Query(0, ge=0, description="goals to skip (in file, line order)"),
) -> list[dict[str, Any]]:
    """Goals in (file, line) order; ``limit``/``offset`` page them, and the
    ``X-Total-Count`` header gives the number of goals matching the filters."""
    total = ctx.reader.count_goals(status=status, file=file, strategy=strategy)
    response.headers["X-Total-Count"] = str(total)
    return ctx.reader.goals(status=status, file=file, strategy=strategy, limit=limit, offset=offset)


@router.get("/api/goals/{goal_id}")
def api_goal(ctx: Ctx, goal_id: int) -> dict[str, Any]:
    goal = ctx.reader.goal(goal_id)
    if goal is None:
        raise HTTPException(404, f"no goal {goal_id}")
    return goal


@router.get("/api/repairs")
def api_repairs(ctx: Ctx) -> dict[str, Any]:
    """Broken proofs (``orch repair``, ``orch bg``): still broken, and repaired, with
    their cause, their old proof and the new one."""
    return {**ctx.summary()["repairs"], "proofs": ctx.reader.repairs()}


@router.get("/api/runs")
def api_runs(ctx: Ctx) -> dict[str, Any]:
    return {"runs": ctx.reader.runs(), "benchmarks": ctx.benchmarks()}


@router.get("/api/marketplace")
def api_market(ctx: Ctx) -> dict[str, Any]:
    return {"tickets": ctx.reader.tickets()}
