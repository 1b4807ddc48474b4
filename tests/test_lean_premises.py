"""Premise retrieval for Lean over a realistic source tree: a Lake project with packages
under `.lake/packages`, a toolchain's core sources, and imports between them."""

from __future__ import annotations

from pathlib import Path

import pytest

from proof_orchestrator.lean.display import LEAN
from proof_orchestrator.lean.holes import scan_lean_text
from proof_orchestrator.lean.strategies.premises import (
    LeanPremiseIndexes,
    blank_comments,
    header_imports,
    import_closure,
    lean_declarations,
    library_declarations,
    source_roots,
    toolchain_sources,
)
from proof_orchestrator.lean.strategies.search import premise_steps
from proof_orchestrator.search.premises import PremiseIndex

TOOLCHAIN = "leanprover/lean4:v4.9.0"

TREE = {
    # core, as elan installs it
    "elan/toolchains/leanprover--lean4---v4.9.0/src/lean/Init/Core.lean": """\
prelude
namespace Nat
theorem core_succ_ne_zero (n : Nat) : succ n ≠ 0 := fun h => Nat.noConfusion h
end Nat
""",
    "elan/toolchains/leanprover--lean4---v4.9.0/src/lean/Init/Unused.lean": """\
theorem core_never_imported : True := trivial
""",
    # a package: Mathlib-like modules, one importing another
    "proj/.lake/packages/mathlib/Mathlib/Algebra/Group/Defs.lean": """\
import Init.Core

namespace Mathlib
theorem mul_comm_of_group (a b : Nat) : a * b = b * a := Nat.mul_comm a b
private theorem group_private_helper : True := trivial
end Mathlib
""",
    "proj/.lake/packages/mathlib/Mathlib/Data/List/Reverse.lean": """\
import Mathlib.Algebra.Group.Defs

/-- reversing twice -/
@[simp] theorem List.reverse_reverse_twice (l : List α) : l.reverse.reverse = l := by simp
lemma List.length_reverse_eq (l : List α) : l.reverse.length = l.length := by simp
""",
    "proj/.lake/packages/mathlib/Mathlib/Data/Unrelated.lean": """\
theorem unrelated_not_imported (l : List α) : l.reverse.reverse = l := by simp
""",
    # the project
    "proj/lakefile.lean": "import Lake\nopen Lake DSL\npackage proj\nlean_lib Proj\n",
    "proj/lean-toolchain": TOOLCHAIN + "\n",
    "proj/Proj/Basic.lean": """\
import Mathlib.Data.List.Reverse

theorem Proj.reverse_append_basic (l m : List α) :
    (l ++ m).reverse = m.reverse ++ l.reverse := by simp
""",
    "proj/Proj/Main.lean": """\
import Proj.Basic

namespace Proj

def double (n : Nat) : Nat := 2 * n

theorem double_reverse_before (l : List Nat) : l.reverse.reverse.length = l.length := by simp

theorem under_proof (l : List Nat) : l.reverse.reverse = l := by
  sorry

theorem reverse_after_hole (l : List Nat) : l.reverse.reverse = l := by simp

end Proj
""",
}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in TREE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    return tmp_path / "proj"


def test_modules_resolve_in_the_project_its_packages_and_the_toolchain(tree: Path) -> None:
    roots = source_roots(tree, TOOLCHAIN)
    assert roots[0] == tree
    assert toolchain_sources(TOOLCHAIN) == roots[-1]
    closure = import_closure(["Proj.Basic"], roots)
    assert [m for m, _ in closure] == [
        "Proj.Basic",
        "Mathlib.Data.List.Reverse",
        "Mathlib.Algebra.Group.Defs",
        "Init.Core",
    ]
    assert header_imports((tree / "Proj/Main.lean").read_text(encoding="utf-8")) == ["Proj.Basic"]


def test_retrieval_offers_only_what_precedes_the_hole(tree: Path) -> None:
    path = tree / "Proj/Main.lean"
    text = path.read_text(encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    index = LeanPremiseIndexes().build(tree, TOOLCHAIN, text, hole.decl_start)
    names = {p.name for p in index.premises}
    assert names == {
        "Proj.double",
        "Proj.double_reverse_before",
        "Proj.reverse_append_basic",
        "List.reverse_reverse_twice",
        "List.length_reverse_eq",
        "Mathlib.mul_comm_of_group",
        "Nat.core_succ_ne_zero",
    }
    # never the lemma under proof, nothing after it, no module outside the import closure,
    # no private declaration of another module
    ranked = index.rank("l.reverse.reverse = l", k=len(names))
    assert {p.name for p in ranked} == names
    assert ranked[0].name == "List.reverse_reverse_twice"
    own = {p.name: p for p in index.premises if not p.module}
    assert own["Proj.double"].kind == "def"
    assert own["Proj.double_reverse_before"].statement == (
        "(l : List Nat) : l.reverse.reverse.length = l.length"
    )


async def test_indexes_are_cached_per_position(tree: Path) -> None:
    path = tree / "Proj/Main.lean"
    text = path.read_text(encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    indexes = LeanPremiseIndexes()
    first = await indexes.index_at(tree, TOOLCHAIN, text, hole.decl_start)
    again = await indexes.index_at(tree, TOOLCHAIN, text, hole.decl_start)
    assert again is first
    assert (indexes.built, indexes.reused) == (1, 1)
    earlier = await indexes.index_at(tree, TOOLCHAIN, text, text.index("theorem double_reverse"))
    assert "Proj.double_reverse_before" not in {p.name for p in earlier.premises}


def test_premise_templates() -> None:
    index = PremiseIndex(
        lean_declarations(
            "def twice (n : Nat) : Nat := n + n\n"
            "theorem twice_eq (n : Nat) : twice n = 2 * n := by omega\n"
        ),
        syntax=LEAN,
    )
    steps = premise_steps(index, "twice n = 2 * n", exclude=[])
    assert set(steps) == {
        "rw [twice_eq]",
        "exact twice_eq",
        "apply twice_eq",
        "rw [← twice_eq]",
        "simp [twice]",
        "unfold twice",
        f"simp [{index.rank('twice n = 2 * n', 2)[0].name}, "
        f"{index.rank('twice n = 2 * n', 2)[1].name}]",
    }
    assert premise_steps(index, "twice n = 2 * n", exclude=["twice_eq"]) == [
        "simp [twice]",
        "unfold twice",
    ]


TRICKY = """\
import Foo
/-! module doc
theorem in_module_doc : True := trivial
-/
namespace X
/-- doc -- not a line comment
theorem in_doc : True := trivial -/
@[simp] theorem Foo.bar (a b : Nat) (h : a ≤ b) : a + 0 ≤ b + 0 := by
  simp [Nat.add_zero] -- theorem not_this : x
  exact h
private lemma hidden : True := trivial
protected lemma qux {α : Type*} (l : List α) :
    l.reverse.reverse = l := List.reverse_reverse l
/- nested /- comment -/ still
theorem in_comment : 1 = 1 := rfl -/
noncomputable section
def f : Nat → Nat
  | 0 => 1
  | n + 1 => n
end
end X
theorem _root_.top : True := trivial
"""


def test_the_line_scan_of_library_modules_reads_what_the_lexer_reads(tree: Path) -> None:
    sources = [TRICKY, *(p.read_text(encoding="utf-8") for p in tree.parent.rglob("*.lean"))]
    for text in sources:
        assert library_declarations(text, "M") == lean_declarations(text, "M", private=False)
    assert [p.name for p in library_declarations(TRICKY, "M")] == [
        "X.Foo.bar",
        "X.qux",
        "X.f",
        "top",
    ]
    blanked = blank_comments(TRICKY)
    assert blanked.count("\n") == TRICKY.count("\n")
    assert "in_comment" not in blanked
    assert "in_doc" not in blanked
