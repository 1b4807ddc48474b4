"""CoqHammer: ``hammer`` (external ATPs, then proof reconstruction) and the ``sauto`` family.

``hammer`` needs its helper programs on ``PATH`` (Debian puts them in
``/usr/libexec/coq-hammer``; :func:`hammer_environment` adds that folder) and
runs two ATP strategies at a time on two cores (``Set Hammer GSMode 2``). When
it succeeds it prints the tactic that reconstructs the proof inside Coq
("Replace the hammer tactic with: ..."). That tactic, not ``hammer``, becomes
the stored proof: it is checked again on its own in the session, and later
checks need no external prover.

Where the file loads CoqHammer (``Locate Ltac`` finds
``Hammer.Tactics.Tactics.sauto``), both run in the goal's own session.
Elsewhere ``hammer`` runs in a *side session*: the same file prefix with
``From Hammer Require Import Hammer`` loaded just before the statement, inside
whatever sections and modules are open there, so everything above the goal
ran as in the file. What it finds is then rebuilt in the goal's own session,
without CoqHammer, from the lemmas the ATPs used, with tactics every Coq has
(:func:`standard_reconstructions`: ``eauto using``, ``firstorder using``,
rewriting, ``congruence``...). The proof written back compiles in the file as
it is; a proof never adds an import unless the user allows it.

Where no such script rebuilds it, the proof term ``hammer`` built in its side
session is printed there and read back in the goal's own session
(:mod:`.proof_terms`); it is checked first, so that the scripts then only
look for a shorter proof for a short while. When only CoqHammer's own
tactics (``sauto``/``hauto``/``qauto``...) rebuild the proof, the hole stays
open and the attempt says "found with Hammer.Tactics". With ``--allow-import
hammer-tactics`` that tactic is kept instead (before the term), checked in
a side session that loads ``Hammer.Tactics``, and the proof carries the
import ``From Hammer Require Import Tactics.`` that the patch adds after the
file's last ``Require`` (the whole file is verified as always). ``sauto``
runs in files without CoqHammer only when that import is allowed.

The first ``hammer`` call in a coqtop reads CoqHammer's ATP library (the
features of every object in scope: about 9 CPU seconds with the standard
library loaded); later calls in the same process reuse it, even after a
``BackTo`` past the ``Require`` or a call cut short. So the first attempt in
a process reads it once, with a tiny ATP limit, as a *load* that is counted
apart (``load_cpu_seconds``, not the goal's budget). Each attempt is held to
its grant by a CPU guard that, past it, kills only the ATPs and the processes
CoqHammer forked: ``hammer`` then fails at once and its process stays alive
and warm for the next goal (the process pool hands it to the next side
session on the same file). Coq's own wall-clock ``Timeout`` is only a second
line, and CoqHammer's ATP and reconstruction limits are set from the grant
(:func:`hammer_limits`), with :data:`REBUILD_SECONDS` kept back to rebuild a
proof found.

Where they cannot run at all (``sauto`` in a file without CoqHammer's tactics
and without that permission; either where CoqHammer does not load), they say
so with :attr:`~proof_orchestrator.goals.Outcome.SKIPPED` and the reason: no
tactic was tried, so it is not an attempt.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import time
from collections.abc import Callable

from ...errors import PrefixError
from ...goals import Budget, Goal, Outcome
from ...provers.base import TacticResult, TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ..session import NO_MICROMEGA_CACHE, CoqSession
from .micro import FixedScripts, _QuickTactics, lia_tactic
from .proof_terms import printed_terms, term_scripts
from .rebuild import dependencies, printed_hints, reconstruction, standard_reconstructions

__all__ = [
    "FOUND_WITH_TACTICS",
    "HAMMER_LIBEXEC",
    "HAMMER_PREAMBLE",
    "NO_HAMMER_TACTICS",
    "SAUTO_TACTICS",
    "TACTICS_IMPORT",
    "HammerStrategy",
    "SautoStrategy",
    "dependencies",
    "hammer_environment",
    "missing_atps",
    "printed_hints",
    "reconstruction",
    "replacements",
    "standard_reconstructions",
]

HAMMER_LIBEXEC = "/usr/libexec/coq-hammer"
#: sentences that load CoqHammer (in front of a file in ``orch eval``, before a statement here)
HAMMER_PREAMBLE = (
    "From Hammer Require Import Hammer.",
    "Set Hammer GSMode 2.",
    *NO_MICROMEGA_CACHE,
)
#: the import ``--allow-import hammer-tactics`` lets a proof add
TACTICS_IMPORT = "From Hammer Require Import Tactics."
#: a found proof is said to need CoqHammer's tactics with this opening
FOUND_WITH_TACTICS = "found with Hammer.Tactics"
SAUTO_TACTICS = (
    "qauto.",
    "hauto.",
    "sauto.",
    "hauto lq: on.",
    "sauto lq: on.",
    "qauto l: on.",
    "hauto l: on.",
    "strivial.",
)
#: why ``sauto`` is skipped in a file that does not load CoqHammer's tactics
NO_HAMMER_TACTICS = (
    "the file does not load CoqHammer's tactics (--allow-import lia,hammer-tactics lets "
    "sauto add `From Hammer Require Import Tactics.`)"
)


def skipped(reason: str, started: float) -> StrategyResult:
    """The result of a strategy that cannot run on the goal: no tactic tried, no CPU."""
    return StrategyResult(Outcome.SKIPPED, (), 0, 0.0, time.monotonic() - started, reason)


def _does_not_load(what: str, error: PrefixError) -> str:
    """Why a side session that loads ``what`` could not be opened (one short line)."""
    detail = " ".join(str(error).split())
    return f"{what} does not load in this file: {detail}"[:300]


def hammer_environment() -> None:
    """Put CoqHammer's helper programs on ``PATH`` for the provers this process starts."""
    path = os.environ.get("PATH", "")
    if os.path.isdir(HAMMER_LIBEXEC) and HAMMER_LIBEXEC not in path.split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([HAMMER_LIBEXEC, path]) if path else HAMMER_LIBEXEC


#: the ATPs CoqHammer calls, by its option name and the program it runs
_ATPS = (("Vampire", "vampire"), ("Eprover", "eprover"), ("Z3", "z3_tptp"), ("CVC4", "cvc4"))


#: how CoqHammer reports a ``Timeout`` that interrupted it
_TIMED_OUT = re.compile(r"Control\.Timeout|Timeout!")
#: coqtop processes (by pid) whose ATP library CoqHammer has read
_WARM: set[int] = set()
#: wall seconds the ATP library's first read may take (about 9 s on the stdlib)
LOAD_SECONDS = 60.0
#: wall seconds a ``hammer`` call cancelled (another strategy won) or past its CPU
#: budget gets to end once its ATPs are killed, so that its process, and the ATP
#: library it read, live on (measured: 0.2 s); a call still reading the library
#: (no ATP running yet) is not saved and its process goes
SALVAGE_SECONDS = 3.0
#: CPU seconds of hammer's grant kept back from the ATPs to rebuild what they find
#: with the goal's own tactics
REBUILD_SECONDS = 1.0
#: Coq's wall-clock ``Timeout`` on ``hammer.``, per CPU second of its grant: the
#: CPU guard is the cut, the wall clock only the second line
WALL_PER_CPU = 2.0


def hammer_limits(cpu_seconds: float) -> tuple[int, int]:
    """CoqHammer's ATP and reconstruction time limits (s) for a grant of ``cpu_seconds``.

    With ``GSMode 2`` two ATP runs go at once, so half the grant is all the ATPs can
    use; the reconstruction tactics then get the same (CoqHammer's defaults,
    20 s and 5 s, are for a ``hammer`` without a budget). The CPU guard cuts
    whatever the two together run over.
    """
    half = max(1, math.ceil(cpu_seconds / 2))
    return half, max(2, half)


async def read_atp_library(session: CoqSession) -> float:
    """Read CoqHammer's ATP library in ``session``'s process unless it has been read.

    One ``hammer`` call with a 1 s ATP limit does it (the ATPs need the
    features of everything in scope, which CoqHammer computes on its first
    call and keeps for the process); the session is back at its root after.
    Returns its CPU seconds (0 when the process was warm).
    """
    pid = session.pid
    if pid is None or pid in _WARM:
        return 0.0
    before = session.cpu_seconds()
    settings = await session.run_script(
        ["Set Hammer ATPLimit 1.", "Set Hammer ReconstrLimit 1."], session.root, timeout=5
    )
    state = settings.state if settings.ok else session.root
    found = await session.run_tactic(
        "hammer.", state, timeout=LOAD_SECONDS, cpu_limit=2 * LOAD_SECONDS, salvage=SALVAGE_SECONDS
    )
    closed = found.status is TacticStatus.COMPLETE
    spent = session.cpu_seconds() - before
    # hammer's first step (sauto's fast path) closes easy goals before any ATP is
    # called, and then the library has not been read: the next call reads it
    if session.pid == pid and (not closed or spent > 2.0):  # the process was not replaced
        _WARM.add(pid)
        # kept for the next hammer: a side session loads CoqHammer just before the
        # statement (its users are the sessions that load it); a file that loads
        # CoqHammer itself shares the process with all its sessions
        side = HAMMER_PREAMBLE[0] in session.prefix
        session.mark_warm(HAMMER_PREAMBLE[0] if side else None)
    await session.back_to(session.root)
    return spent


def missing_atps() -> tuple[str, ...]:
    """``Unset Hammer X.`` for each ATP that is not on ``PATH``.

    CoqHammer calls every ATP it knows; one that is not installed (Debian
    packages no Vampire and no ``z3_tptp``) makes the whole call end in "Error
    running vampire" whatever the others found. The side sessions, which orch
    opens itself, leave those out; the ``hammer`` baseline of ``orch eval``
    runs with CoqHammer's defaults, as its users run it.
    """
    return tuple(f"Unset Hammer {name}." for name, program in _ATPS if not shutil.which(program))


def replacements(output: str) -> list[str]:
    """Tactics to store instead of ``hammer``: the one it printed, then the ``sauto`` family
    with the dependencies it found (some printed tactics do not parse on their own)."""
    found: list[str] = []
    printed = reconstruction(output)
    if printed:
        found.append(printed)
    names = dependencies(output)
    if names:
        use = ", ".join(names)
        found += [f"hauto use: {use}.", f"sauto use: {use}.", f"qauto use: {use}."]
        found.append(f"eauto using {use}.")
    return list(dict.fromkeys(found))


_Scripts = FixedScripts
#: CPU seconds the tactic stand-ins get to find a readable proof once the term is known
#: to read back (of the stand-ins' rebuilds on sets 5 to 8, 32 of 44 took under 1 s)
READABLE_SECONDS = 2.0
#: the message of a candidate that is hammer's proof term
TERM_MESSAGE = "hammer's proof term (no tactic stand-in rebuilt it)"


async def _term_proof(
    session: CoqSession, goal: Goal, terms: list[str], budget: Budget
) -> tuple[str, ...] | None:
    """The first of ``terms`` that proves ``goal`` in ``session``, as a script; or None."""
    scripts = term_scripts(terms)
    if not scripts:
        return None
    check = FixedScripts("hammer", scripts)
    # a term naming what is not loaded here fails as a whole sentence: one at a time
    check.batch_size = 1
    found = await check.prove(
        session,
        goal,
        Budget(REBUILD_SECONDS, max(budget.tactic_seconds, 3.0), budget.grace_seconds),
    )
    return found.sentences if found.outcome is Outcome.CANDIDATE else None


async def _has_hammer_tactics(session: CoqSession) -> bool:
    return await session.locate_ltac("Hammer.Tactics.Tactics.sauto") is not None


class SautoStrategy(_QuickTactics):
    """The ``sauto`` family of CoqHammer's tactics (no external prover).

    In a file without CoqHammer it runs only when ``allow_tactics_import`` is
    set, in a side session that loads ``Hammer.Tactics``; its proof then carries
    the import.
    """

    name = "sauto"

    def __init__(self, allow_tactics_import: bool = False) -> None:
        self.allow_tactics_import = allow_tactics_import

    async def scripts(self, session: CoqSession) -> list[str]:
        if not await _has_hammer_tactics(session):
            return []
        return list(SAUTO_TACTICS)

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        if await _has_hammer_tactics(session):
            return await super().prove(session, goal, budget)
        if not self.allow_tactics_import:
            return skipped(NO_HAMMER_TACTICS, started)
        async with contextlib.AsyncExitStack() as stack:
            try:
                side = await stack.enter_async_context(
                    session.side_session((TACTICS_IMPORT, *NO_MICROMEGA_CACHE))
                )
            except PrefixError as exc:
                return skipped(_does_not_load("Hammer.Tactics", exc), started)
            found = await super().prove(side, goal, budget)
        if found.outcome is not Outcome.CANDIDATE:
            return found
        return StrategyResult(
            Outcome.CANDIDATE,
            found.sentences,
            found.tactics_tried,
            found.cpu_seconds,
            time.monotonic() - started,
            imports=(TACTICS_IMPORT,),
        )


class HammerStrategy(StrategyDefaults):
    """``hammer`` with its ATPs; the stored proof is a reconstruction that needs no ATP.

    In a file that does not load CoqHammer, ``hammer`` runs in a side session
    and its proof is rebuilt in the goal's own session with standard tactics
    (see the module's docstring).
    """

    name = "hammer"
    weight = "heavy"
    language = "coq"
    uses_slot = True
    needs_ledger = False
    #: below this many CPU seconds the ATPs rarely finish: the goal's budget keeps
    #: this much for hammer while it waits (``GoalBudget``'s floors)
    min_grant_seconds = 6.5

    def __init__(self, allow_tactics_import: bool = False) -> None:
        self.allow_tactics_import = allow_tactics_import

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        sides: list[CoqSession] = []
        load = 0.0

        def spent() -> float:
            return session.cpu_seconds() - cpu_start + sum(s.cpu_seconds() for s in sides)

        def result(
            outcome: Outcome,
            script: tuple[str, ...] = (),
            message: str = "",
            imports: tuple[str, ...] = (),
            hint: str = "",
        ) -> StrategyResult:
            return StrategyResult(
                outcome,
                script,
                1,
                spent(),
                time.monotonic() - started,
                message,
                imports=imports,
                hint=hint,
                load_cpu_seconds=load,
            )

        loaded = await _has_hammer_tactics(session)
        async with contextlib.AsyncExitStack() as stack:
            where = session
            if not loaded:
                try:
                    where = await stack.enter_async_context(
                        session.side_session((*HAMMER_PREAMBLE, *missing_atps()))
                    )
                except PrefixError as exc:
                    return skipped(_does_not_load("CoqHammer", exc), started)
                sides.append(where)
            load = await read_atp_library(where)
            cpu_start += load  # counted apart, not against the goal's budget
            found = await self._hammer(where, budget, spent)
            # the term hammer built, printed while its side session is open
            terms = (
                await printed_terms(where)
                if found.status is TacticStatus.COMPLETE and not loaded
                else []
            )
        if found.status is TacticStatus.TIMEOUT:
            return result(Outcome.TIMEOUT)
        if found.status is not TacticStatus.COMPLETE:
            return result(Outcome.FAILED, message=found.message[-300:])
        # rebuild the proof in the goal's own session: with CoqHammer's tactics where the
        # file has them, else with standard tactics from the lemmas the ATPs used
        if loaded:
            tactics = replacements(found.message)
        else:
            tactics = standard_reconstructions(found.message, await lia_tactic(session))
        if not tactics:
            return result(Outcome.FAILED, message="hammer printed no reconstruction tactic")
        # a proof found is worth its rebuild: at least REBUILD_SECONDS, even past the
        # grant (the CPU guard on the ATPs under-reads their short-lived processes)
        left = max(REBUILD_SECONDS, budget.cpu_seconds - spent())
        part = Budget(left, max(budget.tactic_seconds, 3.0), budget.grace_seconds)
        # the term first (one cheap check): when it reads back here, the tactic
        # stand-ins only look for a shorter, readable proof, within READABLE_SECONDS
        term = await _term_proof(session, goal, terms, budget)
        if term is not None:
            part = Budget(min(left, READABLE_SECONDS), 1.0, budget.grace_seconds)
        rebuild = _Scripts("hammer", tactics)
        if loaded:
            # CoqHammer prints tactics it cannot always parse back (``srun eauto use: x``):
            # one that does not parse would fail a whole batch, so each goes alone
            rebuild.batch_size = 1
        rebuilt = await rebuild.prove(session, goal, part)
        if rebuilt.outcome is Outcome.CANDIDATE:
            return result(Outcome.CANDIDATE, rebuilt.sentences)
        printed = reconstruction(found.message) or next(iter(replacements(found.message)), None)
        if loaded or printed is None:
            return result(Outcome.FAILED, message=f"no reconstruction of {tactics!r} replayed")
        # with CoqHammer's tactics allowed, its one-line tactic is kept before the term
        if term is not None and (not self.allow_tactics_import or budget.cpu_seconds <= spent()):
            return result(Outcome.CANDIDATE, term, message=TERM_MESSAGE)
        if not self.allow_tactics_import:
            hint = (
                f"{FOUND_WITH_TACTICS}: {printed} (no standard tactic rebuilt it; "
                "--allow-import lia,hammer-tactics adds `From Hammer Require Import Tactics.`)"
            )
            return result(Outcome.FAILED, message=hint, hint=hint)
        left = budget.cpu_seconds - spent()
        if left <= 0:
            return result(Outcome.TIMEOUT, message="no CPU left to replay the reconstruction")
        async with session.side_session((TACTICS_IMPORT, *NO_MICROMEGA_CACHE)) as side:
            sides.append(side)
            check = await side.run_tactic(
                printed, side.root, timeout=max(5.0, left), cpu_limit=left
            )
        if check.status is TacticStatus.COMPLETE:
            return result(Outcome.CANDIDATE, (printed,), imports=(TACTICS_IMPORT,))
        if term is not None:
            return result(Outcome.CANDIDATE, term, message=TERM_MESSAGE)
        return result(Outcome.FAILED, message=f"{printed} did not replay with Hammer.Tactics")

    async def _hammer(
        self, session: CoqSession, budget: Budget, spent: Callable[[], float]
    ) -> TacticResult:
        """``hammer.`` at the root of ``session``, held to what is left of the CPU budget."""
        atp, reconstr = hammer_limits(budget.cpu_seconds)
        settings = await session.run_script(
            [f"Set Hammer ATPLimit {atp}.", f"Set Hammer ReconstrLimit {reconstr}."],
            session.root,
            timeout=5,
        )
        state = settings.state if settings.ok else session.root
        # The CPU guard at what is left (less the rebuild's share) cuts the call: it
        # kills only the ATPs and the processes CoqHammer forked, and coqtop answers
        # within SALVAGE_SECONDS with the ATP library still read. Coq's Timeout
        # (wall-clock) is the second line, set wide: on a busy machine hammer
        # gets far less than one CPU second per second.
        left = max(1.0, budget.cpu_seconds - spent() - REBUILD_SECONDS)
        found = await session.run_tactic(
            "hammer.",
            state,
            timeout=WALL_PER_CPU * left,
            cpu_limit=left,
            salvage=SALVAGE_SECONDS,
        )
        if found.status is TacticStatus.FAILED and _TIMED_OUT.search(found.message):
            # CoqHammer reports Coq's Timeout as its own error
            return TacticResult(
                TacticStatus.TIMEOUT,
                found.state,
                message=found.message,
                cpu_seconds=found.cpu_seconds,
            )
        return found
