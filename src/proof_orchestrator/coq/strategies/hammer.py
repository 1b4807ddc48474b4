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

When only CoqHammer's own tactics (``sauto``/``hauto``/``qauto``...) rebuild
the proof, the hole stays open and the attempt says "found with
Hammer.Tactics". With ``--allow-import hammer-tactics`` that tactic is kept
instead, checked in a side session that loads ``Hammer.Tactics``, and the
proof carries the import ``From Hammer Require Import Tactics.`` that the
patch adds after the file's last ``Require`` (the whole file is verified as
always). ``sauto`` runs in files without CoqHammer only when that import is
allowed.

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
import itertools
import math
import os
import re
import shutil
import time
from collections.abc import Callable

from ...errors import PrefixError
from ...goals import Budget, Goal, Outcome
from ...provers.base import TacticResult, TacticStatus
from ...strategies.base import StrategyResult
from ..session import NO_MICROMEGA_CACHE, CoqSession
from . import case_split as stand_ins
from .micro import FixedScripts, _QuickTactics, lia_tactic

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
_REPLACE = re.compile(r"Replace the hammer tactic with:\s*(?P<tactic>[^<]+)")
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


_DEPENDENCIES = re.compile(r"- dependencies:\s*(?P<names>[^<\n]+)")


def dependencies(output: str) -> list[str]:
    """The lemmas the ATP proof used, as ``hammer`` lists them."""
    match = _DEPENDENCIES.search(output)
    if match is None:
        return []
    return [n.strip() for n in match.group("names").split(",") if n.strip()]


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


def reconstruction(output: str) -> str | None:
    """The tactic ``hammer`` says to use instead of itself, or None."""
    match = _REPLACE.search(output)
    if match is None:
        return None
    tactic = " ".join(match.group("tactic").split()).removesuffix(".").strip()
    return f"{tactic}." if tactic else None


#: the clauses of a printed CoqHammer tactic that name things: lemmas to use, constants
#: to unfold, types whose hypotheses to invert, constructors, types to case on
_CLAUSE = re.compile(r"\b(use|unfold|inv|ctrs|cases):\s*")
_OPTION = re.compile(r"\b\w+:")
_NAME = re.compile(r"[A-Za-z_][\w'.]*")


def printed_hints(tactic: str | None) -> dict[str, list[str]]:
    """The name lists of a printed tactic's clauses, by clause.

    ``hauto lq: on use: A, B unfold: C inv: list.`` gives ``{"use": ["A", "B"],
    "unfold": ["C"], "inv": ["list"]}``; options (``lq: on``) are not names.
    """
    if not tactic:
        return {}
    parts = _CLAUSE.split(tactic.strip().removesuffix("."))
    hints: dict[str, list[str]] = {}
    for key, value in zip(parts[1::2], parts[2::2], strict=False):
        option = _OPTION.search(value)
        names = value[: option.start()] if option else value
        hints.setdefault(key, []).extend(
            n.strip() for n in names.split(",") if _NAME.fullmatch(n.strip())
        )
    return hints


#: the rewrites with at most this many lemmas are also tried in every orientation
MAX_ORIENTED = 3
#: split every ``match`` the goal has on what it matches on
CASES = "intros; repeat match goal with |- context [match ?x with _ => _ end] => destruct x end; "


def _with_lemmas(
    opening: str, use: str, constructors: str = "", lia: str | None = None
) -> list[str]:
    """Scripts that finish a goal from ``opening`` with the lemmas ``use`` (may be empty)
    and the inductive types ``constructors`` (``eauto using T`` uses T's constructors);
    ``lia`` is how the session names Lia's tactic (None: not loaded)."""
    hints = ", ".join(h for h in (use, constructors) if h)
    using = f" using {hints}" if hints else ""
    scripts = [
        f"{opening}eauto{using}.",
        f"{opening}subst; eauto{using}.",
        f"{opening}firstorder{using}.",
        f"{opening}intuition (eauto{using}).",
        # invert one hypothesis (each is tried in turn), then finish
        f"{opening}match goal with H : _ |- _ => solve [inversion H; subst; eauto{using}] end.",
        f"{opening}constructor; eauto{using}.",
    ]
    if use:
        names = [n.strip() for n in use.split(",")]
        rewrites = ", ".join(f"?{n}" for n in names)
        scripts += [
            f"{opening}rewrite {rewrites}; auto.",
            # an iff lemma rewritten, what is left propositional (its side goals too)
            f"{opening}rewrite {rewrites}; intuition (eauto{using}).",
            f"{opening}rewrite {rewrites} in *; congruence.",
            # an iff lemma rewritten in the hypotheses (``In x (filter f s)``)
            f"{opening}rewrite {rewrites} in *; intuition (eauto{using}).",
            f"{opening}simpl in *; rewrite {rewrites} in *; eauto{using}.",
        ]
        if len(names) > 1:
            # one lemma's rewrite can hide the pattern of the next: the other order
            backwards = ", ".join(f"?{n}" for n in reversed(names))
            scripts.append(f"{opening}rewrite {backwards}; intuition (eauto{using}).")
            scripts.append(f"{opening}rewrite {backwards}; auto.")
        for order in dict.fromkeys((tuple(names), tuple(reversed(names)))):
            # each lemma rewritten once where its premises hold (``compare_empty_x``
            # needs ``is_empty a = true``), then the matches it exposes split
            once = "; ".join(f"try rewrite {n} by eauto" for n in order)
            scripts.append(f"{opening}{once}; {stand_ins.SPLIT_ALL}; auto.")
            # the premises, and what is left, by the hints of every database loaded
            # (``tan_cos``: ``sin x >= 0`` from ``0 <= sin x`` is ``Rle_ge``, in ``real``)
            # (``solve [...]``, not ``(eauto with *)``: a ``*)`` reads as a comment's end
            # and the script gate refuses it)
            anywhere = "; ".join(f"try rewrite {n} by solve [eauto with *]" for n in order)
            scripts.append(f"{opening}{anywhere}; auto with *.")
        if len(names) <= MAX_ORIENTED:
            # an equation the ATPs used right to left (``a*b - a*c`` folded back into
            # ``a*(b-c)``): every orientation, in both orders
            for order in dict.fromkeys((tuple(names), tuple(reversed(names)))):
                for turns in itertools.product((False, True), repeat=len(order)):
                    if any(turns):
                        # once right to left (``rewrite <- ?L`` can loop: ``1`` to ``1 ^ n``)
                        turned = "; ".join(
                            f"try rewrite <- {n}" if back else f"rewrite ?{n}"
                            for back, n in zip(turns, order, strict=True)
                        )
                        scripts.append(f"{opening}{turned}; auto.")
        if lia:  # arithmetic once the lemmas are rewritten
            scripts += [
                f"{opening}rewrite {rewrites} in *; {lia}.",
                f"{opening}simpl in *; rewrite {rewrites} in *; {lia}.",
            ]
    return scripts


def standard_reconstructions(output: str, lia: str | None = None) -> list[str]:
    """Proofs of what ``hammer`` found, with tactics every Coq has (no CoqHammer).

    The lemmas are named as the printed tactic's ``use:`` clause names them
    (short names), then by their qualified names from the ATP's dependency
    list. The constants of its ``unfold:`` clause are unfolded everywhere
    first, and the types of its ``ctrs:`` clause lend their constructors to
    ``eauto``. Each lemma list then feeds ``eauto using``, ``firstorder
    using``, inversion of a hypothesis, ``constructor``, rewriting followed by
    ``congruence`` or, where the session has Lia's tactic (``lia``: its name
    there; a batch naming a tactic that is not loaded fails as a whole), ``lia``.
    Tactics that need no lemma come last.
    """
    hints = printed_hints(reconstruction(output))
    unfold = ", ".join(hints.get("unfold", []))
    constructors = ", ".join(hints.get("ctrs", []))
    # intros again: an unfolded definition may quantify (``Equal s s' := forall a, ...``);
    # one defined by cases leaves a match to split (``powerRZ x n``: on ``n``)
    openings = (
        [f"intros; unfold {unfold} in *; intros; ", f"intros; unfold {unfold} in *; {CASES}"]
        if unfold
        else []
    )
    openings.append("intros; ")
    found: list[str] = []
    spellings = [", ".join(hints.get("use", [])), ", ".join(dependencies(output))]
    for use in dict.fromkeys(spellings):
        if not use and found:
            continue
        if use:
            found.append(f"eauto using {use}.")
            # early: each fails at once where its lemma does not apply, and the rebuild's
            # CPU can run out before the end of the list (``equal_mem_1``)
            found += stand_ins.backward_reconstructions(unfold, use)
            found += stand_ins.instance_reconstructions(use)
        for opening in openings:
            found += _with_lemmas(opening, use, constructors, lia)
        found += stand_ins.case_split_reconstructions(unfold, use)
    # what ``sauto`` proves by case analysis alone (no lemma, no constant named)
    found += stand_ins.case_analysis_reconstructions()
    found += [
        "congruence.",
        "intuition.",
        "firstorder.",
        "intros; subst; eauto.",
        "tauto.",
    ]
    if lia:
        found.append(f"intros; simpl in *; {lia}.")
    return list(dict.fromkeys(found))


_Scripts = FixedScripts


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


class HammerStrategy:
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
