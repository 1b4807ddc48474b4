"""What ``hammer`` found, as scripts with tactics every Coq has (no CoqHammer).

``hammer`` prints the tactic that reconstructs its proof ("Replace the hammer
tactic with: hauto use: A, B unfold: C.") and the lemmas its ATPs used. In a
file that does not load CoqHammer's tactics that tactic cannot be kept; the
scripts here rebuild the proof from the same hints: the ``use:`` lemmas feed
``eauto using``, ``firstorder using``, rewriting and inversion, the
``unfold:`` constants are unfolded first, and the stand-ins of
:mod:`.case_split` imitate ``sauto``'s case analysis.
"""

from __future__ import annotations

import itertools
import re

from . import case_split as stand_ins

__all__ = [
    "CASES",
    "MAX_ORIENTED",
    "dependencies",
    "printed_hints",
    "reconstruction",
    "standard_reconstructions",
]

_REPLACE = re.compile(r"Replace the hammer tactic with:\s*(?P<tactic>[^<]+)")

_DEPENDENCIES = re.compile(r"- dependencies:\s*(?P<names>[^<\n]+)")


def dependencies(output: str) -> list[str]:
    """The lemmas the ATP proof used, as ``hammer`` lists them."""
    match = _DEPENDENCIES.search(output)
    if match is None:
        return []
    return [n.strip() for n in match.group("names").split(",") if n.strip()]


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
