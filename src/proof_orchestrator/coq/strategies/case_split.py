"""Plain-Coq stand-ins for CoqHammer's ``sauto`` family, used to rebuild what ``hammer`` found.

:func:`.hammer.standard_reconstructions` tries these after its lemma-driven
scripts: they do with ``firstorder`` and ``intuition`` what ``sauto``,
``hauto`` and ``sfirstorder`` do with their hints, in a file that does not
load CoqHammer's tactics.
"""

from __future__ import annotations

__all__ = [
    "SPLIT_ALL",
    "backward_reconstructions",
    "case_analysis_reconstructions",
    "case_split_reconstructions",
    "instance_reconstructions",
]

#: split every ``match`` of the goal and of the hypotheses (``Rabs x`` unfolded: on
#: ``Rcase_abs x``), introducing what each case adds
SPLIT_ALL = (
    "repeat (match goal with | |- context [match ?x with _ => _ end] => destruct x "
    "| H : context [match ?x with _ => _ end] |- _ => destruct x end; intros)"
)
#: a leaf of ``firstorder``/``intuition``: closed, or the branch fails (``eauto`` alone
#: never fails, so a leaf it cannot close would be left open)
_LEAF = "solve [congruence | eauto | subst; eauto]"


def case_split_reconstructions(unfold: str, use: str) -> list[str]:
    """Plain-Coq stand-ins for ``sfirstorder``/``hauto``/``hfcrush`` with their hints.

    Those tactics unfold the ``unfold:`` constants, split the ``match`` they
    expose (in the hypotheses too), invert hypotheses, put the ``use:`` lemmas
    in the context and search; these scripts do the same with ``firstorder``
    and ``intuition``, whose leaves are closed by inverting a hypothesis, by
    ``congruence`` or by ``eauto`` (with every hint database, for the last two).
    """
    unfolding = f"unfold {unfold} in *; " if unfold else ""
    generalize = f"generalize {use}; " if use else ""
    using = f" using {use}" if use else ""
    # a hypothesis of an inductive predicate on a constructor (``InA eq x (y :: l)``,
    # seen once ``hnf`` unfolds ``In``), inverted at a leaf: sauto's ``inv:``
    invert = (
        f"match goal with H : _ |- _ => solve [inversion H; subst; firstorder (eauto{using})] end"
    )
    return [
        f"intros; {unfolding}hnf in *; firstorder ({invert}).",
        f"intros; {unfolding}intros; {SPLIT_ALL}; {generalize}intros; firstorder ({_LEAF}).",
        f"intros; {generalize}{unfolding}intros; {SPLIT_ALL}; subst; "
        "intuition (solve [eauto with *]).",
        f"intros; {unfolding}{SPLIT_ALL}; "
        f"firstorder (subst; solve [congruence | eauto with *]){using}.",
    ]


#: a leaf of a case analysis: a constructor whose premises compute to what ``eauto``
#: closes (``notred Leaf`` is ``True`` once simplified), or ``eauto``, or ``congruence``
_CASE_LEAF = "solve [constructor; simpl in *; eauto | eauto | congruence | firstorder]"
#: the latest variable destructed (or hypothesis inverted), then every exposed match split
_DESTRUCT = "match goal with x : _ |- _ => destruct x end; simpl in *; " + SPLIT_ALL
_INVERT = "match goal with H : _ |- _ => inversion H; subst end; simpl in *; " + SPLIT_ALL


def case_analysis_reconstructions() -> list[str]:
    """Plain-Coq stand-ins for a hint-less ``sauto`` (``sauto q: on.``, ``sauto lq: on.``).

    With no lemma and no constant named, ``sauto`` proves by case analysis: it
    destructs a variable, reduces, splits the ``match`` that appear (MSetRBT's
    ``rmatch``: ``rcase f g t`` once ``t`` is a node, then its colour) and closes
    each case with a constructor, or inverts an inductive hypothesis first
    (``rbt (S n) t``). These scripts do the same with a destruct or an inversion,
    once or twice, each case closed by a constructor, ``eauto`` or ``congruence``.
    """
    return [
        f"intros; {_DESTRUCT}; {_CASE_LEAF}.",
        f"intros; {_DESTRUCT}; try ({_DESTRUCT}); {_CASE_LEAF}.",
        f"intros; {_INVERT}; {_CASE_LEAF}.",
        f"intros; {_INVERT}; try ({_INVERT}); {_CASE_LEAF}.",
    ]


#: at most this many ``use:`` lemmas are each tried as the first backward step
MAX_BACKWARD = 4


def backward_reconstructions(unfold: str, use: str) -> list[str]:
    """Stand-ins for a ``qauto``/``hauto`` proof that starts by applying one of its lemmas.

    FSetEqProperties' ``equal_mem_1`` (``qauto use: mem_1, mem_2, equal_1 unfold:
    Equal``): ``apply equal_1`` turns ``equal s s' = true`` into ``Equal s s'``,
    which unfolds to an iff under a ``forall``; each direction is then a chain of
    the lemmas and the hypothesis ``mem a s = mem a s'`` read either way, which
    ``eauto`` finds with ``eq_trans`` and ``eq_sym``. One script per lemma (the
    first :data:`MAX_BACKWARD`), each failing at once where that lemma does not apply.
    """
    if not use:
        return []
    unfolding = f"unfold {unfold} in *; " if unfold else ""
    names = [n.strip() for n in use.split(",")][:MAX_BACKWARD]
    return [
        f"intros; apply {name}; {unfolding}intros; try split; intros; "
        f"eauto using {use}, eq_trans, eq_sym."
        for name in names
    ]


#: at most this many ``use:`` lemmas are each instantiated at the goal's variables
MAX_INSTANCES = 2


def instance_reconstructions(use: str) -> list[str]:
    """Stand-ins for ``scongruence use: L``: ``L`` at one or two of the variables, then
    ``congruence``.

    Sint63's ``to_Z_inj`` (``to_Z x = to_Z y -> x = y``, ``scongruence use:
    of_to_Z``): with ``of_Z (to_Z x) = x`` and ``of_Z (to_Z y) = y`` in the context,
    ``congruence`` closes it; alone it cannot instantiate a quantified lemma. The
    ``match`` backtracks over the variables (a hypothesis that is no argument of ``L``
    fails at once) until ``congruence`` succeeds.
    """
    names = [n.strip() for n in use.split(",") if n.strip()][:MAX_INSTANCES]
    return [
        script
        for name in names
        for script in (
            f"intros; match goal with x : _ |- _ => pose proof ({name} x); congruence end.",
            "intros; match goal with x : _, y : _ |- _ => "
            f"pose proof ({name} x); pose proof ({name} y); congruence end.",
        )
    ]
