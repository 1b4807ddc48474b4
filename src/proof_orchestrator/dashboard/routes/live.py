"""What running commands do now: ``/api/live`` as JSON, ``/api/live/stream`` as SSE."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..context import Ctx
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
