"""``orch mcp``: the orchestrator as an MCP server (official ``mcp`` SDK, its MCPServer API).

The tools are thin: each calls :class:`~.service.AgentService`, which does
the work exactly as ``orch fill`` would (script gate, CPU governor, whole-file
verification, axiom audit, atomic write or git branch) and records the call
in the ledger as an attempt of ``mcp:<client name>``. A tool call that cannot
be served (an unknown hole, a path outside the project) is answered with an
error result the agent can read, never a crash of the server.

On stdio (the default) an MCP client starts ``orch mcp PROJECT`` itself.
``--http`` serves streamable HTTP on 127.0.0.1; any other address needs
``ORCH_MCP_TOKEN``, sent by clients as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import OrchError
from .service import (
    AgentService,
    BrokenInfo,
    GoalInfo,
    HoleInfo,
    RunResult,
    SubmitResult,
    TicketInfo,
    TryResult,
)

__all__ = ["build_server", "client_name", "http_app"]

INSTRUCTIONS = (
    "Proof search on a Coq/Lean project. list_holes gives hole ids; goal shows a hole's goal, "
    "premises, similar proofs and earlier errors; try_tactics runs a script and writes nothing; "
    "submit_proof verifies the whole file and the axioms before writing. A proof counts only "
    "when the real prover checked it."
)


def client_name(ctx: Context[Any, Any]) -> str:
    """The connected client's name (``clientInfo.name``), or ``agent``."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = str(getattr(info, "name", "") or "agent")
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:48]


@contextmanager
def _answered() -> Iterator[None]:
    """An error of ours becomes an error result with its message (the agent reads it)."""
    try:
        yield
    except OrchError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def build_server(service: AgentService) -> MCPServer[Any]:
    """An MCP server whose tools act on ``service`` (started by the server's lifespan)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        async with service:
            yield

    server: MCPServer[Any] = MCPServer(
        "proof-orchestrator", instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )

    @server.tool()
    def list_holes(path: str | None = None, status: str | None = None) -> list[HoleInfo]:
        """The open holes (Admitted / admit / sorry) of the project or of one file or folder.

        ``status`` filters by the ledger's status: open, proved or failed.
        """
        with _answered():
            return service.list_holes(path, status)

    @server.tool()
    async def broken_proofs(path: str | None = None) -> list[BrokenInfo]:
        """The proofs that no longer check (an edit or an upgrade broke them), in the project
        or in one file or folder: each with the sentence where the prover stopped, its error
        and its kind, and the old proof. Their ids are hole ids: ``goal`` is not available
        for them, ``submit_proof`` is (verified with the other broken proofs admitted)."""
        with _answered():
            return await service.broken_proofs(path)

    @server.tool()
    async def goal(hole_id: int, ctx: Context[Any, Any]) -> GoalInfo:
        """A hole's goal as the prover shows it (hypotheses and conclusion), the best premises,
        the nearest proved statements with their proofs, and the errors of earlier attempts."""
        with _answered():
            return await service.goal(hole_id, client_name(ctx))

    @server.tool()
    async def try_tactics(
        hole_id: int, script: str, ctx: Context[Any, Any], cpu_s: float = 10.0
    ) -> TryResult:
        """Run a tactic script on a hole; writes nothing.

        Returns the goals left after the script, or the first error with the failing sentence.
        """
        with _answered():
            return await service.try_tactics(hole_id, script, cpu_s, client_name(ctx))

    @server.tool()
    async def submit_proof(hole_id: int, script: str, ctx: Context[Any, Any]) -> SubmitResult:
        """Submit a proof script for a hole: script gate, whole-file recompilation, axiom audit,
        then an atomic write of the file (or a git branch). Returns verified or rejected."""
        with _answered():
            return await service.submit_proof(hole_id, script, client_name(ctx))

    @server.tool()
    async def run_strategies(
        hole_id: int, ctx: Context[Any, Any], cpu_s: float = 10.0
    ) -> RunResult:
        """Run the orchestrator's strategy portfolio on one hole (CPU budget ``cpu_s`` each);
        a proof found is verified and written like one submitted."""
        with _answered():
            return await service.run_strategies(hole_id, cpu_s, client_name(ctx))

    @server.tool()
    def stats() -> dict[str, Any]:
        """The ledger's summary: goals, attempts, proofs, strategies, model spend, recent runs."""
        with _answered():
            return service.stats()

    @server.tool()
    def tickets() -> list[TicketInfo]:
        """Open and claimed helper-lemma tickets of the market."""
        with _answered():
            return service.tickets()

    @server.tool()
    def claim_ticket(ticket_id: int, ctx: Context[Any, Any]) -> TicketInfo:
        """Claim a helper-lemma ticket (a lease of 30 minutes) before completing it."""
        with _answered():
            return service.claim_ticket(ticket_id, client_name(ctx))

    @server.tool()
    async def complete_ticket(ticket_id: int, script: str, ctx: Context[Any, Any]) -> SubmitResult:
        """Complete a claimed ticket with a proof of its helper lemma (checked by the prover)."""
        with _answered():
            return await service.complete_ticket(ticket_id, script, client_name(ctx))

    return server


class _BearerToken:
    """Refuses HTTP requests without ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, b"Bearer " + self.token):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is needed"})
                return
        await self.app(scope, receive, send)


def http_app(
    server: MCPServer[Any], host: str, port: int, token: str | None
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The streamable-HTTP ASGI app (at ``/mcp``), behind a bearer token when one is given."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:{port}", host, f"127.0.0.1:{port}", f"localhost:{port}"],
        allowed_origins=[f"http://{host}:{port}", f"http://127.0.0.1:{port}"],
    )
    app: ASGIApp = server.streamable_http_app(transport_security=security, host=host)
    return _BearerToken(app, token) if token else app
