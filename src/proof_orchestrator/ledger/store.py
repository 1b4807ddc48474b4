"""The ledger's facade: :class:`Ledger`, made of one part per concern.

The ledger is the only place that writes SQL. Each part is a private module
that adds its operations to the shared core (:mod:`._core`: the engine, its
sessions and transactions, retries while a database server is unreachable):

==================  ==================================================
``_runs``           runs (one per command)
``_goals``          goals and the attempts made on them
``_proofs``         verified proofs and the tactic cache
``_tickets``        the helper-lemma market
``_live``           the live state of running commands
``_llm``            the cache of model replies
``_bandit``         the bandit's arms
``_stats``          summaries (``orch stats``, the dashboard's overview)
``_schema``         migrations to the newest schema
==================  ==================================================

The dashboard's read-only queries are :class:`~.reader.LedgerReader`.
"""

from __future__ import annotations

from ._bandit import BanditArms
from ._core import default_ledger_url
from ._goals import GoalRecords
from ._live import LIVE_STALE_SECONDS, LiveState
from ._llm import LlmCache
from ._proofs import ProofRecords
from ._runs import RunRecords
from ._stats import Summaries
from ._tickets import TicketMarket

__all__ = ["LIVE_STALE_SECONDS", "Ledger", "default_ledger_url"]


class Ledger(
    RunRecords,
    GoalRecords,
    ProofRecords,
    BanditArms,
    LlmCache,
    TicketMarket,
    LiveState,
    Summaries,
):
    """Runs, goals, attempts, verified proofs and the tactic cache.

    Open it with ``Ledger(url, *, busy_timeout=10.0, retry=None)`` (see
    :class:`~._core.LedgerCore`) and :meth:`close` it when done.
    """
