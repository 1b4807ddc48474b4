"""The only place that writes SQL.

SQLite by default, in WAL mode with a busy timeout so that a dashboard can
read while a run writes; any SQLAlchemy URL works (``ORCH_DB_URL``). Every
recorded attempt is committed at once, so a crash loses at most the attempts
that were still running.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import LedgerError, LedgerUnavailable
from ..goals import Goal, Outcome
from ..project.statedir import make_state_dir
from ..scheduler.bandit import ArmStats
from .models import (
    Attempt,
    BanditArm,
    Base,
    GoalRow,
    LiveRun,
    LlmResponse,
    Proof,
    Run,
    TacticCache,
    Ticket,
    utcnow,
)
from .retry import RetryPolicy, call_with_retries

__all__ = ["LIVE_STALE_SECONDS", "Ledger", "LedgerReader", "default_ledger_url"]

#: a live run whose heartbeat is older than this is shown as dead (it publishes about every second)
LIVE_STALE_SECONDS = 5.0

P = ParamSpec("P")
R = TypeVar("R")


def _retrying(method: Callable[Concatenate[Ledger, P], R]) -> Callable[Concatenate[Ledger, P], R]:
    """Run a ledger operation (one transaction) again while its database is unreachable."""

    @functools.wraps(method)
    def wrapper(self: Ledger, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._call(lambda: method(self, *args, **kwargs))

    return wrapper


def default_ledger_url(project_root: Path) -> str:
    """``ORCH_DB_URL`` if set, else ``<project>/.orch/ledger.sqlite``."""
    env = os.environ.get("ORCH_DB_URL")
    if env:
        return env
    return f"sqlite:///{project_root / '.orch' / 'ledger.sqlite'}"


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


def _dialect_insert(connection: Connection, model: type[Base]) -> Any:
    """``INSERT`` with the dialect's ``ON CONFLICT`` support (SQLite and PostgreSQL)."""
    if connection.dialect.name == "postgresql":
        return postgresql_insert(model)
    if connection.dialect.name == "sqlite":
        return sqlite_insert(model)
    raise LedgerError(f"the ledger supports SQLite and PostgreSQL, not {connection.dialect.name}")


def _insert_ignore(connection: Connection, model: type[Base], keys: Sequence[str]) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING``: a row another writer made first stays."""
    return _dialect_insert(connection, model).on_conflict_do_nothing(index_elements=list(keys))


def _upsert(
    connection: Connection, model: type[Base], keys: Sequence[str], changes: dict[str, Any]
) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO UPDATE SET changes``, atomic under concurrent writers."""
    statement = _dialect_insert(connection, model)
    return statement.on_conflict_do_update(index_elements=list(keys), set_=changes)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Ledger:
    """Runs, goals, attempts, verified proofs and the tactic cache."""

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
                make_state_dir(path.parent)
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

    # -- runs ----------------------------------------------------------------

    @_retrying
    def start_run(self, command: str, arguments: dict[str, object], prover_version: str) -> int:
        with self._session() as s:
            run = Run(command=command, arguments=arguments, prover_version=prover_version)
            s.add(run)
            s.flush()
            return run.id

    @_retrying
    def finish_run(self, run_id: int, status: str, summary: dict[str, object]) -> None:
        with self._session() as s:
            run = s.get(Run, run_id)
            if run is None:
                raise LedgerError(f"run {run_id} does not exist")
            run.status = status
            run.summary = summary
            run.finished_at = utcnow()

    # -- goals ---------------------------------------------------------------

    @_retrying
    def upsert_goal(self, goal: Goal) -> int:
        where = (
            GoalRow.file == str(goal.file),
            GoalRow.name == goal.name,
            GoalRow.fingerprint == goal.fingerprint,
        )
        now = utcnow()
        with self._transaction() as connection:
            # insert unless present, then read the id: safe when several writers race
            connection.execute(
                _insert_ignore(connection, GoalRow, ("file", "name", "fingerprint")).values(
                    fingerprint=goal.fingerprint,
                    file=str(goal.file),
                    name=goal.name,
                    line=goal.line,
                    statement=goal.statement,
                    language=goal.language,
                    status="open",
                    first_seen=now,
                    updated_at=now,
                )
            )
            found = connection.execute(select(GoalRow.id).where(*where)).scalar()
            if found is None:
                raise LedgerError(f"the ledger at {self.url} returned no id for a goal")
            connection.execute(
                update(GoalRow).where(GoalRow.id == found).values(line=goal.line, updated_at=now)
            )
            return int(found)

    @_retrying
    def set_goal_status(self, goal_id: int, status: str) -> None:
        with self._session() as s:
            row = s.get(GoalRow, goal_id)
            if row is not None:
                row.status = status
                row.updated_at = utcnow()

    # -- attempts --------------------------------------------------------------

    @_retrying
    def record_attempt(
        self,
        *,
        run_id: int,
        goal_id: int,
        fingerprint: str,
        strategy: str,
        outcome: Outcome,
        tactic: str = "",
        tactics_tried: int = 0,
        budget_seconds: float = 0.0,
        cpu_seconds: float = 0.0,
        wall_seconds: float = 0.0,
        prover_version: str = "",
        message: str = "",
        arm: tuple[str, ArmStats] | None = None,
        goal_budget_seconds: float = 0.0,
        attempt_key: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
        llm_seconds: float = 0.0,
    ) -> bool:
        """Record one attempt (and, with ``arm=(goal_class, stats)``, the bandit arm) at once.

        With an ``attempt_key``, writing the same attempt again is a no-op: the
        method returns False and leaves the bandit arm alone.
        """
        values = {
            "run_id": run_id,
            "goal_id": goal_id,
            "fingerprint": fingerprint,
            "strategy": strategy,
            "outcome": outcome.value,
            "tactic": tactic,
            "tactics_tried": tactics_tried,
            "budget_seconds": budget_seconds,
            "goal_budget_seconds": goal_budget_seconds,
            "cpu_seconds": cpu_seconds,
            "wall_seconds": wall_seconds,
            "prover_version": prover_version,
            "message": message[:4000],
            "created_at": utcnow(),
            "attempt_key": attempt_key,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost_usd,
            "llm_seconds": llm_seconds,
        }
        with self._transaction() as connection:
            statement = (
                _insert_ignore(connection, Attempt, ("attempt_key",))
                if attempt_key is not None
                else insert(Attempt)
            ).returning(Attempt.id)
            # a skipped insert returns no row (rowcount is not reliable with RETURNING)
            written = connection.execute(statement, values).first() is not None
            if written and arm is not None:
                self._write_arm(connection, arm[0], strategy, arm[1])
            return written

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as connection:
                yield connection
        except OperationalError as exc:
            raise LedgerError(f"the ledger at {self.url} could not be written: {exc.orig}") from exc

    @staticmethod
    def _write_arm(connection: Connection, goal_class: str, strategy: str, arm: ArmStats) -> None:
        values = {
            "pulls": arm.pulls,
            "successes": arm.successes,
            "failures": arm.failures,
            "cpu_seconds": arm.cpu_seconds,
            "reward": arm.reward,
        }
        connection.execute(
            _upsert(connection, BanditArm, ("goal_class", "strategy"), values).values(
                goal_class=goal_class, strategy=strategy, **values
            )
        )

    @_retrying
    def history(self, fingerprint: str) -> tuple[int, datetime | None, float]:
        """(failed attempts, first attempt time, largest goal budget a failed attempt had).

        The goal budget is the CPU seconds of the whole pass over the goal the
        attempt belonged to (attempts from before per-goal budgets count with 0).
        """
        failed = (Outcome.FAILED.value, Outcome.TIMEOUT.value)
        with self._transaction() as connection:
            rows = connection.execute(
                select(Attempt.outcome, Attempt.goal_budget_seconds, Attempt.created_at).where(
                    Attempt.fingerprint == fingerprint
                )
            ).all()
        failures = 0
        first: datetime | None = None
        largest = 0.0
        for outcome, budget, created in rows:
            if first is None or created < first:
                first = created
            if outcome in failed:
                failures += 1
                largest = max(largest, float(budget or 0.0))
        return failures, first, largest

    @_retrying
    def candidate_script(self, fingerprint: str) -> str | None:
        """The newest script a strategy found for this fingerprint (not yet verified).

        It comes back as recorded, one string; the prover's tools split it
        (the ledger knows no prover's syntax).
        """
        with self._session() as s:
            attempt = s.scalar(
                select(Attempt)
                .where(
                    Attempt.fingerprint == fingerprint,
                    Attempt.outcome == Outcome.CANDIDATE.value,
                    Attempt.tactic != "",
                )
                .order_by(Attempt.id.desc())
                .limit(1)
            )
            if attempt is None:
                return None
            rejected = s.scalar(
                select(func.count())
                .select_from(Attempt)
                .where(
                    Attempt.fingerprint == fingerprint,
                    Attempt.outcome == Outcome.REJECTED.value,
                    Attempt.tactic == attempt.tactic,
                )
            )
            return None if rejected else attempt.tactic

    @_retrying
    def popular_scripts(self, limit: int = 30) -> list[str]:
        """Scripts that proved the most goals, best first (for cached replay)."""
        with self._session() as s:
            rows = s.execute(
                select(TacticCache.tactic, func.sum(TacticCache.successes).label("n"))
                .group_by(TacticCache.tactic)
                .order_by(func.sum(TacticCache.successes).desc(), TacticCache.tactic)
                .limit(limit)
            ).all()
            return [tactic for tactic, _ in rows]

    @_retrying
    def proved_statements(
        self, language: str = "coq", limit: int = 2000
    ) -> list[tuple[str, tuple[str, ...]]]:
        """(statement, script) of the newest verified proofs, for the nearest-goal replay."""
        with self._session() as s:
            rows = s.execute(
                select(GoalRow.statement, Proof.sentences)
                .join(Proof, Proof.goal_id == GoalRow.id)
                .where(GoalRow.language == language)
                .order_by(Proof.verified_at.desc())
                .limit(limit)
            ).all()
            # the same proof may be recorded more than once (one row per run)
            found = ((statement, tuple(sentences)) for statement, sentences in rows)
            return list(dict.fromkeys(found))

    @_retrying
    def load_bandit(self) -> dict[tuple[str, str], ArmStats]:
        with self._session() as s:
            return {
                (row.goal_class, row.strategy): ArmStats(
                    row.pulls, row.successes, row.failures, row.cpu_seconds, row.reward
                )
                for row in s.scalars(select(BanditArm))
            }

    @_retrying
    def save_arm(self, goal_class: str, strategy: str, arm: ArmStats) -> None:
        with self._transaction() as connection:
            self._write_arm(connection, goal_class, strategy, arm)

    @_retrying
    def record_proof(
        self,
        *,
        run_id: int,
        goal_id: int,
        fingerprint: str,
        sentences: Sequence[str],
        strategy: str,
        prover_version: str,
        diff: str,
        written: bool,
    ) -> None:
        """Record a verified proof, count it in the tactic cache, mark its goal proved."""
        key = " ".join(sentences)
        now = utcnow()
        with self._transaction() as connection:
            connection.execute(
                insert(Proof).values(
                    run_id=run_id,
                    goal_id=goal_id,
                    fingerprint=fingerprint,
                    sentences=list(sentences),
                    strategy=strategy,
                    prover_version=prover_version,
                    diff=diff,
                    written=written,
                    verified_at=now,
                )
            )
            connection.execute(
                _upsert(
                    connection,
                    TacticCache,
                    ("fingerprint", "tactic"),
                    {"successes": TacticCache.successes + 1, "last_used": now},
                ).values(fingerprint=fingerprint, tactic=key, successes=1, last_used=now)
            )
            connection.execute(
                update(GoalRow).where(GoalRow.id == goal_id).values(status="proved", updated_at=now)
            )

    @_retrying
    def mark_written(self, run_id: int, goal_ids: Sequence[int]) -> None:
        """The file holding these goals' proofs of ``run_id`` was written."""
        if not goal_ids:
            return
        with self._transaction() as connection:
            connection.execute(
                update(Proof)
                .where(Proof.run_id == run_id, Proof.goal_id.in_(list(goal_ids)))
                .values(written=True)
            )

    @_retrying
    def verified_proof(self, fingerprint: str) -> tuple[str, ...] | None:
        """The newest verified proof of a fingerprint, if any."""
        with self._session() as s:
            proof = s.scalar(
                select(Proof)
                .where(Proof.fingerprint == fingerprint)
                .order_by(Proof.verified_at.desc())
                .limit(1)
            )
            return tuple(proof.sentences) if proof is not None else None

    @_retrying
    def cached_tactics(self, fingerprint: str) -> list[str]:
        with self._session() as s:
            rows = s.scalars(
                select(TacticCache)
                .where(TacticCache.fingerprint == fingerprint)
                .order_by(TacticCache.successes.desc())
            )
            return [row.tactic for row in rows]

    # -- agents: goals by id, earlier errors, the model-response cache -------------

    @_retrying
    def goal_row(self, goal_id: int) -> GoalRow | None:
        with self._session() as s:
            return s.get(GoalRow, goal_id)

    @_retrying
    def attempt_counts(self) -> dict[int, int]:
        """How many attempts each goal (by id) has had."""
        with self._session() as s:
            rows = s.execute(select(Attempt.goal_id, func.count()).group_by(Attempt.goal_id)).all()
            return {int(goal_id): int(n) for goal_id, n in rows}

    @_retrying
    def attempt_errors(self, fingerprint: str, limit: int = 5) -> list[tuple[str, str, str]]:
        """(strategy, script, message) of the newest failed attempts with a message."""
        failed = (Outcome.FAILED.value, Outcome.REJECTED.value, Outcome.ERROR.value)
        with self._session() as s:
            rows = s.execute(
                select(Attempt.strategy, Attempt.tactic, Attempt.message)
                .where(
                    Attempt.fingerprint == fingerprint,
                    Attempt.outcome.in_(failed),
                    Attempt.message != "",
                )
                .order_by(Attempt.id.desc())
                .limit(limit)
            ).all()
            return [(str(a), str(b), str(c)) for a, b, c in rows]

    @_retrying
    def llm_response(self, key: str) -> LlmResponse | None:
        """The cached replies for a cache key, if any."""
        with self._session() as s:
            return s.scalar(select(LlmResponse).where(LlmResponse.key == key))

    @_retrying
    def store_llm_response(
        self,
        *,
        key: str,
        provider: str,
        model: str,
        prompt_hash: str,
        settings: dict[str, object],
        texts: Sequence[str],
        tokens_in: int,
        tokens_out: int,
        cost_usd: float,
        latency_seconds: float,
    ) -> None:
        """Cache a model's replies (a key already cached keeps its first replies)."""
        with self._transaction() as connection:
            connection.execute(
                _insert_ignore(connection, LlmResponse, ("key",)).values(
                    key=key,
                    provider=provider,
                    model=model,
                    prompt_hash=prompt_hash,
                    settings=settings,
                    texts=list(texts),
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    cost_usd=cost_usd,
                    latency_seconds=latency_seconds,
                    created_at=utcnow(),
                )
            )

    @_retrying
    def llm_spend(self, run_id: int | None = None) -> dict[str, float]:
        """Tokens, cost and model time recorded on attempts (of one run, or all)."""
        with self._session() as s:
            query = select(
                func.count(),
                func.sum(Attempt.tokens_in),
                func.sum(Attempt.tokens_out),
                func.sum(Attempt.cost_usd),
                func.sum(Attempt.llm_seconds),
            ).where((Attempt.tokens_in > 0) | (Attempt.tokens_out > 0) | (Attempt.cost_usd > 0))
            if run_id is not None:
                query = query.where(Attempt.run_id == run_id)
            n, tokens_in, tokens_out, cost, seconds = s.execute(query).one()
            return {
                "attempts": int(n or 0),
                "tokens_in": int(tokens_in or 0),
                "tokens_out": int(tokens_out or 0),
                "cost_usd": float(cost or 0.0),
                "llm_seconds": float(seconds or 0.0),
            }

    # -- the helper-lemma market -----------------------------------------------

    @_retrying
    def publish_ticket(
        self,
        *,
        fingerprint: str,
        statement: str,
        name: str,
        parent_goal_id: int | None,
        priority: float = 0.0,
    ) -> tuple[int, bool]:
        """Open a ticket unless one for the same fingerprint is alive; (id, is_new)."""
        alive = ("open", "claimed", "completed")
        with self._transaction() as connection:
            found = connection.execute(
                select(Ticket.id)
                .where(Ticket.fingerprint == fingerprint, Ticket.state.in_(alive))
                .order_by(Ticket.id)
                .limit(1)
            ).scalar()
            if found is not None:
                return int(found), False
            now = utcnow()
            result = connection.execute(
                insert(Ticket)
                .values(
                    fingerprint=fingerprint,
                    statement=statement,
                    name=name,
                    parent_goal_id=parent_goal_id,
                    priority=priority,
                    state="open",
                    created_at=now,
                    updated_at=now,
                )
                .returning(Ticket.id)
            )
            return int(result.scalar_one()), True

    @_retrying
    def claim_ticket(
        self, worker: str, lease_seconds: float, ticket_id: int | None = None
    ) -> Ticket | None:
        """Claim the best open ticket (or ``ticket_id``) for ``worker``; None if none is free.

        The claim is one conditional ``UPDATE``: of several workers racing for a
        ticket, exactly one changes the row and wins. A claimed ticket whose
        lease ran out counts as open.
        """
        now = utcnow()
        free = (Ticket.state == "open") | ((Ticket.state == "claimed") & (Ticket.lease_until < now))
        with self._transaction() as connection:
            query = select(Ticket.id).where(free).order_by(Ticket.priority.desc(), Ticket.id)
            if ticket_id is not None:
                query = query.where(Ticket.id == ticket_id)
            for (candidate,) in connection.execute(query.limit(20)).all():
                won = connection.execute(
                    update(Ticket)
                    .where(Ticket.id == candidate, free)
                    .values(
                        state="claimed",
                        claimed_by=worker,
                        lease_until=now + timedelta(seconds=lease_seconds),
                        updated_at=now,
                    )
                ).rowcount
                if won == 1:
                    row = connection.execute(select(Ticket).where(Ticket.id == candidate)).one()
                    return Ticket(**row._asdict())
        return None

    @_retrying
    def complete_ticket(self, ticket_id: int, worker: str, proof: Sequence[str]) -> bool:
        """Record the helper's proof; only the worker holding the claim may."""
        with self._transaction() as connection:
            return (
                connection.execute(
                    update(Ticket)
                    .where(
                        Ticket.id == ticket_id,
                        Ticket.state == "claimed",
                        Ticket.claimed_by == worker,
                    )
                    .values(state="completed", proof=list(proof), updated_at=utcnow())
                ).rowcount
                == 1
            )

    @_retrying
    def release_ticket(self, ticket_id: int, worker: str) -> None:
        """Give a claimed ticket back (the worker could not prove it)."""
        with self._transaction() as connection:
            connection.execute(
                update(Ticket)
                .where(Ticket.id == ticket_id, Ticket.claimed_by == worker)
                .values(state="open", claimed_by=None, lease_until=None, updated_at=utcnow())
            )

    @_retrying
    def expire_leases(self) -> int:
        """Return every claimed ticket whose lease ran out to ``open``; how many."""
        now = utcnow()
        with self._transaction() as connection:
            return int(
                connection.execute(
                    update(Ticket)
                    .where(Ticket.state == "claimed", Ticket.lease_until < now)
                    .values(state="open", claimed_by=None, lease_until=None, updated_at=now)
                ).rowcount
            )

    @_retrying
    def cancel_ticket(self, ticket_id: int) -> bool:
        with self._transaction() as connection:
            return (
                connection.execute(
                    update(Ticket)
                    .where(Ticket.id == ticket_id, Ticket.state.in_(("open", "claimed")))
                    .values(state="cancelled", updated_at=utcnow())
                ).rowcount
                == 1
            )

    @_retrying
    def tickets(self, state: str | None = None) -> list[Ticket]:
        with self._session() as s:
            query = select(Ticket).order_by(Ticket.id)
            if state is not None:
                query = query.where(Ticket.state == state)
            return list(s.scalars(query))

    @_retrying
    def ticket(self, ticket_id: int) -> Ticket | None:
        with self._session() as s:
            return s.get(Ticket, ticket_id)

    # -- live state of running commands -----------------------------------------

    def publish_live(self, run_id: int, state: dict[str, Any]) -> None:
        """Replace the live state of ``run_id`` and beat its heartbeat: one UPSERT."""
        now = utcnow()
        with self._transaction() as connection:
            connection.execute(
                _upsert(
                    connection, LiveRun, ("run_id",), {"heartbeat_at": now, "state": state}
                ).values(run_id=run_id, heartbeat_at=now, state=state)
            )

    @_retrying
    def clear_live(self, run_id: int) -> None:
        """Forget the live state of ``run_id`` (its run ended)."""
        with self._transaction() as connection:
            connection.execute(delete(LiveRun).where(LiveRun.run_id == run_id))

    @_retrying
    def live_runs(self, stale_after: float = LIVE_STALE_SECONDS) -> list[dict[str, Any]]:
        """Every published live state, oldest run first, with ``dead`` for stale heartbeats.

        A run that died without clearing its row (killed, machine lost) keeps it
        until it is cleared; its heartbeat tells it apart from a running one.
        """
        now = utcnow()
        with self._transaction() as connection:
            rows = connection.execute(
                select(LiveRun.run_id, LiveRun.heartbeat_at, LiveRun.state, Run.command)
                .join(Run, Run.id == LiveRun.run_id)
                .order_by(LiveRun.run_id)
            ).all()
        runs = []
        for run_id, heartbeat, state, command in rows:
            # SQLite gives back naive datetimes; every time in the ledger is UTC
            beat = heartbeat if heartbeat.tzinfo else heartbeat.replace(tzinfo=UTC)
            age = max((now - beat).total_seconds(), 0.0)
            runs.append(
                {
                    "run_id": run_id,
                    "command": command,
                    "heartbeat_at": beat.isoformat(),
                    "heartbeat_age_seconds": round(age, 2),
                    "dead": age > stale_after,
                    "state": state or {},
                }
            )
        return runs

    # -- summaries ---------------------------------------------------------------

    @_retrying
    def stats(self) -> dict[str, Any]:
        with self._session() as s:
            goals_by_status = dict(
                s.execute(select(GoalRow.status, func.count()).group_by(GoalRow.status)).all()
            )
            attempts_by_outcome = dict(
                s.execute(select(Attempt.outcome, func.count()).group_by(Attempt.outcome)).all()
            )
            # a strategy's proofs are the verified ones (attempts only reach "candidate")
            proofs_by_strategy = dict(
                s.execute(select(Proof.strategy, func.count()).group_by(Proof.strategy)).all()
            )
            per_strategy = [
                {
                    "strategy": strategy,
                    "attempts": n,
                    "proved": int(proofs_by_strategy.get(strategy, 0)),
                    "cpu_seconds": float(cpu or 0),
                }
                for strategy, n, cpu in s.execute(
                    select(Attempt.strategy, func.count(), func.sum(Attempt.cpu_seconds)).group_by(
                        Attempt.strategy
                    )
                ).all()
            ]
            runs = [
                {
                    "id": r.id,
                    "command": r.command,
                    "status": r.status,
                    "started_at": _iso(r.started_at),
                    "finished_at": _iso(r.finished_at),
                }
                for r in s.scalars(select(Run).order_by(Run.id.desc()).limit(10))
            ]
            return {
                "url": self.url,
                "goals": goals_by_status,
                "attempts": attempts_by_outcome,
                "proofs": s.scalar(select(func.count()).select_from(Proof)) or 0,
                "cpu_seconds": float(s.scalar(select(func.sum(Attempt.cpu_seconds))) or 0.0),
                "strategies": per_strategy,
                "recent_runs": runs,
                "llm": self.llm_spend(),
            }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


class LedgerReader:
    """Read-only queries for the dashboard. Opens no transaction that writes."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def tickets(self) -> list[dict[str, Any]]:
        """Every helper-lemma ticket, newest first."""
        return [
            {
                "id": t.id,
                "state": t.state,
                "name": t.name,
                "statement": t.statement,
                "parent_goal_id": t.parent_goal_id,
                "priority": t.priority,
                "claimed_by": t.claimed_by,
                "lease_until": t.lease_until.isoformat() if t.lease_until else None,
                "proof": " ".join(t.proof) if t.proof else None,
                "created_at": t.created_at.isoformat(),
            }
            for t in reversed(self.ledger.tickets())
        ]

    @staticmethod
    def _winner() -> Any:
        """The strategy of a goal's proof (a subquery correlated to the goal's row)."""
        return (
            select(func.max(Proof.strategy))
            .where(Proof.goal_id == GoalRow.id)
            .correlate(GoalRow)
            .scalar_subquery()
        )

    @classmethod
    def _goal_filters(cls, status: str | None, file: str | None, strategy: str | None) -> list[Any]:
        filters: list[Any] = []
        if status:
            filters.append(GoalRow.status == status)
        if file:
            filters.append(GoalRow.file.contains(file))
        if strategy:
            filters.append(cls._winner() == strategy)
        return filters

    def goals(
        self,
        *,
        status: str | None = None,
        file: str | None = None,
        strategy: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Goals in (file, line) order with their attempt count and proving strategy.

        ``limit`` and ``offset`` page the list. The attempt count and the
        strategy are looked up for the returned goals only (correlated
        subqueries on the indexed ``goal_id`` columns), so a page does not
        aggregate the whole attempts table.
        """
        attempts = (
            select(func.count())
            .select_from(Attempt)
            .where(Attempt.goal_id == GoalRow.id)
            .correlate(GoalRow)
            .scalar_subquery()
        )
        query = (
            select(
                GoalRow.id,
                GoalRow.file,
                GoalRow.name,
                GoalRow.line,
                GoalRow.statement,
                GoalRow.status,
                GoalRow.fingerprint,
                attempts.label("n"),
                self._winner().label("strategy"),
            )
            .where(*self._goal_filters(status, file, strategy))
            .order_by(GoalRow.file, GoalRow.line, GoalRow.id)
            .offset(offset)
        )
        if limit is not None:
            query = query.limit(limit)
        with self.ledger.engine.connect() as connection:
            return [
                {
                    "id": row.id,
                    "file": row.file,
                    "name": row.name,
                    "line": row.line,
                    "statement": row.statement,
                    "status": row.status,
                    "attempts": int(row.n or 0),
                    "strategy": row.strategy or "",
                    "fingerprint": row.fingerprint,
                }
                for row in connection.execute(query).all()
            ]

    def count_goals(
        self, *, status: str | None = None, file: str | None = None, strategy: str | None = None
    ) -> int:
        """How many goals :meth:`goals` lists with the same filters and no page."""
        query = (
            select(func.count())
            .select_from(GoalRow)
            .where(*self._goal_filters(status, file, strategy))
        )
        with self.ledger.engine.connect() as connection:
            return int(connection.execute(query).scalar_one())

    def open_statements(self) -> list[str]:
        """The statements of the goals not proved yet (the overview's difficulty chart).

        Only the statement column of those rows: no join, no attempt counts.
        """
        with self.ledger.engine.connect() as connection:
            return list(
                connection.execute(
                    select(GoalRow.statement).where(GoalRow.status != "proved")
                ).scalars()
            )

    def goal(self, goal_id: int) -> dict[str, Any] | None:
        with self.ledger.engine.connect() as connection:
            row = connection.execute(select(GoalRow).where(GoalRow.id == goal_id)).first()
            if row is None:
                return None
            attempts = connection.execute(
                select(Attempt).where(Attempt.goal_id == goal_id).order_by(Attempt.id)
            ).all()
            proof = connection.execute(
                select(Proof).where(Proof.goal_id == goal_id).order_by(Proof.id.desc()).limit(1)
            ).first()
            goal = row
            return {
                "id": goal.id,
                "file": goal.file,
                "name": goal.name,
                "line": goal.line,
                "statement": goal.statement,
                "status": goal.status,
                "fingerprint": goal.fingerprint,
                "attempts": [
                    {
                        "strategy": a.strategy,
                        "tactic": a.tactic,
                        "outcome": a.outcome,
                        "cpu_seconds": a.cpu_seconds,
                        "wall_seconds": a.wall_seconds,
                        "budget_seconds": a.budget_seconds,
                        "message": a.message,
                        "created_at": _iso(a.created_at),
                    }
                    for a in attempts
                ],
                "proof": None
                if proof is None
                else {
                    "script": " ".join(proof.sentences),
                    "strategy": proof.strategy,
                    "diff": proof.diff,
                    "written": proof.written,
                    "verified_at": _iso(proof.verified_at),
                },
            }

    def live(self) -> list[dict[str, Any]]:
        """What running commands are doing now (see :meth:`Ledger.live_runs`)."""
        return self.ledger.live_runs()

    def runs(self) -> list[dict[str, Any]]:
        with self.ledger.engine.connect() as connection:
            rows = connection.execute(select(Run).order_by(Run.id.desc()).limit(50)).all()
            return [
                {
                    "id": r.id,
                    "command": r.command,
                    "status": r.status,
                    "started_at": _iso(r.started_at),
                    "finished_at": _iso(r.finished_at),
                    "prover_version": r.prover_version,
                    "summary": r.summary or {},
                }
                for r in rows
            ]

    def proofs_over_time(self, max_points: int = 500) -> list[tuple[datetime, int]]:
        """(time, cumulative number of verified proofs), at most ``max_points`` of them.

        With more proofs than that, evenly spaced points are kept (the first and
        the last among them), each with its exact cumulative count: a chart of
        20,000 proofs stays a few hundred points.
        """
        with self.ledger.engine.connect() as connection:
            times = [
                t
                for (t,) in connection.execute(
                    select(Proof.verified_at).order_by(Proof.verified_at)
                )
            ]
        points = [(t, i + 1) for i, t in enumerate(times)]
        if len(points) <= max_points:
            return points
        last, keep = len(points) - 1, max(2, max_points)
        return [points[round(j * last / (keep - 1))] for j in range(keep)]

    def files(self) -> list[dict[str, Any]]:
        with self.ledger.engine.connect() as connection:
            rows = connection.execute(
                select(GoalRow.file, GoalRow.status, func.count()).group_by(
                    GoalRow.file, GoalRow.status
                )
            ).all()
        per: dict[str, dict[str, int]] = {}
        for file, status, n in rows:
            per.setdefault(file, {"total": 0, "proved": 0, "open": 0})
            per[file]["total"] += n
            per[file]["proved" if status == "proved" else "open"] += n
        return [{"file": f, **counts} for f, counts in sorted(per.items())]
