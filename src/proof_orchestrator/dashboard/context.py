"""What every dashboard route reads: the ledger, the project root, the templates.

:func:`~.app.create_app` makes one :class:`DashboardContext` per app and keeps
it in ``app.state``; a route asks for it with the :data:`Ctx` dependency.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment
from prometheus_client import CollectorRegistry

from ..ledger import Ledger, LedgerReader

__all__ = ["Ctx", "DashboardContext", "dashboard_context"]


@dataclass(frozen=True, slots=True)
class DashboardContext:
    """One dashboard's ledger, its reader, the folders it may show, its templates."""

    ledger: Ledger
    reader: LedgerReader
    #: ``/files`` shows only files under this folder (resolved)
    root: Path
    #: the folder of benchmark result JSON listed on ``/runs``
    results: Path
    templates: Environment
    #: the Prometheus metrics of ``/metrics``
    registry: CollectorRegistry

    def page(self, name: str, **context: Any) -> HTMLResponse:
        template = self.templates.get_template(name)
        return HTMLResponse(template.render(relative=self.relative, root=str(self.root), **context))

    def relative(self, path: str) -> str:
        """``path`` relative to the project root when it lies inside it, else as it is."""
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return path

    def summary(self) -> dict[str, Any]:
        stats = self.ledger.stats()
        # broken proofs (``orch repair``) are not holes: counted apart
        broken = int(stats["goals"].get("broken", 0))
        repaired = int(stats["goals"].get("repaired", 0))
        total = sum(stats["goals"].values()) - broken - repaired
        proved = stats["goals"].get("proved", 0)
        modulo = stats["proved_modulo_holes"]
        return {
            "repairs": {"broken": broken, "repaired": repaired},
            "holes": {
                "total": total,
                "proved": proved,
                "open": total - proved,
                # proved: closed, or closed modulo holes still open
                "closed": proved - modulo,
                "modulo": modulo,
            },
            "modulo_holes": stats["modulo_holes"],
            "attempts": stats["attempts"],
            "proofs": stats["proofs"],
            "cpu_seconds": stats["cpu_seconds"],
            "strategies": stats["strategies"],
            "llm": stats["llm"],
        }

    def benchmarks(self) -> list[dict[str, Any]]:
        """The newest 20 benchmark results of ``results``, newest first."""
        rows = []
        for path in sorted(self.results.glob("*.json"), reverse=True)[:20]:
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

    def read_inside(self, relative: str) -> str:
        """The text of ``root/relative``; 403 for anything that leaves ``root``."""
        if ".." in Path(relative).parts or relative.startswith("/"):
            raise HTTPException(403, "paths outside the project are not served")
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root):
            raise HTTPException(403, "paths outside the project are not served")
        if not target.is_file():
            raise HTTPException(404, f"{relative} is not a file in the project")
        return target.read_text(encoding="utf-8", errors="replace")


def dashboard_context(request: Request) -> DashboardContext:
    """The context of the app serving ``request`` (a FastAPI dependency)."""
    context: DashboardContext = request.app.state.dashboard
    return context


#: a route parameter of this type receives the app's :class:`DashboardContext`
Ctx = Annotated[DashboardContext, Depends(dashboard_context)]
