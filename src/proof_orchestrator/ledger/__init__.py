"""The ledger: every run, goal, attempt and verified proof, in one database."""

from .store import Ledger, LedgerReader, default_ledger_url

__all__ = ["Ledger", "LedgerReader", "default_ledger_url"]
