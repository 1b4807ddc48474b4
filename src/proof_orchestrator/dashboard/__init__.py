"""The web dashboard (FastAPI), reading the ledger."""

from .app import create_app

__all__ = ["create_app"]
