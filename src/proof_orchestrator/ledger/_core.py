"""What every part of the ledger shares: the engine, its sessions and transactions, retries.

SQLite by default, in WAL mode with a busy timeout so that a dashboard can
read while a run writes; any SQLAlchemy URL works (``ORCH_DB_URL``). Every
recorded attempt is committed at once, so a crash loses at most the attempts
that were still running.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from sqlalchemy import Connection, Engine, Table, create_engine, event, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import LedgerError, LedgerUnavailable
from ._schema import migrate
from .models import Base
from .retry import RetryPolicy, call_with_retries

__all__ = [
    "LedgerCore",
    "default_ledger_url",
    "insert_ignore",
    "iso",
    "retrying",
    "upsert",
]

P = ParamSpec("P")
R = TypeVar("R")
L = TypeVar("L", bound="LedgerCore")

#: the orchestrator's state folder; a ledger made in one makes it ignore itself in git
#: (the same rule as ``project.statedir.make_state_dir``, which the ledger does not import)
_STATE_DIR = ".orch"


def retrying(method: Callable[Concatenate[L, P], R]) -> Callable[Concatenate[L, P], R]:
    """Run a ledger operation (one transaction) again while its database is unreachable."""

    @functools.wraps(method)
    def wrapper(self: L, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._call(lambda: method(self, *args, **kwargs))

    return wrapper


def default_ledger_url(project_root: Path) -> str:
    """``ORCH_DB_URL`` if set, else ``<project>/.orch/ledger.sqlite``."""
    env = os.environ.get("ORCH_DB_URL")
    if env:
        return env
    return f"sqlite:///{project_root / _STATE_DIR / 'ledger.sqlite'}"


def _make_folder(folder: Path) -> None:
    """Create ``folder`` and, if it is in an ``.orch`` folder, that folder's ``.gitignore``.

    The ``.gitignore`` holds ``*``, so ``git status`` stays clean in a project
    where ``orch`` ran; an existing one is left as the user made it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for part in (folder, *folder.parents):
        if part.name == _STATE_DIR:
            ignore = part / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# made by orch: its state stays out of version control\n*\n")
            break


def table_of(model: type[Base]) -> Table:
    """The table a model is mapped to (for Core statements)."""
    return cast(Table, model.__table__)


def _dialect_insert(connection: Connection, model: type[Base]) -> Any:
    """``INSERT`` with the dialect's ``ON CONFLICT`` support (SQLite and PostgreSQL).

    On the model's table, not the mapped class: a Core statement skips the
    ORM's per-statement bookkeeping (about half the cost of a small insert).
    """
    table = table_of(model)
    if connection.dialect.name == "postgresql":
        return postgresql_insert(table)
    if connection.dialect.name == "sqlite":
        return sqlite_insert(table)
    raise LedgerError(f"the ledger supports SQLite and PostgreSQL, not {connection.dialect.name}")


def insert_ignore(connection: Connection, model: type[Base], keys: Sequence[str]) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING``: a row another writer made first stays."""
    return _dialect_insert(connection, model).on_conflict_do_nothing(index_elements=list(keys))


def upsert(
    connection: Connection, model: type[Base], keys: Sequence[str], changes: dict[str, Any]
) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO UPDATE SET changes``, atomic under concurrent writers."""
    statement = _dialect_insert(connection, model)
    return statement.on_conflict_do_update(index_elements=list(keys), set_=changes)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class LedgerCore:
    """The open database: engine, sessions, transactions and the retry policy.

    Each part of :class:`~proof_orchestrator.ledger.Ledger` (runs, goals,
    tickets, ...) is a subclass that adds its operations on top of these.
    """

    def __init__(
        self, url: str, *, busy_timeout: float = 10.0, retry: RetryPolicy | None = None
    ) -> None:
        self.url = url
        #: how long to wait for a database server that went away (not for SQLite files)
        self.retry = retry if retry is not None else RetryPolicy.from_env()
        #: set once the database stayed unreachable past the policy: later calls try once
        self.unavailable = False
        try:
            if url.startswith("sqlite:///"):
                path = Path(url.removeprefix("sqlite:///"))
                _make_folder(path.parent)
                engine = create_engine(url, connect_args={"timeout": busy_timeout})
                event.listen(engine, "connect", _sqlite_pragmas)
            else:
                engine = create_engine(url, pool_pre_ping=True)
            migrate(engine)
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except (OSError, SQLAlchemyError) as exc:
            raise LedgerError(
                f"cannot open the ledger at {url}: {exc}. Check that the file is readable and "
                "writable and not locked by another program, "
                "or choose another with --db / ORCH_DB_URL."
            ) from exc
        self.engine: Engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._where = engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()

    def _unreachable(self, error: BaseException) -> bool:
        """Did ``error`` come from a database server that cannot be reached right now?

        Only a server (PostgreSQL) goes away and comes back; a SQLite file that
        cannot be written is an error at once.
        """
        if self.engine.dialect.name == "sqlite":
            return False
        cause = error.__cause__ if isinstance(error, LedgerError) else error
        if isinstance(cause, DBAPIError) and cause.connection_invalidated:
            return True
        return isinstance(cause, OperationalError | InterfaceError)

    def _call(self, operation: Callable[[], R]) -> R:
        policy = RetryPolicy(seconds=0.0) if self.unavailable else self.retry
        try:
            result = call_with_retries(
                operation, policy=policy, unreachable=self._unreachable, where=self._where
            )
        except LedgerUnavailable:
            self.unavailable = True
            raise
        self.unavailable = False
        return result

    @contextmanager
    def _session(self) -> Iterator[Session]:
        session = self._sessions()
        try:
            yield session
            session.commit()
        except OperationalError as exc:
            session.rollback()
            raise LedgerError(f"the ledger at {self.url} could not be written: {exc.orig}") from exc
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as connection:
                yield connection
        except OperationalError as exc:
            raise LedgerError(f"the ledger at {self.url} could not be written: {exc.orig}") from exc
