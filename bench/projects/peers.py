"""Issue 32 benchmark peers on a copy's holes: CoqHammer as its users run it, and a tactic list.

usage: python bench/projects/peers.py COPY [--out FILE] [--build]

COPY is a copy made by ``make_copies.py`` (its ``holes.json`` names the holes)
and built by its authors' build (``coq_makefile -f _CoqProject -o CoqMakefile
&& make``, or ``dune build`` for a dune project; ``--build`` runs it first), with
its holes still ``Admitted``. The flags: ``_CoqProject``'s first line, or for a
dune project each ``coq.theory`` stanza's ``-R _build/default/<folder> <name>``
(dune binds a theory's own files by ``-R``, so they may ``Require`` each other by
short name) and its ``(flags ...)``. For each hole and each arm, the
hole's file is rewritten into a scratch folder with that one ``Admitted.``
replaced by the arm's proof, and compiled with ``coqc`` and the project's flags
(the other holes stay admitted, as for a user). A goal counts as solved when
``coqc`` accepts the file (so every proof is checked by coqc). CPU per goal is
the user+sys CPU of ``coqc`` and everything it ran (``/usr/bin/time -v``: the
ATPs included) minus that of compiling the unchanged file.

* ``hammer``: ``From Hammer Require Import Hammer.`` and ``Set Hammer GSMode 2.``
  after the file's imports, the proof ``Proof. Timeout 10 hammer. Qed.``
  (CoqHammer's defaults otherwise; ``/usr/libexec/coq-hammer`` on PATH).
* ``tactics``: ``From Coq Require Import Lia.`` after the imports and
  ``Proof. first [ timeout 5 (solve [done]) | timeout 5 (solve [auto]) |
  timeout 5 (solve [intuition]) | timeout 5 lia | timeout 5 congruence |
  timeout 5 (solve [firstorder]) ]. Qed.``: each tactic under a 5 s timeout,
  the first that closes the goal wins.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from proof_orchestrator.coq.project import load_dune_project
from proof_orchestrator.coq.syntax import split_sentences

ARMS = {
    "hammer": (
        "From Hammer Require Import Hammer.\nSet Hammer GSMode 2.\n",
        "Proof. Timeout 10 hammer. Qed.",
    ),
    "tactics": (
        "From Coq Require Import Lia.\n",
        "Proof. first [ timeout 5 (solve [done]) | timeout 5 (solve [auto])"
        " | timeout 5 (solve [intuition]) | timeout 5 lia | timeout 5 congruence"
        " | timeout 5 (solve [firstorder]) ]. Qed.",
    ),
}
ENV = {**os.environ, "PATH": "/usr/libexec/coq-hammer:" + os.environ["PATH"]}


def coqc(copy: Path, flags: list[str], text: str, scratch: Path) -> tuple[int, float, str]:
    src = scratch / "Peer.v"
    src.write_text(text)
    run = subprocess.run(
        ["/usr/bin/time", "-v", "nice", "-n", "10", "coqc", *flags, str(src)],
        cwd=copy,
        capture_output=True,
        text=True,
        env=ENV,
    )
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", run.stderr).group(1))
    sys_ = float(re.search(r"System time \(seconds\): ([\d.]+)", run.stderr).group(1))
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("Error")]
    return run.returncode, user + sys_, " ".join(errors)[:300]


def with_proof(text: str, lemma: str, header: str, proof: str) -> str:
    """``text`` with ``lemma``'s ``Admitted.`` replaced by ``proof`` and ``header`` put
    after the file's last top-level ``Require`` sentence."""
    keywords = "Lemma|Theorem|Fact|Corollary|Remark|Proposition"
    statement = re.search(rf"\b(?:{keywords})\s+{re.escape(lemma)}(?![\w'])", text)
    if statement is None:
        raise ValueError(f"no statement of {lemma}")
    hole = text.index("Admitted.", statement.end())
    out = text[:hole] + proof + text[hole + len("Admitted.") :]
    imports = [
        sentence
        for sentence in split_sentences(out)
        if sentence.code.startswith(("Require ", "From "))
    ]
    end = imports[-1].end
    return out[:end] + "\n" + header + out[end:]


def flags_of(copy: Path) -> list[str]:
    """coqc's flags for files of the built copy (see the module's docstring)."""
    if (copy / "_CoqProject").exists():
        return (copy / "_CoqProject").read_text().split("\n")[0].split()
    project = load_dune_project(copy / "dune-project")
    flags = list(project.flags)
    out: list[str] = []
    i = 0
    while i < len(flags):
        if flags[i] == "-Q" and i + 2 < len(flags):
            folder = Path(flags[i + 1]).relative_to(copy)
            out += ["-R", str(copy / "_build/default" / folder), flags[i + 2]]
            i += 3
        else:
            out.append(flags[i])
            i += 1
    return out


def build(copy: Path) -> None:
    if (copy / "_CoqProject").exists():
        subprocess.run(
            ["coq_makefile", "-f", "_CoqProject", "-o", "CoqMakefile"], cwd=copy, check=True
        )
        subprocess.run(
            ["make", "-f", "CoqMakefile", "-j2"], cwd=copy, check=True, capture_output=True
        )
    else:
        subprocess.run(["dune", "build"], cwd=copy, check=True, capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("copy", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--build", action="store_true", help="run the authors' build first")
    a = ap.parse_args()
    copy = a.copy.resolve()
    if a.build:
        build(copy)
    flags = flags_of(copy)
    holes = json.loads((copy / "holes.json").read_text())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for file, lemmas in holes.items():
            text = (copy / file).read_text()
            rc, base_cpu, err = coqc(copy, flags, text, scratch)
            print(file, "baseline", rc, round(base_cpu, 2), err, flush=True)
            for lemma in lemmas:
                row = {"file": file, "lemma": lemma, "baseline_cpu_s": round(base_cpu, 2)}
                for arm, (header, proof) in ARMS.items():
                    rc, cpu, err = coqc(
                        copy, flags, with_proof(text, lemma, header, proof), scratch
                    )
                    row[arm] = {
                        "solved": rc == 0,
                        "cpu_s": round(max(cpu - base_cpu, 0.0), 2),
                        "error": err,
                    }
                print(json.dumps(row), flush=True)
                rows.append(row)
    summary = {
        arm: {
            "solved": sum(r[arm]["solved"] for r in rows),
            "goals": len(rows),
            "cpu_s_total": round(sum(r[arm]["cpu_s"] for r in rows), 2),
            "cpu_s_per_goal": round(sum(r[arm]["cpu_s"] for r in rows) / max(len(rows), 1), 2),
        }
        for arm in ARMS
    }
    result = {"copy": str(copy), "summary": summary, "rows": rows}
    if a.out:
        a.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
