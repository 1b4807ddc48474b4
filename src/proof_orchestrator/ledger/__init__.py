"""The ledger: every run, goal, attempt and verified proof, in one database."""

from .reader import LedgerReader
from .store import LIVE_STALE_SECONDS, Ledger, default_ledger_url

__all__ = ["LIVE_STALE_SECONDS", "Ledger", "LedgerReader", "default_ledger_url"]
