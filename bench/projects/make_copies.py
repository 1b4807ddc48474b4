"""Make a multi-file Coq library into a project as its authors keep it, with seeded holes.

usage: python bench/projects/make_copies.py LIB DEST [--seed 0] [--files 3] [--holes 3]
                                               [--max-sentences 4]

LIB is a library installed under Coq's user-contrib (Debian ships RegLang,
RelationAlgebra and Coquelicot there with their sources). DEST (a new folder)
gets

* ``theories/`` with the library's ``.v`` files only (nothing compiled),
* ``_CoqProject``: ``-R theories LIB`` and the files in ``coqdep`` order,
* a git repository with one commit ("as published") and a second commit
  ("holes") with the seeded holes, so ``git diff HEAD~1`` shows them.

The logical name stays LIB, the installed library's own: a ``-R`` binding
given on the command line comes before user-contrib on Coq's load path, so
``Require LIB.x`` loads the copy's ``.vo`` (checked at the end: the copy's
first file is compiled into a scratch folder and ``Locate Library`` must name
that folder, not user-contrib; the script fails otherwise).

The holes, by a fixed rule: the ``--files`` files with the most project files
beneath them (transitively imported; ties by name) get holes; in each, among
the ``Qed`` proofs of at most ``--max-sentences`` sentences (``Proof.`` and
``Qed.`` included), ``--holes`` are drawn with ``random.Random(f"{seed}:{file}")``
and replaced by ``Admitted.``. A file with fewer short proofs gets them all.
The chosen lemmas are printed and written to DEST/holes.json.
"""

from __future__ import annotations

import argparse
import graphlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from proof_orchestrator.coq.build import parse_coqdep
from proof_orchestrator.coq.holes import iter_proofs
from proof_orchestrator.coq.syntax import split_sentences

USER_CONTRIB = Path("/usr/lib/ocaml/coq/user-contrib")


def _git(dest: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=orch bench", "-c", "user.email=bench@orch.invalid", *args],
        cwd=dest,
        check=True,
        capture_output=True,
    )


def dependency_order(dest: Path, lib: str) -> tuple[list[Path], dict[Path, set[Path]]]:
    """The copy's files in ``coqdep`` order (a file after those it requires), and the graph."""
    sources = sorted(p.resolve() for p in (dest / "theories").rglob("*.v"))
    run = subprocess.run(
        ["coqdep", "-R", str(dest / "theories"), lib, *map(str, sources)],
        cwd=dest,
        capture_output=True,
        text=True,
        check=True,
    )
    parsed = parse_coqdep(run.stdout)
    graph = {s: {d for d in parsed.get(s, set()) if d in sources and d != s} for s in sources}
    return list(graphlib.TopologicalSorter(graph).static_order()), graph


def below(path: Path, graph: dict[Path, set[Path]]) -> int:
    seen: set[Path] = set()
    stack = list(graph.get(path, set()))
    while stack:
        dep = stack.pop()
        if dep not in seen:
            seen.add(dep)
            stack.extend(graph.get(dep, set()))
    return len(seen)


def seed_holes(
    text: str, wanted: int, rng: random.Random, max_sentences: int
) -> tuple[str, list[str]]:
    proofs = [
        p
        for p in iter_proofs(split_sentences(text))
        if p.ending == "Qed" and len(p.proof) <= max_sentences
    ]
    chosen = sorted(rng.sample(proofs, min(wanted, len(proofs))), key=lambda p: p.proof[0].start)
    pieces: list[str] = []
    cursor = 0
    for proof in chosen:
        pieces += [text[cursor : proof.proof[0].start], "Admitted."]
        cursor = proof.proof[-1].end
    pieces.append(text[cursor:])
    return "".join(pieces), [p.name for p in chosen]


def check_binding(dest: Path, lib: str, first: Path) -> str:
    """Compile ``first`` into a scratch mirror and ask Coq where ``lib.<first>`` loads from."""
    module = f"{lib}." + ".".join(first.relative_to(dest / "theories").with_suffix("").parts)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / first.relative_to(dest / "theories").with_suffix(".vo")
        out.parent.mkdir(parents=True, exist_ok=True)
        flags = ["-R", "theories", lib, "-R", scratch, lib]
        subprocess.run(
            ["coqc", *flags, "-o", str(out), str(first.relative_to(dest))], cwd=dest, check=True
        )
        probe = Path(scratch) / "probe.v"
        probe.write_text(f"Require {module}.\nLocate Library {module}.\n", encoding="utf-8")
        run = subprocess.run(
            ["coqtop", *flags, "-batch", "-l", str(probe)], cwd=dest, capture_output=True, text=True
        )
        where = run.stdout + run.stderr
        if scratch not in where:
            sys.exit(f"{module} does not load from the copy: {where.strip()}")
        return f"{module} loads from the copy's build, not from {USER_CONTRIB / lib}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lib", help="RegLang, RelationAlgebra, Coquelicot, ...")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--holes", type=int, default=3)
    parser.add_argument("--max-sentences", type=int, default=4)
    args = parser.parse_args()
    source = USER_CONTRIB / args.lib
    if not source.is_dir():
        sys.exit(f"{source} is not there (apt-get install the library's Debian package)")
    dest: Path = args.dest.resolve()
    if dest.exists():
        sys.exit(f"{dest} exists: give a new folder")
    theories = dest / "theories"
    for path in sorted(source.rglob("*.v")):
        target = theories / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    order, graph = dependency_order(dest, args.lib)
    listing = "\n".join(str(p.relative_to(dest)) for p in order)
    (dest / "_CoqProject").write_text(f"-R theories {args.lib}\n\n{listing}\n", encoding="utf-8")
    (dest / ".gitignore").write_text("*.vo\n*.vok\n*.vos\n*.glob\n.*.aux\n", encoding="utf-8")
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"{args.lib} as published")
    ranked = sorted(order, key=lambda p: (-below(p, graph), str(p)))
    holes: dict[str, list[str]] = {}
    for path in ranked:
        if len(holes) == args.files:
            break
        relative = str(path.relative_to(dest))
        rng = random.Random(f"{args.seed}:{relative}")
        text, names = seed_holes(
            path.read_text(encoding="utf-8"), args.holes, rng, args.max_sentences
        )
        if names:
            path.write_text(text, encoding="utf-8")
            holes[relative] = names
    if len(holes) < min(args.files, 3):
        sys.exit(f"only {len(holes)} file(s) have short Qed proofs to hide")
    (dest / "holes.json").write_text(json.dumps(holes, indent=1) + "\n", encoding="utf-8")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"holes: seed {args.seed}")
    print(check_binding(dest, args.lib, order[0]))
    for file, names in holes.items():
        print(f"{file}: {', '.join(names)}")
    print(
        f"{sum(map(len, holes.values()))} holes in {len(holes)} files; {len(order)} files in {dest}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
