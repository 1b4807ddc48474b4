"""Keeping a leanblueprint ``content.tex`` honest, and reading its dependency graph.

leanblueprint conventions: a statement environment (``theorem``, ``lemma``,
``definition``, ...) names its Lean declarations with ``\\lean{A, B}``, its
label with ``\\label{...}`` and what it depends on with ``\\uses{...}``;
``\\leanok`` in the statement means "formalised" (the declarations exist), and
``\\leanok`` in the ``proof`` environment that follows means "proved" (none of
them contains ``sorry``).

``sync`` adds and removes exactly those ``\\leanok`` macros and changes no other
byte of the file. A proof without ``sorry`` may still rest on other holes (a
lemma that has one): the ledger knows which (``Ledger.modulo_holes``), and
``sync`` counts those nodes apart, *closed modulo holes*, and says so beside
their change; their ``\\leanok`` stays (leanblueprint's graph shows what they
wait for). ``critical_path_weights`` turns the ``\\uses`` graph into a
priority per Lean declaration: the number of blueprint nodes that depend on it,
directly or not, so that goals many others wait for go first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..backends import backend_named
from ..errors import ProjectError

__all__ = [
    "BlueprintNode",
    "Coverage",
    "LeanDeclarations",
    "critical_path_weights",
    "parse_blueprint",
    "scan_declarations",
    "sync",
]

#: environments whose statement can carry \lean and \leanok
STATEMENT_ENVIRONMENTS = (
    "theorem",
    "lemma",
    "proposition",
    "corollary",
    "definition",
    "claim",
    "conjecture",
    "example",
    "remark",
)
_BEGIN = re.compile(
    r"\\begin\{(?P<env>" + "|".join(STATEMENT_ENVIRONMENTS) + r"|proof)\}(?P<opt>\[[^\]]*\])?"
)
_COMMENT = re.compile(r"(?<!\\)%.*")
_LEANOK = re.compile(r"\\leanok\b")


@dataclass(slots=True)
class BlueprintNode:
    env: str
    label: str
    lean: tuple[str, ...]
    uses: tuple[str, ...]
    #: offsets of the environment's body (after ``\begin{env}[...]``) and its end
    start: int
    end: int
    leanok: bool
    #: the proof environment right after the statement, if any
    proof: BlueprintNode | None = None
    #: a blueprint node in a proof: what the proof uses
    proof_uses: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Coverage:
    total: int
    stated: int
    proved: int
    #: of the proved: those whose declarations rest on holes still open
    modulo_holes: int = 0

    @property
    def closed(self) -> int:
        return self.proved - self.modulo_holes


@dataclass(frozen=True, slots=True)
class LeanDeclarations:
    """Declarations of a Lean project: full name -> contains ``sorry``."""

    sorry: dict[str, bool]

    def exists(self, name: str) -> bool:
        return name in self.sorry

    def proved(self, name: str) -> bool:
        return name in self.sorry and not self.sorry[name]


def _blank_comments(text: str) -> str:
    """``text`` with LaTeX comments replaced by spaces (offsets stay the same)."""
    return _COMMENT.sub(lambda m: " " * len(m.group()), text)


def _arguments(body: str, macro: str) -> tuple[str, ...]:
    found: list[str] = []
    for match in re.finditer(r"\\" + macro + r"\{([^}]*)\}", body):
        found.extend(part.strip() for part in match.group(1).split(",") if part.strip())
    return tuple(found)


def parse_blueprint(text: str) -> list[BlueprintNode]:
    """The statement environments of ``text``, each with the proof that follows it."""
    plain = _blank_comments(text)
    nodes: list[BlueprintNode] = []
    for match in _BEGIN.finditer(plain):
        env = match.group("env")
        end = plain.find(f"\\end{{{env}}}", match.end())
        if end < 0:
            raise ProjectError(f"\\begin{{{env}}} at offset {match.start()} is never closed")
        body = plain[match.end() : end]
        node = BlueprintNode(
            env=env,
            label=(_arguments(body, "label") or ("",))[0],
            lean=_arguments(body, "lean"),
            uses=_arguments(body, "uses"),
            start=match.end(),
            end=end,
            leanok=bool(re.search(r"\\leanok\b", body)),
        )
        if env == "proof":
            if nodes and nodes[-1].proof is None and nodes[-1].end < match.start():
                between = plain[nodes[-1].end : match.start()]
                if re.fullmatch(r"\\end\{\w+\}\s*", between):
                    nodes[-1].proof = node
                    nodes[-1].proof_uses = node.uses
            continue
        nodes.append(node)
    return nodes


def scan_declarations(paths: Iterable[Path]) -> LeanDeclarations:
    """Every declaration in the given ``.lean`` files, with whether it contains ``sorry``
    (an ``axiom`` counts as unproved)."""
    found = backend_named("lean").declarations(list(paths))
    if found is None:
        raise ProjectError("the Lean backend reads no declarations")
    return LeanDeclarations(found)


def _set_leanok(text: str, node: BlueprintNode, wanted: bool, after: int) -> tuple[str, int]:
    """Add or remove ``\\leanok`` in ``node``'s body; returns the text and the length change."""
    body = text[node.start : node.end]
    has = bool(re.search(r"\\leanok\b", _blank_comments(body)))
    if wanted == has:
        return text, 0
    if wanted:
        insert = after
        new = text[:insert] + "\\leanok" + text[insert:]
        return new, len("\\leanok")
    plain = _blank_comments(body)
    match = _LEANOK.search(plain)
    if match is None:
        return text, 0
    a, b = node.start + match.start(), node.start + match.end()
    line_start = text.rfind("\n", 0, a) + 1
    line_end = text.find("\n", b)
    line_end = len(text) if line_end < 0 else line_end
    if not text[line_start:a].strip() and not text[b:line_end].strip():
        # \leanok alone on its line: the whole line goes
        a, b = line_start, min(line_end + 1, len(text))
    return text[:a] + text[b:], -(b - a)


def _anchor(text: str, node: BlueprintNode) -> int:
    """Where a new ``\\leanok`` goes: after ``\\lean{...}``, else after ``\\label{...}``, else
    right after ``\\begin{env}``."""
    body = _blank_comments(text[node.start : node.end])
    for macro in ("lean", "label"):
        found = list(re.finditer(r"\\" + macro + r"\{[^}]*\}", body))
        if found:
            return node.start + found[-1].end()
    return node.start


def sync(
    text: str,
    declarations: LeanDeclarations,
    modulo: Mapping[str, Sequence[str]] | None = None,
) -> tuple[str, Coverage, list[str]]:
    """``text`` with ``\\leanok`` added where deserved and removed where stale.

    ``modulo``: declaration (full or short name) -> the holes still open its
    proof rests on (from the ledger). Returns the new text, the coverage and a
    line per change.
    """
    modulo = modulo or {}

    def resting(node: BlueprintNode) -> list[str]:
        found: list[str] = []
        for name in node.lean:
            found += modulo.get(name, modulo.get(name.rsplit(".", 1)[-1], ()))
        return sorted(set(found))

    changes: list[str] = []
    total = stated = proved = resting_on = 0
    # edit from the end so that earlier offsets stay valid
    nodes = parse_blueprint(text)
    for node in reversed(nodes):
        if not node.lean:
            continue
        is_stated = all(declarations.exists(n) for n in node.lean)
        is_proved = is_stated and all(declarations.proved(n) for n in node.lean)
        where = node.label or ", ".join(node.lean)
        if node.proof is not None:
            before = node.proof.leanok
            text, _ = _set_leanok(text, node.proof, is_proved, node.proof.start)
            if before != is_proved:
                note = f" (closed modulo {', '.join(resting(node))})" if resting(node) else ""
                changes.append(
                    f"{where}: proof \\leanok {'added' if is_proved else 'removed'}{note}"
                )
        # a definition has no proof environment: its \leanok means "done"
        wanted = is_stated if node.proof is not None or node.env != "definition" else is_proved
        before = node.leanok
        text, _ = _set_leanok(text, node, wanted, _anchor(text, node))
        if before != wanted:
            changes.append(f"{where}: statement \\leanok {'added' if wanted else 'removed'}")
    for node in nodes:
        if not node.lean:
            continue
        total += 1
        if all(declarations.exists(n) for n in node.lean):
            stated += 1
            if all(declarations.proved(n) for n in node.lean):
                proved += 1
                resting_on += bool(resting(node))
    return text, Coverage(total, stated, proved, resting_on), list(reversed(changes))


def critical_path_weights(text: str) -> dict[str, float]:
    """Lean declaration -> how many blueprint nodes depend on its node, directly or not."""
    nodes = parse_blueprint(text)
    by_label = {n.label: n for n in nodes if n.label}
    users: dict[str, set[str]] = {label: set() for label in by_label}
    for node in nodes:
        if not node.label:
            continue
        for used in {*node.uses, *node.proof_uses}:
            if used in users:
                users[used].add(node.label)
    weights: dict[str, float] = {}
    for label, node in by_label.items():
        seen: set[str] = set()
        stack = list(users[label])
        while stack:
            current = stack.pop()
            if current in seen or current == label:
                continue
            seen.add(current)
            stack.extend(users.get(current, ()))
        for name in node.lean:
            weights[name] = max(weights.get(name, 0.0), float(len(seen)))
    return weights
