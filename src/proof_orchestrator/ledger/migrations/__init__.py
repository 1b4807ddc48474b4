"""Alembic migrations of the ledger schema (applied by :class:`~..store.Ledger` on open)."""
