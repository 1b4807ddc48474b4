"""Bringing a ledger's schema to the newest revision (the Alembic scripts in ``migrations/``)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from ..errors import LedgerError

__all__ = ["migrate"]

_MIGRATIONS = Path(__file__).with_name("migrations")
#: revisions of ledgers made before migrations existed, told apart by their columns
_PRE_ALEMBIC = (("budget_seconds", "0002"), ("", "0001"))
#: any fixed number: the PostgreSQL advisory lock held while migrating
_MIGRATION_LOCK = 731_905_118


#: Alembic keeps its migration context in module globals: one migration at a time per process
_MIGRATING = threading.Lock()


@functools.cache
def _head() -> str:
    config = AlembicConfig()
    config.set_main_option("script_location", str(_MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    if head is None:
        raise LedgerError("the ledger's migrations have no head revision")
    return head


def _version(engine: Engine) -> str | None:
    with engine.connect() as connection:
        if "alembic_version" not in inspect(connection).get_table_names():
            return None
        value = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        return str(value) if value is not None else None


@contextmanager
def _file_lock(url: str) -> Iterator[None]:
    """For SQLite: an exclusive lock on ``<ledger>.migrate.lock`` (processes opening it at once)."""
    path = Path(url.removeprefix("sqlite:///") + ".migrate.lock")
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def migrate(engine: Engine) -> None:
    """Create or upgrade the schema to the newest revision (in place, in one transaction).

    A ledger made before the migrations existed is stamped with the revision
    its columns match, then upgraded. Writers that open a new ledger at once
    are serialised: a lock per process (Alembic's context is global), a lock
    file next to a SQLite ledger, an advisory lock on PostgreSQL.
    """
    if _version(engine) == _head():
        return
    url = engine.url.render_as_string(hide_password=False)
    sqlite = engine.dialect.name == "sqlite"
    with _MIGRATING, _file_lock(url) if sqlite else contextlib.nullcontext():
        config = AlembicConfig()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
            config.attributes["connection"] = connection
            inspector = inspect(connection)
            tables = set(inspector.get_table_names())
            if "alembic_version" not in tables and "attempts" in tables:
                columns = {c["name"] for c in inspector.get_columns("attempts")}
                stamp = next(rev for column, rev in _PRE_ALEMBIC if not column or column in columns)
                alembic_command.stamp(config, stamp)
            alembic_command.upgrade(config, "head")
