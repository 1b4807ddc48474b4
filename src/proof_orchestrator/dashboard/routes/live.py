"""What running commands do now: ``/api/live`` as JSON, ``/api/live/stream`` as SSE, and
``/api/live/charts``, the CPU-share and memory figures the overview redraws during a run."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..context import Ctx
from ..figures import live_figures
from ..live import live_payload, sse_events

__all__ = ["router"]

router = APIRouter()


@router.get("/api/live")
def api_live(ctx: Ctx) -> dict[str, Any]:
    """What running commands do now: slots, queue, CPU share and target, ETA."""
    return live_payload(ctx.reader)


@router.get("/api/live/stream")
async def api_live_stream(ctx: Ctx, request: Request) -> StreamingResponse:
    """The same state as server-sent events (``event: live``), sent when it changes."""
    return StreamingResponse(
        sse_events(ctx.reader, request.is_disconnected),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/api/live/charts")
def api_live_charts(ctx: Ctx) -> dict[str, Any]:
    """The CPU-share and memory figures (Plotly JSON, None without data): the running
    command's trace while one runs (``running`` is true), else the last finished run's."""
    return live_figures(ctx.reader)
