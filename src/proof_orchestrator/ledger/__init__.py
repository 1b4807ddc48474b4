"""The ledger: every run, goal, attempt and verified proof, in one database."""

from .store import Ledger, default_ledger_url

__all__ = ["Ledger", "default_ledger_url"]
