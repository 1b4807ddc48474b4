"""Make a multi-file Coq library into a project as its authors keep it, with seeded holes.

usage: python bench/projects/make_copies.py LIB DEST [--seed 0] [--files 3] [--holes 3]
                                               [--max-sentences 4] [--min-holes 0]
                                               [--source DIR] [--layout coqproject|dune]
                                               [--dune-flags '...'] [--unseen]

LIB is a library installed under Coq's user-contrib (Debian ships RegLang,
RelationAlgebra and Coquelicot there with their sources), or, with ``--source
DIR``, any folder holding the library's ``.v`` tree (for a library that is *not*
installed: ``apt-get download libcoq-reglang && dpkg-deb -x libcoq-reglang_*.deb X``,
then ``--source X/usr/lib/ocaml/coq/user-contrib/RegLang``). DEST (a new folder)
gets

* ``theories/`` with the library's ``.v`` files only (nothing compiled),
* with ``--layout coqproject`` (the default): ``_CoqProject``: ``-R theories LIB``
  and the files in ``coqdep`` order;
  with ``--layout dune``: a ``dune-project`` (``(lang dune 2.9)``, ``(using coq
  0.3)``) and ``theories/dune`` with ``(coq.theory (name LIB) (flags ...))``
  (``--dune-flags``, added after ``:standard``), as a dune project keeps it;
* a git repository with one commit ("as published") and a second commit
  ("holes") with the seeded holes, so ``git diff HEAD~1`` shows them;
  with ``--unseen``, only the "holes" commit: the original proofs are nowhere in
  the copy (neither in its files nor in its git objects), for a library whose own
  proofs must stay unseen by the prover.

The logical name stays LIB, the installed library's own: a ``-R`` binding
given on the command line comes before user-contrib on Coq's load path, so
``Require LIB.x`` loads the copy's ``.vo`` (checked at the end: the copy's
first file is compiled into a scratch folder and ``Locate Library`` must name
that folder, not user-contrib; the script fails otherwise; trivially true for a
library that is not installed).

The holes, by a fixed rule: the files ranked by the number of project files
beneath them (transitively imported; ties by name); in each, among the ``Qed``
proofs of at most ``--max-sentences`` sentences (``Proof.`` and ``Qed.``
included), ``--holes`` are drawn with ``random.Random(f"{seed}:{file}")`` and
replaced by ``Admitted.`` (``Proof.`` to ``Qed.``). A file with fewer short proofs
gets them all; a file with none is passed over. Files are taken in rank order
until ``--files`` files have holes *and* there are at least ``--min-holes`` holes.

The holes are printed; DEST/holes.json lists their names by file (what
``peers.py`` reads). The record of each hole (its original proof text, the
number of sentences of the proof's body between ``Proof.`` and ``Qed.``, and
whether that is one sentence: ``Proof. by []. Qed.``, ``Proof. exact: foo. Qed.``,
or a lemma whose proof is one sentence and ``Qed.`` without ``Proof.``) goes to
DEST/holes-record.json, or, with ``--unseen``, to ``DEST.record.json`` beside the
copy (never inside it).

Issue 51's draws (fixed before any run; the same rule for every library):

    --seed 0 --files 5 --holes 6 --max-sentences 6 --min-holes 25 --unseen

that is, 6 holes in each of at least 5 files, more files in rank order until
there are at least 25 holes; extructures and RegLang with the default layout
(``_CoqProject``), Coquelicot with ``--layout dune``. The exact commands are in
``bench/projects/README-real-projects.md``.
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


def body_sentences(proof) -> int:
    """The sentences of a proof's body: between ``Proof.`` (if any) and ``Qed.``."""
    body = list(proof.proof[:-1])
    if body and body[0].code.split()[0].rstrip(".") == "Proof":
        body = body[1:]
    return len(body)


def seed_holes(
    text: str, wanted: int, rng: random.Random, max_sentences: int, refused: set[str] = frozenset()
) -> tuple[str, list[dict]]:
    proofs = [
        p
        for p in iter_proofs(split_sentences(text))
        if p.ending == "Qed" and len(p.proof) <= max_sentences and p.name not in refused
    ]
    chosen = sorted(rng.sample(proofs, min(wanted, len(proofs))), key=lambda p: p.proof[0].start)
    pieces: list[str] = []
    cursor = 0
    records = []
    for proof in chosen:
        pieces += [text[cursor : proof.proof[0].start], "Admitted."]
        cursor = proof.proof[-1].end
        body = body_sentences(proof)
        records.append(
            {
                "name": proof.name,
                "line": text.count("\n", 0, proof.statement.start) + 1,
                "sentences": body,
                "one_sentence": body == 1,
                "proof": text[proof.proof[0].start : proof.proof[-1].end],
                "span": [proof.proof[0].start, proof.proof[-1].end],
                "qualified": ".".join(v for k, v in proof.scope if k == "module")
                + "."
                + proof.name,
            }
        )
    pieces.append(text[cursor:])
    return "".join(pieces), records


class TypeCheck:
    """The library compiled once as published, in a scratch folder; a file's holes are
    kept when ``Check @lemma`` prints the same type with the hole as without it (an
    ``Admitted`` lemma in a section is generalized over every section variable, a ``Qed``
    one over those it uses, so a hole may change the lemma's type and break the files
    that use it)."""

    def __init__(self, dest: Path, lib: str, order: list[Path], scratch: Path) -> None:
        self.dest, self.lib, self.scratch = dest, lib, scratch
        self.published = scratch / "published"
        shutil.copytree(dest / "theories", self.published)
        for path in order:
            self._coqc(self.published, self.published / path.relative_to(dest / "theories"))

    def _coqc(self, root: Path, source: Path) -> None:
        subprocess.run(
            ["coqc", "-R", str(root), self.lib, str(source)],
            cwd=self.scratch,
            check=True,
            capture_output=True,
        )

    def _types(self, root: Path, module: str, names: list[str]) -> list[str]:
        """``Check @module.name`` for each name, one ``coqtop`` each (an error ends a batch)."""
        probe = self.scratch / "probe.v"
        types = []
        for name in names:
            probe.write_text(
                f"Require {module}.\nCheck @{module}.{name.lstrip('.')}.\n", encoding="utf-8"
            )
            run = subprocess.run(
                ["coqtop", "-R", str(root), self.lib, "-batch", "-l", str(probe)],
                cwd=self.scratch,
                capture_output=True,
                text=True,
            )
            types.append(run.stdout if run.returncode == 0 and run.stdout.strip() else "")
        return types

    def _holed(self, path: Path, text: str) -> Path | None:
        """The published build with ``path`` replaced by ``text`` and compiled (None if
        it does not compile)."""
        relative = path.relative_to(self.dest / "theories")
        holed = self.scratch / "holed"
        if holed.exists():
            shutil.rmtree(holed)
        shutil.copytree(self.published, holed)
        (holed / relative).write_text(text, encoding="utf-8")
        (holed / relative).with_suffix(".vo").unlink()
        try:
            self._coqc(holed, holed / relative)
        except subprocess.CalledProcessError:
            return None
        return holed

    def changed(self, path: Path, original: str, text: str, records: list[dict]) -> list[str]:
        """The holes of ``path`` (``original`` with holes is ``text``) that change a type,
        or, when the file does not compile with them all, those that break it alone."""
        relative = path.relative_to(self.dest / "theories")
        module = f"{self.lib}." + ".".join(relative.with_suffix("").parts)
        names = [r["qualified"] for r in records]
        holed = self._holed(path, text)
        if holed is None:
            broken = []
            for r in records:
                start, end = r["span"]
                if self._holed(path, original[:start] + "Admitted." + original[end:]) is None:
                    broken.append(r["name"])
            return broken or [r["name"] for r in records]
        after = self._types(holed, module, names)
        before = self._types(self.published, module, names)
        return [
            r["name"] for r, x, y in zip(records, before, after, strict=True) if not x or x != y
        ]


def check_binding(dest: Path, lib: str, first: Path) -> str:
    """Compile ``first`` into a scratch mirror and ask Coq where ``lib.<first>`` loads from."""
    module = f"{lib}." + ".".join(first.relative_to(dest / "theories").with_suffix("").parts)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / first.relative_to(dest / "theories").with_suffix(".vo")
        out.parent.mkdir(parents=True, exist_ok=True)
        # run in the scratch folder: nothing (``.lia.cache``, ``.glob``) lands in the copy
        flags = ["-R", str(dest / "theories"), lib, "-R", scratch, lib]
        subprocess.run(["coqc", *flags, "-o", str(out), str(first)], cwd=scratch, check=True)
        probe = Path(scratch) / "probe.v"
        probe.write_text(f"Require {module}.\nLocate Library {module}.\n", encoding="utf-8")
        run = subprocess.run(
            ["coqtop", *flags, "-batch", "-l", str(probe)],
            cwd=scratch,
            capture_output=True,
            text=True,
        )
        where = run.stdout + run.stderr
        if scratch not in where:
            sys.exit(f"{module} does not load from the copy: {where.strip()}")
        return f"{module} loads from the copy's build, not from {USER_CONTRIB / lib}"


def dune_files(dest: Path, lib: str, flags: str) -> None:
    (dest / "dune-project").write_text("(lang dune 2.9)\n(using coq 0.3)\n", encoding="utf-8")
    stanza = f"(coq.theory\n (name {lib})\n (flags :standard{' ' + flags if flags else ''}))\n"
    (dest / "theories" / "dune").write_text(stanza, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lib", help="RegLang, RelationAlgebra, Coquelicot, ...")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--holes", type=int, default=3)
    parser.add_argument("--max-sentences", type=int, default=4)
    parser.add_argument(
        "--min-holes", type=int, default=0, help="take more files until there are this many"
    )
    parser.add_argument(
        "--source", type=Path, help="the library's .v tree (default: user-contrib/LIB)"
    )
    parser.add_argument("--layout", choices=("coqproject", "dune"), default="coqproject")
    parser.add_argument("--dune-flags", default="", help="coqc flags for the dune stanza")
    parser.add_argument(
        "--unseen",
        action="store_true",
        help="one git commit (the holes); the originals go to DEST.record.json, outside",
    )
    parser.add_argument(
        "--check-types",
        action="store_true",
        help="compile the library and keep only holes whose Admitted keeps the lemma's type",
    )
    args = parser.parse_args()
    source = args.source.resolve() if args.source else USER_CONTRIB / args.lib
    if not source.is_dir():
        sys.exit(f"{source} is not there (apt-get install the library's Debian package)")
    dest: Path = args.dest.resolve()
    if dest.exists():
        sys.exit(f"{dest} exists: give a new folder")
    record_path = dest.parent / f"{dest.name}.record.json" if args.unseen else None
    if record_path is not None and record_path.exists():
        sys.exit(f"{record_path} exists")
    theories = dest / "theories"
    for path in sorted(source.rglob("*.v")):
        target = theories / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    order, graph = dependency_order(dest, args.lib)
    if args.layout == "dune":
        dune_files(dest, args.lib, args.dune_flags)
        ignored = "_build/\n"
    else:
        listing = "\n".join(str(p.relative_to(dest)) for p in order)
        (dest / "_CoqProject").write_text(
            f"-R theories {args.lib}\n\n{listing}\n", encoding="utf-8"
        )
        ignored = ""
    (dest / ".gitignore").write_text(
        f"{ignored}*.vo\n*.vok\n*.vos\n*.glob\n.*.aux\n", encoding="utf-8"
    )
    _git(dest, "init", "-q")
    if not args.unseen:
        _git(dest, "add", "-A")
        _git(dest, "commit", "-q", "-m", f"{args.lib} as published")
    ranked = sorted(order, key=lambda p: (-below(p, graph), str(p)))
    scratch = tempfile.TemporaryDirectory()
    checker = TypeCheck(dest, args.lib, order, Path(scratch.name)) if args.check_types else None
    holes: dict[str, list[dict]] = {}
    for path in ranked:
        drawn = sum(map(len, holes.values()))
        if len(holes) >= args.files and drawn >= args.min_holes:
            break
        relative = str(path.relative_to(dest))
        original = path.read_text(encoding="utf-8")
        refused: set[str] = set()
        while True:
            rng = random.Random(f"{args.seed}:{relative}")
            text, records = seed_holes(original, args.holes, rng, args.max_sentences, refused)
            if not records or checker is None:
                break
            changed = checker.changed(path, original, text, records)
            if not changed:
                break
            print(f"{relative}: Admitted changes the type of {', '.join(changed)}; drawn again")
            refused |= set(changed)
        if records:
            path.write_text(text, encoding="utf-8")
            holes[relative] = records
    scratch.cleanup()
    if len(holes) < min(args.files, 3):
        sys.exit(f"only {len(holes)} file(s) have short Qed proofs to hide")
    names = {file: [r["name"] for r in records] for file, records in holes.items()}
    (dest / "holes.json").write_text(json.dumps(names, indent=1) + "\n", encoding="utf-8")
    record = {
        "lib": args.lib,
        "source": str(source),
        "layout": args.layout,
        "rule": {
            k: getattr(args, k)
            for k in (
                "seed",
                "files",
                "holes",
                "max_sentences",
                "min_holes",
                "unseen",
                "check_types",
            )
        },
        "files": len(order),
        "holes": sum(map(len, holes.values())),
        "one_sentence": sum(r["one_sentence"] for rs in holes.values() for r in rs),
        "by_file": holes,
    }
    record_text = json.dumps(record, indent=1) + "\n"
    if record_path is None:
        (dest / "holes-record.json").write_text(record_text, encoding="utf-8")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"holes: seed {args.seed}")
    if record_path is not None:
        record_path.write_text(record_text, encoding="utf-8")
    print(check_binding(dest, args.lib, order[0]))
    for file, records in holes.items():
        print(
            f"{file}: {', '.join(r['name'] + ('*' if r['one_sentence'] else '') for r in records)}"
        )
    print(
        f"{record['holes']} holes ({record['one_sentence']} one-sentence, marked *) in "
        f"{len(holes)} files; {len(order)} files in {dest}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
