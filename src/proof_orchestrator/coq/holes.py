"""Finding holes in Coq files.

A hole is a lemma-like declaration (``Lemma``, ``Theorem``, ``Fact``,
``Remark``, ``Corollary``, ``Proposition``, ``Example``) whose proof ends with
``Admitted.`` (possibly containing ``admit``). The scanner works on sentences
(see :mod:`proof_orchestrator.coq.syntax`), so comments and strings can never
fake a hole, and it tracks ``Module``/``Section`` nesting for qualified names
and for the goal's context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..goals import Goal, HoleKind, fingerprint_of
from .script import format_script
from .syntax import Sentence, sentence_keyword, split_sentences

__all__ = [
    "LEMMA_KEYWORDS",
    "CoqHole",
    "DeclaredProof",
    "admit_proofs",
    "axiom_names",
    "declared_axioms",
    "functor_parameters",
    "iter_proofs",
    "lemma_ends",
    "module_axioms",
    "module_parameters",
    "opened_module",
    "proof_hole",
    "qed_proofs",
    "scan_coq_file",
    "scan_coq_text",
    "strip_modifiers",
]

#: declaration keywords that open a proof we may fill
LEMMA_KEYWORDS = frozenset(
    {"Lemma", "Theorem", "Fact", "Remark", "Corollary", "Proposition", "Example"}
)
_MODIFIERS = frozenset({"Local", "Global", "Polymorphic", "Monomorphic", "Program", "Private"})
_ENDERS = frozenset({"Qed", "Defined", "Admitted", "Abort", "Save"})
_CONTEXT_KEYWORDS = frozenset(
    {"Require", "Import", "Export", "From", "Open", "Close", "Set", "Unset", "Declare"}
)
_SECTION_BINDERS = frozenset(
    {"Variable", "Variables", "Hypothesis", "Hypotheses", "Context", "Let", "Implicit"}
)
#: sentences that declare a constant without a proof: axioms, and the kernel's primitive
#: operations (``Primitive ltb := #int63_ltb.``), which ``Print Assumptions`` lists too
_AXIOM_KEYWORDS = frozenset(
    {"Axiom", "Axioms", "Parameter", "Parameters", "Conjecture", "Conjectures", "Primitive"}
)
_ADMIT = re.compile(r"(?<![\w'.])admit(?![\w'])")


@dataclass(frozen=True, slots=True)
class DeclaredProof:
    """A lemma-like declaration and its proof, whatever its ending."""

    name: str
    keyword: str
    statement: Sentence
    #: the proof's sentences, ``Proof.`` included, the ending included
    proof: tuple[Sentence, ...]
    ending: str
    scope: tuple[tuple[str, str], ...]
    context: tuple[str, ...]
    #: parameters of the functors (and ``Declare Module``s of module types) in scope
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CoqHole:
    """A hole and everything needed to open a session on it and to patch it."""

    goal: Goal
    #: offset up to which a session loads the file (statement and a kept ``Proof ...``)
    prefix_end: int
    #: offset where the statement sentence starts
    statement_start: int
    #: the span that a patch replaces
    proof_start: int
    proof_end: int
    #: a ``Proof using ...`` / ``Proof with ...`` sentence kept verbatim, or ``Proof.``
    proof_opener: str
    #: leading whitespace of the statement's first line
    indent: str

    @property
    def declaration(self) -> str:
        """The hole's name in its file's proof records: its qualified name."""
        return self.goal.qualified_name

    def replacement(self, sentences: Sequence[str]) -> str:
        """The text that replaces the proof span: the opener, the script, ``Qed.``."""
        body = format_script(sentences, self.indent + "  ")
        return f"{self.proof_opener}\n{body}\n{self.indent}Qed."


def strip_modifiers(code: str) -> str:
    """``code`` without its attributes and modifiers (``#[local]``, ``Local``, ``Program``)."""
    stripped = re.sub(r"^(?:#\[[^\]]*\]\s*)+", "", code)
    words = stripped.split(None, 1)
    while words and words[0] in _MODIFIERS and len(words) > 1:
        stripped = words[1]
        words = stripped.split(None, 1)
    return stripped


def _declared_name(code: str) -> tuple[str, str, str] | None:
    """(keyword, name, rest) for a lemma-like sentence, else None."""
    match = re.match(r"([A-Z][a-z]+)\s+([A-Za-z_][\w']*)(.*)\Z", strip_modifiers(code), re.S)
    if match and match.group(1) in LEMMA_KEYWORDS:
        return match.group(1), match.group(2), match.group(3)
    return None


def iter_proofs(sentences: list[Sentence]) -> Iterable[DeclaredProof]:
    """Every lemma-like declaration with its proof, in file order."""
    scope: list[tuple[str, str]] = []
    context: list[str] = []
    section_binders: list[list[str]] = []
    #: per scope level, the module parameters it binds
    parameters: list[list[str]] = []
    i = 0
    n = len(sentences)
    while i < n:
        sentence = sentences[i]
        code = sentence.code
        keyword = sentence_keyword(strip_modifiers(code))
        declared = _declared_name(code)
        if declared is not None:
            kw, name, _rest = declared
            j = i + 1
            while j < n and sentence_keyword(sentences[j].code) not in _ENDERS:
                j += 1
            if j >= n:
                return  # unterminated proof at end of file: nothing safe to do
            ending = sentence_keyword(sentences[j].code)
            binders = tuple(b for level in section_binders for b in level)
            yield DeclaredProof(
                name=name,
                keyword=kw,
                statement=sentence,
                proof=tuple(sentences[i + 1 : j + 1]),
                ending=ending,
                scope=tuple(scope),
                context=(*context, *(f"{k}:{v}" for k, v in scope), *binders),
                parameters=tuple(p for level in parameters for p in level),
            )
            i = j + 1
            continue
        words = code.rstrip(".").split()
        if keyword == "Section" and len(words) >= 2:
            scope.append(("section", words[1]))
            section_binders.append([])
            parameters.append([])
        elif keyword == "Module" and (opened := opened_module(code)) is not None:
            scope.append(("module", opened[0]))
            section_binders.append([])
            parameters.append(module_parameters(code))
        elif keyword == "Declare" and words[1:2] == ["Module"] and parameters:
            parameters[-1] += [w for w in words[2:3] if w not in ("Import", "Export")]
        elif keyword == "End" and len(words) >= 2 and scope and scope[-1][1] == words[1]:
            scope.pop()
            section_binders.pop()
            parameters.pop()
        elif keyword in _SECTION_BINDERS and section_binders:
            section_binders[-1].append(code)
        elif keyword in _CONTEXT_KEYWORDS:
            context.append(code)
        i += 1


def module_parameters(code: str) -> list[str]:
    """The names a ``Module F (X : T) (Y Z : U) <: S.`` sentence binds: X, Y, Z."""
    match = re.match(r"\s*Module\s+(?:(?:Import|Export|Type)\s+)?[A-Za-z_][\w']*", code)
    if match is None:
        return []
    names: list[str] = []
    rest = code[match.end() :]
    while True:
        rest = rest.lstrip()
        if not rest.startswith("("):
            return names
        depth, end = 0, 0
        while end < len(rest):
            depth += {"(": 1, ")": -1}.get(rest[end], 0)
            if depth == 0:
                break
            end += 1
        binder = rest[1:end].split(":", 1)[0]
        names += [
            n for n in re.findall(r"[A-Za-z_][\w']*", binder) if n not in ("Import", "Export")
        ]
        rest = rest[end + 1 :]


def functor_parameters(text: str) -> dict[str, frozenset[str]]:
    """For each lemma-like declaration (by qualified name), the module parameters in scope.

    Inside ``Module Make (O : OrderedType)``, ``Print Assumptions`` lists what a
    proof uses of ``O`` (``O.lt_trans``) as axioms. They are the functor's
    hypotheses, shared by every proof in it, not axioms a proof adds.
    """
    found: dict[str, frozenset[str]] = {}
    for proof in iter_proofs(split_sentences(text)):
        if proof.parameters:
            modules = [name for kind, name in proof.scope if kind == "module"]
            found[".".join([*modules, proof.name])] = frozenset(proof.parameters)
    return found


def scan_coq_text(path: Path, text: str) -> list[CoqHole]:
    """All holes in ``text`` (the content of ``path``)."""
    return [hole for hole, _ in _scan(path, text, "Admitted")]


def qed_proofs(path: Path, text: str) -> list[tuple[CoqHole, tuple[str, ...]]]:
    """Every finished (``Qed``) proof, as a hole to reopen, with its script.

    The script is the proof's sentences without the ``Proof ...`` opener and
    ``Qed.``; used to shorten proofs (``orch golf``).
    """
    return _scan(path, text, "Qed")


def lemma_ends(path: Path, text: str) -> dict[str, tuple[str, int]]:
    """Every lemma with a finished or admitted proof: qualified name -> (its name as
    written, the offset right after its proof)."""
    return {
        hole.goal.qualified_name: (hole.goal.name, hole.proof_end)
        for hole, _ in [*_scan(path, text, "Qed"), *_scan(path, text, "Admitted")]
    }


def _scan(path: Path, text: str, ending: str) -> list[tuple[CoqHole, tuple[str, ...]]]:
    holes: list[tuple[CoqHole, tuple[str, ...]]] = []
    for proof in iter_proofs(split_sentences(text)):
        if proof.ending != ending:
            continue
        if ending == "Qed":
            kind = HoleKind.PROVED
        else:
            kind = (
                HoleKind.ADMIT
                if any(_ADMIT.search(s.code) for s in proof.proof[:-1])
                else HoleKind.ADMITTED
            )
        holes.append(proof_hole(path, text, proof, kind))
    return holes


def proof_hole(
    path: Path, text: str, proof: DeclaredProof, kind: HoleKind
) -> tuple[CoqHole, tuple[str, ...]]:
    """``proof`` (of ``text``) as a hole of ``kind`` to open and patch, with its script
    (the sentences between the ``Proof ...`` opener and the ending)."""
    first = proof.proof[0]
    opener_kept = sentence_keyword(first.code) == "Proof"
    prefix_end = first.end if opener_kept else proof.statement.end
    statement_code = proof.statement.code
    declared = _declared_name(statement_code)
    after_name = declared[2] if declared else statement_code
    line_start = text.rfind("\n", 0, proof.statement.start) + 1
    indent = re.match(r"[ \t]*", text[line_start:]).group()  # type: ignore[union-attr]
    goal = Goal(
        file=path,
        line=text.count("\n", 0, proof.statement.start) + 1,
        name=proof.name,
        statement=statement_code,
        kind=kind,
        fingerprint=fingerprint_of(after_name, proof.context),
        language="coq",
        scope=proof.scope,
    )
    hole = CoqHole(
        goal=goal,
        prefix_end=prefix_end,
        statement_start=proof.statement.start,
        proof_start=first.start,
        proof_end=proof.proof[-1].end,
        proof_opener=first.code if opener_kept else "Proof.",
        indent=indent,
    )
    body = proof.proof[1:-1] if opener_kept else proof.proof[:-1]
    return hole, tuple(s.code for s in body)


def opened_module(code: str) -> tuple[str, bool] | None:
    """The module a ``Module`` sentence opens, and whether it is a module type.

    None for any other sentence and for an alias (``Module M := N.``); a ``:=``
    only in a constraint (``Module F (M : S) <: S with Module E := M.E.``)
    still opens a module, and so does ``Module Make(D:T).`` (no space before
    its parameter).
    """
    stripped = strip_modifiers(code)
    match = re.match(r"\s*Module\s+(?:(Import|Export|Type)\s+)?([A-Za-z_][\w']*)", stripped)
    if match is None or ":=" in stripped.split(" with ")[0]:
        return None
    return match.group(2), match.group(1) == "Type"


def axiom_names(code: str) -> list[str]:
    """The names one axiom sentence declares (``Axioms a b : T.``,
    ``Parameter (x y : T) (z : U).``); empty for any other sentence."""
    stripped = strip_modifiers(code)
    if sentence_keyword(stripped) not in _AXIOM_KEYWORDS:
        return []
    rest = [*stripped.split(None, 1), ""][1]
    if rest.lstrip().startswith("("):  # binders: (x y : T) (z : U)
        heads = re.findall(r"\(\s*([^():]*?)\s*:", rest)
    else:
        heads = [rest.split(":", 1)[0]]
    return [name for head in heads for name in re.findall(r"[A-Za-z_][\w']*", head)]


def declared_axioms(text: str) -> frozenset[str]:
    """Short names of the axioms/parameters a file declares itself."""
    return frozenset(n for sentence in split_sentences(text) for n in axiom_names(sentence.code))


def module_axioms(text: str) -> frozenset[str]:
    """The axioms ``text`` declares outside module types, qualified by the modules
    they sit in (``M.ax``; sections do not qualify): what a library file trusts.

    A ``Parameter`` of a ``Module Type`` is a field of a signature, no axiom.
    """
    names: set[str] = set()
    #: open scopes: (name, qualifies names, is a module type)
    scopes: list[tuple[str, bool, bool]] = []
    for sentence in split_sentences(text):
        code = sentence.code
        keyword = sentence_keyword(strip_modifiers(code))
        words = code.rstrip(".").split()
        if keyword == "Module" and (opened := opened_module(code)) is not None:
            scopes.append((opened[0], True, opened[1]))
        elif keyword == "Section" and len(words) >= 2:
            scopes.append((words[1], False, False))
        elif keyword == "End" and len(words) >= 2 and scopes and scopes[-1][0] == words[1]:
            scopes.pop()
        elif not any(module_type for _, _, module_type in scopes):
            path = [name for name, qualifies, _ in scopes if qualifies]
            names.update(".".join([*path, n]) for n in axiom_names(code))
    return frozenset(names)


def scan_coq_file(path: Path) -> list[CoqHole]:
    return scan_coq_text(path, path.read_text(encoding="utf-8"))


def admit_proofs(text: str) -> tuple[str, list[str]]:
    """Replace every ``Qed`` proof of a lemma-like declaration by ``Admitted.``.

    Used to build re-proving benchmarks from real files. ``Defined`` proofs are
    kept (their bodies may be computed with). Returns the new text and the
    names whose proofs were hidden.
    """
    hidden: list[str] = []
    pieces: list[str] = []
    cursor = 0
    for proof in iter_proofs(split_sentences(text)):
        if proof.ending != "Qed":
            continue
        start = proof.proof[0].start
        pieces.append(text[cursor:start])
        pieces.append("Admitted.")
        cursor = proof.proof[-1].end
        hidden.append(proof.name)
    pieces.append(text[cursor:])
    return "".join(pieces), hidden
