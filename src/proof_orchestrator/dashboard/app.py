"""The web dashboard: FastAPI pages and JSON API over the ledger, read-only.

Safety: it binds to loopback unless told otherwise, and then only with a
token (``ORCH_DASHBOARD_TOKEN``), checked in constant time on every request
(``Authorization: Bearer``, or ``?token=`` for a browser). Templates escape
everything. The only files it reads are ledger rows and, for ``/files/...``,
files inside the project root; any other path is refused.

The routes live in :mod:`.routes`, one router per concern (JSON API, live
state, metrics, pages); :func:`create_app` only assembles them.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from ..ledger import Ledger, LedgerReader
from .context import DashboardContext
from .routes import api, live, metrics, pages
from .routes.api import MAX_PAGE
from .templates import environment

__all__ = ["MAX_PAGE", "create_app"]


def create_app(
    ledger: Ledger, project_root: Path, *, token: str | None = None, results_dir: Path | None = None
) -> FastAPI:
    """The dashboard for ``ledger``; ``project_root`` bounds what ``/files`` may show."""
    root = project_root.resolve()
    app = FastAPI(
        title="orch dashboard",
        version="0.1.0",
        description="Read-only view of the proof-search ledger.",
    )
    app.state.dashboard = DashboardContext(
        ledger=ledger,
        reader=LedgerReader(ledger),
        root=root,
        results=results_dir or root / ".orch" / "results",
        templates=environment(),
        registry=metrics.metrics_registry(ledger),
    )

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if token is not None and request.url.path not in pages.PUBLIC_PATHS:
            given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            given = given or request.query_params.get("token", "")
            if not hmac.compare_digest(given.encode(), token.encode()):
                return JSONResponse({"detail": "a valid token is required"}, status_code=401)
        return await call_next(request)

    for router in (api.router, live.router, metrics.router, pages.router):
        app.include_router(router)
    return app
