"""Which of a file's holes each checked proof rests on, read from printed terms.

``Print Assumptions`` answers the question for one lemma by walking everything
the lemma depends on, the libraries included: 0.4 CPU s for a lemma about the
reals, whose construction it walks each time. A check that asked it for each
proof of a batch cost ten times one compile of the file. Only the union of
the batch is walked now (once), and when that union shows holes of the file
still ``Admitted``, which proof leads to which is read from the proofs' own
terms, printed by the same compile (``Set Printing All``: no notation hides
a constant) at no measurable cost.

Only the file's own constants can lead to one of its holes (a library was
compiled before the file), and of those only the ones declared after the
first hole still open. So the compile also lists the file's constants
(``Print Namespace``) twice: at the end, and right before the first open
hole. A constant in the first list is clean. From a proof, the walk follows
every identifier of its printed term (type and body) that can name one of
the file's constants declared later; a hole reached is a hole used.

The reading gives up on a proof (it is then asked with ``Print
Assumptions`` on its own) when the walk reaches a constant of the file that
was not printed (an unnamed instance, an eliminator), or one printed without a
body; and for a proof that ends after a type family, a sealed, applied or
included module, ``Function`` or a plugin's command declared after the first
open hole (a constructor's type is never printed with the terms that use it;
a sealed module hides its members). A section's constants are printed again
after the section closes, where the types of the section variables they use
and the ``Let``s they unfold show. Reading an identifier as a constant it
cannot name is harmless: it can only make a proof look like it uses a hole,
never the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .holes import LEMMA_KEYWORDS, module_parameters, opened_module, strip_modifiers
from .syntax import Sentence, sentence_keyword, split_sentences, split_top_level

__all__ = [
    "Attribution",
    "Declaration",
    "attribute_holes",
    "declarations",
    "declares_type_family",
    "namespace_entries",
    "read_uses",
    "stray_families",
]

#: sentences that declare a constant with a body (a lemma's comes at its proof's end)
_DEFINING = LEMMA_KEYWORDS | {"Definition", "Fixpoint", "CoFixpoint", "Instance"}
#: a ``Program`` declaration (its obligations may be solved sentences later)
_PROGRAM = re.compile(r"^(?:#\[[^\]]*\]\s*|[A-Z][a-z]+\s+)*?Program\b|^#\[[^\]]*\bprogram\b")
#: the sentences that end a proof with a constant made (``Admitted`` makes an axiom)
_MADE = frozenset({"Qed", "Defined", "Save"})
_ENDERS = _MADE | {"Admitted", "Abort"}

#: an identifier, qualified or not, as Coq prints it
_IDENTIFIER = re.compile(r"(?<![\w'.])[^\W\d][\w']*(?:\.[^\W\d][\w']*)*")
#: a ``Print Namespace`` entry: ``name:`` at the start of a line, its type after it
#: or on the lines below, indented
_ENTRY = re.compile(r"^([^\s:]+):(?=[ \t]|$)", re.M)
#: sentences that declare what a printed term never shows: an inductive family's
#: constructors (their types; ``Function`` and the plugins make such families too),
#: or the members of an applied or included module
_TYPE_FAMILY = re.compile(
    r"^(?:#\[[^\]]*\]\s*)*(?:(?:Local|Global|Polymorphic|Monomorphic|Cumulative|NonCumulative|"
    r"Private|Unset|Set|Program)\s+)*"
    r"(?:(?:Co)?Inductive|Variant|Record|Structure|Class|Include|Declare\s+Module|Function|"
    r"Functional|Equations|Derive|Elpi|HB\.)"
    r"|^(?:#\[[^\]]*\]\s*)*Module\s+(?!Type\b)(?:Import\s+|Export\s+)?[\w']+.*?:=",
    re.S,
)
#: a module's signature given with ``:`` (sealed: outside it, its lemmas print without
#: their proofs, and its other members are not listed at all)
_SEALED = re.compile(r"(?<![<:])\s:(?![=>])")
#: the eliminators an inductive family gets: one the scan did not see was declared
_SCHEME = re.compile(r"_(?:ind|rect|rec|sind)$")


def namespace_entries(output: str) -> frozenset[str]:
    """The constants a ``Print Namespace`` output lists, named from the namespace (the
    first line is the namespace's own, ``OrchCheck.stem:``)."""
    body = output.lstrip().partition("\n")[2]
    return frozenset(_ENTRY.findall(body))


def declares_type_family(sentence: Sentence) -> bool:
    """Whether ``sentence`` declares an inductive family, a module by application or
    inclusion, or a sealed module (what :func:`attribute_holes` cannot follow)."""
    code = sentence.code.lstrip()
    return _TYPE_FAMILY.match(code) is not None or _seals(code)


def _seals(code: str) -> bool:
    """Whether ``code`` opens a module sealed by a signature (``Module M : S.``)."""
    opened = opened_module(code)
    if opened is None or opened[1]:
        return False
    depth, outside = 0, []
    for char in code:
        depth += {"(": 1, ")": -1}.get(char, 0)
        outside.append(char if depth == 0 and char not in "()" else " ")
    return _SEALED.search("".join(outside)) is not None


def stray_families(
    entries: frozenset[str], known: frozenset[str], families: Sequence[Sentence]
) -> bool:
    """Whether ``entries`` (the file's constants) hold an eliminator of an inductive
    family that is neither among ``known`` (the constants declared before the first
    open hole, or seen by the scan) nor named in ``families`` (the sentences
    :func:`declares_type_family` saw): one declared by a command the scan does not
    know."""
    words = {word for sentence in families for word in re.findall(r"[\w']+", sentence.code)}
    return any(
        _SCHEME.search(entry) and _SCHEME.sub("", entry.rsplit(".", 1)[-1]) not in words
        for entry in entries - known
    )


@dataclass(frozen=True, slots=True)
class Declaration:
    """A constant the text declares with a body, outside functors and module types."""

    #: its name as written, which names it right after its declaration
    name: str
    #: its name from the top of the file (modules qualify it, sections do not)
    qualified: str
    #: the offset right after the sentence that makes it (the proof's end, for a lemma)
    end: int
    #: inside a section: printed again at the end of the file, where it is abstracted
    #: over the section's variables it uses (their types are only printed there) and
    #: the section's ``Let``s are unfolded in it
    in_section: bool = False


def declarations(sentences: Sequence[Sentence]) -> list[Declaration]:
    """The constants with a body declared by ``sentences`` (a whole file), in order:
    lemmas and definitions (``Definition``, ``Fixpoint`` (its first name),
    ``Instance``...), whether given by ``:=`` or by a proof ended with ``Qed`` or
    ``Defined``. A functor's or module type's are left out: they are named only
    in the functor's applications."""
    found: list[Declaration] = []
    modules: list[tuple[str, bool]] = []  # (name, whether it binds parameters or is a type)
    scopes: list[str] = []  # what each open Section/Module is, to close the right one
    i = 0
    while i < len(sentences):
        code = sentences[i].code
        stripped = strip_modifiers(code)
        keyword = sentence_keyword(stripped)
        words = code.rstrip(".").split()
        made_names, given = _declared(stripped, keyword)
        if _PROGRAM.match(code):
            made_names = []  # made once its obligations are solved, wherever that is
        if made_names:
            j = i
            if not given:
                j = i + 1
                while j < len(sentences) and sentence_keyword(sentences[j].code) not in _ENDERS:
                    j += 1
                if j >= len(sentences):
                    break
            made = given or sentence_keyword(sentences[j].code) in _MADE
            if made and not any(hidden for _, hidden in modules):
                for name in made_names:
                    qualified = ".".join([*(m for m, _ in modules), name])
                    in_section = "section" in scopes
                    found.append(Declaration(name, qualified, sentences[j].end, in_section))
            i = j + 1
            continue
        if keyword == "Section" and len(words) >= 2:
            scopes.append("section")
        elif keyword == "Module" and (opened := opened_module(code)) is not None:
            scopes.append("module")
            modules.append((opened[0], opened[1] or bool(module_parameters(code))))
        elif keyword == "End" and scopes and scopes.pop() == "module" and modules:
            modules.pop()
        i += 1
    return found


def _gives_body(code: str) -> bool:
    """Whether a declaration gives its body with a ``:=`` of its own (not a named
    argument's, ``(D:=D)``)."""
    return len(split_top_level(code, ":=")) > 1


def _declared(stripped: str, keyword: str) -> tuple[list[str], bool]:
    """The constants a sentence (modifiers stripped) declares with a body, and whether
    the body is given in it (``:=``) rather than by a proof after it."""
    name = r"([A-Za-z_][\w']*)"
    if keyword in _DEFINING:
        match = re.match(rf"[A-Za-z_][\w']*\s+{name}", stripped)
        given = _gives_body(stripped) and keyword not in LEMMA_KEYWORDS
        return ([match.group(1)] if match else []), given
    if keyword == "Canonical" and _gives_body(stripped):
        match = re.match(rf"Canonical\s+(?:Structure\s+)?{name}", stripped)
        return ([match.group(1)] if match else []), True
    morphism = re.search(rf"\bMorphism\b.*\bas\s+{name}\s*\.?\s*$", stripped, re.S)
    if keyword == "Add" and (found := morphism):
        # the morphism's lemma, and the instance made of it
        return [found.group(1), f"{found.group(1)}_Proper"], False
    relation = re.search(rf"\bRelation\b.*\bas\s+{name}\s*\.?\s*$", stripped, re.S)
    if keyword == "Add" and (found := relation):
        return _relation_instances(found.group(1), stripped), True
    return [], False


def _relation_instances(name: str, code: str) -> list[str]:
    """The instances ``Add (Parametric) Relation ... as name`` makes (Coq 8.16): one per
    property proved, the ``RewriteRelation``, and the ``PreOrder``/``PER``/
    ``Equivalence`` named ``name`` when transitivity comes with one of the others. A
    proof that rewrites with the relation uses them; left unprinted, its term could
    not be read and the check cost a second compile."""
    proved = {
        kind: re.search(rf"\b{kind}\s+proved\s+by\b", code) is not None
        for kind in ("reflexivity", "symmetry", "transitivity")
    }
    made = [
        f"{name}_{suffix}"
        for kind, suffix in (
            ("reflexivity", "Reflexive"),
            ("symmetry", "Symmetric"),
            ("transitivity", "Transitive"),
        )
        if proved[kind]
    ]
    if proved["transitivity"] and (proved["reflexivity"] or proved["symmetry"]):
        made.append(name)
    return [*made, f"{name}_relation"]


@dataclass(frozen=True, slots=True)
class Attribution:
    """Per proof read, the holes its term reaches; and the proofs that could not be read."""

    uses: dict[str, frozenset[str]]
    unresolved: frozenset[str]


class _Constants:
    """The file's constants by their last component, to read an identifier as them."""

    def __init__(self, entries: Iterable[str], root: Sequence[str]) -> None:
        self._by_base: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for entry in entries:
            parts = (*root, *entry.split("."))
            self._by_base.setdefault(parts[-1], []).append((entry, parts))

    def named(self, identifier: str) -> list[str]:
        """Every constant ``identifier`` can name: a suffix of its full path."""
        parts = tuple(identifier.split("."))
        return [
            entry
            for entry, full in self._by_base.get(parts[-1], ())
            if full[len(full) - len(parts) :] == parts
        ]


def attribute_holes(
    proofs: Sequence[str],
    printed: Mapping[str, str],
    entries: frozenset[str],
    clean: frozenset[str],
    holes: frozenset[str],
    root: Sequence[str],
) -> Attribution:
    """Which of ``holes`` each of ``proofs`` reaches (all names relative to the file).

    ``printed``: ``Print`` output per constant printed; ``entries``: every
    constant of the file; ``clean``: those declared before the first open hole;
    ``root``: the file's module path (``("OrchCheck", "stem")``).
    """
    constants = _Constants(entries, root)
    uses: dict[str, frozenset[str]] = {}
    unresolved: set[str] = set()
    for proof in proofs:
        if proof in clean:
            uses[proof] = frozenset()
            continue
        found = _reach(proof, printed, constants, clean, holes)
        if found is None:
            unresolved.add(proof)
        else:
            uses[proof] = found
    return Attribution(uses, frozenset(unresolved))


def _reach(
    start: str,
    printed: Mapping[str, str],
    constants: _Constants,
    clean: frozenset[str],
    holes: frozenset[str],
) -> frozenset[str] | None:
    """The holes ``start``'s printed term reaches, or None when it cannot be read."""
    used: set[str] = set()
    seen = {start}
    stack = [start]
    while stack:
        name = stack.pop()
        text = printed.get(name)
        if text is None or not text.strip() or text.lstrip().startswith("*** ["):
            return None  # not printed, or printed without its body
        for identifier in set(_IDENTIFIER.findall(text)):
            for constant in constants.named(identifier):
                if constant in holes:
                    used.add(constant)
                elif constant not in seen and constant not in clean:
                    seen.add(constant)
                    stack.append(constant)
    return frozenset(used)


def read_uses(
    text: str,
    proofs: Sequence[str],
    lemma_ends: Mapping[str, int],
    printed: Mapping[str, str],
    namespace: frozenset[str],
    namespace_before: frozenset[str],
    before: int,
    holes: frozenset[str],
    root: Sequence[str],
) -> dict[str, frozenset[str]]:
    """Per proof of ``proofs`` that can be read, the ``holes`` it uses (the module
    docstring): from what a check printed of ``text``, whose first open hole's
    statement starts at ``before``. ``lemma_ends``: where each lemma's proof ends.

    What the text declares counts as the file's constants too (a constant missed by
    the listing would be a hole missed), and never as declared before the first open
    hole when it comes after it. Proofs that end after a type family declared after
    that hole are not read, nor any proof after it when an eliminator shows a family
    the scan did not see.
    """
    sentences = split_sentences(text)
    declared = {d.qualified: d.end for d in declarations(sentences)}
    declared.update(lemma_ends)
    later = {name for name, end in declared.items() if end > before} | holes
    clean = namespace_before - later
    families = [sentence for sentence in sentences if declares_type_family(sentence)]
    first_family = next((s.start for s in families if s.start >= before), None)
    if stray_families(namespace, frozenset(clean | set(declared)), families):
        proofs = [name for name in proofs if name in clean]
    elif first_family is not None:
        proofs = [
            name
            for name in proofs
            if name in clean or declared.get(name, first_family) < first_family
        ]
    found = attribute_holes(proofs, printed, namespace | set(declared) | holes, clean, holes, root)
    return found.uses
