"""Issue 29's benchmark: break real library code mechanically, then ``orch repair`` it.

usage: python bench/repair/run.py WORK [--seed 0] [--per-kind 4] [--most 8]
                                       [--budget 10] [--make-only] [--limit N]

1. **Cases** (seeded, reproducible): files drawn from the Coq stdlib (6) and
   from the Debian library stdpp (2), each with 10 to 80 ``Qed`` proofs; in a
   copy of one file, one change of one of five kinds:

   * ``rename``: a lemma that later proofs use is renamed (``L`` to ``L_v2``), no alias;
   * ``reorder``: a used lemma's first two hypotheses are swapped;
   * ``extra_hypothesis``: a used lemma gets a first hypothesis ``True ->``;
   * ``hint_removed``: a ``Hint`` sentence is removed;
   * ``opaque``: ``Opaque D.`` follows a used definition ``D``.

   At most ``--per-kind`` cases per kind and file. A case's broken proofs are
   found independently of orch, with ``coqc`` alone: compile the changed copy,
   read the error's line, admit the ``Qed`` proof around it, compile again.
   A change that breaks nothing is not a case; nor is one that breaks more
   than ``--most`` proofs (removing a hint the whole file relies on), or one
   that breaks a sentence outside any proof (a renamed lemma named in a
   ``Hint``): those are listed in ``skipped.json`` and in the result.
2. **Runs**, per case, in the same run: ``orch repair --budget B`` on a copy
   (process-tree CPU), and, on another copy where the broken proofs are
   ``Admitted.`` holes, ``orch fill --budget B --budget-cap B``: the fill
   portfolio on the statements alone (the old proofs ignored).
3. **Checks**: the repaired file compiles from scratch (its unrepaired proofs
   admitted), no statement changed, and ``Print Assumptions`` of every
   repaired lemma shows no axiom that the same lemma did not rest on in the
   unchanged library file (``Sets/Image.v`` rests on ``classic``, for one).

Writes ``bench/results/<time>-repair.json``: per kind, broken proofs (and
those orch missed), repaired, CPU per repair, and the statement-only count.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "src"))

from proof_orchestrator.coq.holes import iter_proofs  # noqa: E402
from proof_orchestrator.coq.syntax import split_sentences, split_top_level  # noqa: E402

THEORIES = Path("/usr/lib/ocaml/coq/theories")
STDPP = THEORIES.parent / "user-contrib" / "stdpp"
ORCH = str(ROOT / ".venv/bin/orch")
KINDS = ("rename", "reorder", "extra_hypothesis", "hint_removed", "opaque")
STDLIB_FOLDERS = ("Sets", "Relations", "Lists", "Bool", "Arith", "NArith", "Sorting", "Logic")
_HINT = re.compile(r"^(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Export)\s+)?Hint\s")


def _qed(path: Path) -> int:
    return len(re.findall(r"(?m)^\s*Qed\.", path.read_text(encoding="utf-8", errors="replace")))


def _draw(seed: int) -> list[Path]:
    stdlib = sorted(
        p for f in STDLIB_FOLDERS for p in (THEORIES / f).glob("*.v") if 10 <= _qed(p) <= 80
    )
    stdpp = sorted(p for p in STDPP.glob("*.v") if 10 <= _qed(p) <= 80)
    random.Random(seed).shuffle(stdlib)
    random.Random(seed).shuffle(stdpp)
    return stdlib[:6] + stdpp[:2]


def _uses(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w'.]){re.escape(name)}(?![\w'])", text) is not None


def _statement_change(code: str, kind: str) -> str | None:
    """The statement sentence with its hypotheses reordered or one added (None: cannot)."""
    head, colon, body = code.partition(":")
    if not colon:
        return None
    body = body.rstrip().removesuffix(".")
    binders = ""
    stripped = body.lstrip()
    if stripped.startswith("forall"):
        pieces = split_top_level(stripped, ",")
        if len(pieces) < 2:
            return None
        binders, stripped = pieces[0] + ",", ",".join(pieces[1:])
    arrows = split_top_level(stripped, "->")
    if kind == "reorder":
        if len(arrows) < 3:
            return None
        arrows[0], arrows[1] = arrows[1], arrows[0]
        return f"{head}:{binders} {' -> '.join(a.strip() for a in arrows)}."
    return f"{head}:{binders} True -> {stripped.strip()}."


def _changes(text: str, kind: str) -> list[tuple[str, str, int]]:
    """(changed text, changed name, offset from which proofs may break) for every place
    ``kind`` applies in ``text``."""
    sentences = split_sentences(text)
    proofs = list(iter_proofs(sentences))
    found: list[tuple[str, str, int]] = []
    if kind in ("rename", "reorder", "extra_hypothesis"):
        for index, proof in enumerate(proofs):
            later = " ".join(s.code for p in proofs[index + 1 :] for s in p.proof)
            if proof.ending != "Qed" or not _uses(later, proof.name):
                continue
            code = proof.statement.text
            if kind == "rename":
                new = re.sub(
                    rf"(?<![\w']){re.escape(proof.name)}(?![\w'])",
                    f"{proof.name}_v2",
                    code,
                    count=1,
                )
            else:
                changed = _statement_change(proof.statement.code, kind)
                if changed is None:
                    continue
                new = changed
            start, end = proof.statement.start, proof.statement.end
            found.append((text[:start] + new + text[end:], proof.name, start))
    elif kind == "hint_removed":
        for sentence in sentences:
            if _HINT.match(sentence.code):
                found.append((text[: sentence.start] + text[sentence.end :], "", sentence.start))
    elif kind == "opaque":
        for sentence in sentences:
            named = re.match(
                r"(?:#\[[^\]]*\]\s*)?(?:Local\s+)?Definition\s+([A-Za-z_][\w']*)", sentence.code
            )
            if named and _uses(text[sentence.end :], named.group(1)):
                name = named.group(1)
                found.append(
                    (
                        f"{text[: sentence.end]} Opaque {name}.{text[sentence.end :]}",
                        name,
                        sentence.end,
                    )
                )
    return found


def _compiles(text: str, folder: Path, name: str) -> bool:
    return _coqc(text, folder, name)[0]


def _coqc(text: str, folder: Path, name: str) -> tuple[bool, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    run = subprocess.run(
        ["coqc", "-q", name], cwd=folder, capture_output=True, text=True, timeout=300
    )
    return run.returncode == 0, run.stdout + run.stderr


_ERROR_AT = re.compile(r'File "[^"]*", line (\d+), characters (\d+)-')


def _admitting(text: str, names: set[str]) -> str:
    """``text`` with the ``Qed`` proofs of ``names`` admitted."""
    pieces, cursor = [], 0
    for proof in iter_proofs(split_sentences(text)):
        if proof.name in names and proof.ending == "Qed":
            pieces += [text[cursor : proof.proof[0].start], "Admitted."]
            cursor = proof.proof[-1].end
    return "".join(pieces) + text[cursor:]


def _broken_proofs(text: str, name: str, scratch: Path, most: int) -> tuple[list[str], str] | None:
    """The proofs that fail once the change is made, found with ``coqc`` alone: compile,
    read the error's line, admit the ``Qed`` proof around it, again; an error outside any
    proof ends the search (it is returned as the second item). None: more than ``most``
    proofs fail, a change too wide to be one case."""
    broken: list[str] = []
    while True:
        current = _admitting(text, set(broken))
        ok, output = _coqc(current, scratch, name)
        if ok:
            return broken, ""
        located = _ERROR_AT.search(output)
        if located is None:
            return broken, output.strip()[:300]
        lines = current.splitlines(keepends=True)
        offset = sum(len(line.encode()) for line in lines[: int(located.group(1)) - 1])
        offset = len(current.encode()[: offset + int(located.group(2))].decode(errors="ignore"))
        around = [
            proof
            for proof in iter_proofs(split_sentences(current))
            if proof.proof and proof.proof[0].start <= offset < proof.proof[-1].end
        ]
        if not around or around[0].ending != "Qed" or around[0].name in broken:
            return broken, output.strip()[:300]
        broken.append(around[0].name)
        if len(broken) > most:
            return None


def make_cases(
    seed: int, per_kind: int, most: int, work: Path, skipped: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The cases; the changes left out, and why, are appended to ``skipped``."""
    cases: list[dict[str, Any]] = []
    rng = random.Random(seed)
    scratch = work / "scratch"
    for source in _draw(seed):
        text = source.read_text(encoding="utf-8")
        if not _compiles(text, scratch, source.name):
            continue
        for kind in KINDS:
            options = _changes(text, kind)
            rng.shuffle(options)
            taken = 0
            for changed_text, changed, _ in options:
                if taken >= per_kind:
                    break
                found = _broken_proofs(changed_text, source.name, scratch, most)
                if found is None:
                    skipped.append(
                        {
                            "file": source.name,
                            "kind": kind,
                            "changed": changed,
                            "why": f"breaks more than {most} proofs",
                        }
                    )
                    continue
                broken, outside = found
                if outside:
                    skipped.append(
                        {
                            "file": source.name,
                            "kind": kind,
                            "changed": changed,
                            "why": f"breaks a sentence outside any proof ({broken} "
                            f"before it): {outside.splitlines()[-1]}",
                        }
                    )
                    continue
                if not broken:
                    continue
                taken += 1
                case = work / "cases" / f"{len(cases):03d}-{kind}-{source.stem}"
                case.mkdir(parents=True)
                (case / source.name).write_text(changed_text, encoding="utf-8")
                cases.append(
                    {
                        "dir": str(case),
                        "file": source.name,
                        "source": str(source),
                        "kind": kind,
                        "changed": changed,
                        "broken": broken,
                    }
                )
                print(f"case {case.name}: {len(broken)} broken", flush=True)
    return cases


def _timed(command: list[str], cwd: Path) -> tuple[int, str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return run.returncode, run.stdout, cpu


def _assumptions(text: str, names: list[str], folder: Path, name: str) -> list[set[str]]:
    """The axioms each of ``names`` rests on, by ``Print Assumptions`` at the end of
    ``text`` (compiled in ``folder`` as ``name``)."""
    if not names:
        return []
    prints = "\n".join(f"Print Assumptions {n}." for n in names)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text + "\n" + prints + "\n", encoding="utf-8")
    run = subprocess.run(
        ["coqc", "-q", name], cwd=folder, capture_output=True, text=True, timeout=600
    )
    if run.returncode != 0:
        raise RuntimeError(f"Print Assumptions failed in {folder}: {run.stderr[-500:]}")
    found: list[set[str]] = []
    for line in run.stdout.splitlines():  # warnings go to stderr
        if line.startswith("Closed under the global context") or line == "Axioms:":
            found.append(set())
        elif found and line and not line[0].isspace():
            found[-1].add(line.split(" : ")[0].strip())
    return found


def new_axioms(case: dict[str, Any], after: str, repaired: list[str]) -> dict[str, list[str]]:
    """The axioms a repaired lemma rests on that the same lemma did not rest on in the
    unchanged library file (the repair's, not the library's own)."""
    folder = Path(case["dir"])
    name = case["file"]
    # the broken proofs left unrepaired are admitted (one a repair uses shows up)
    unrepaired = set(case["broken"]) - set(repaired)
    now = _assumptions(_admitting(after, unrepaired), repaired, folder / "check", name)
    original = Path(case["source"]).read_text(encoding="utf-8")
    before = _assumptions(original, repaired, folder / "original", name)
    return {
        lemma: sorted(a - b) for lemma, a, b in zip(repaired, now, before, strict=True) if a - b
    }


def _statements(text: str) -> list[str]:
    return [p.statement.code for p in iter_proofs(split_sentences(text))]


def run_case(
    case: dict[str, Any], budget: float, fill_from: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Both arms on one case; with ``fill_from`` (an earlier row of the same case) only
    ``orch repair`` runs and the statement-only arm's figures are that row's."""
    folder = Path(case["dir"])
    name = case["file"]
    changed = (folder / name).read_text(encoding="utf-8")
    repair_dir, fill_dir = folder / "repair", folder / "fill"
    for d in (repair_dir, fill_dir) if fill_from is None else (repair_dir,):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    (repair_dir / name).write_text(changed, encoding="utf-8")
    code, out, cpu = _timed(
        [ORCH, "repair", name, "--budget", str(budget), "--json", "--db", "ledger.sqlite"],
        repair_dir,
    )
    summary = json.loads(out) if out.strip().startswith("{") else {}
    proofs = summary.get("proofs", [])
    found = {p["name"] for p in proofs}
    repaired = {p["name"] for p in proofs if p["repaired"]}
    after = (repair_dir / name).read_text(encoding="utf-8")
    # the statement-only portfolio: the broken proofs as holes
    holes_text, cursor, pieces = changed, 0, []
    for proof in iter_proofs(split_sentences(changed)):
        if proof.name in case["broken"] and proof.ending == "Qed":
            pieces += [changed[cursor : proof.proof[0].start], "Admitted."]
            cursor = proof.proof[-1].end
    holes_text = "".join(pieces) + changed[cursor:]
    if fill_from is None:
        (fill_dir / name).write_text(holes_text, encoding="utf-8")
        fill_code, fill_out, fill_cpu = _timed(
            [ORCH, "fill", name, "--budget", str(budget), "--budget-cap", str(budget),
             "--json", "--db", "ledger.sqlite"],
            fill_dir,
        )  # fmt: skip
        fill = json.loads(fill_out) if fill_out.strip().startswith("{") else {}
        fill_proved = {
            g["name"] for f in fill.get("files", []) for g in f["goals"] if g["outcome"] == "proved"
        }
    else:
        fill_code, fill_cpu = fill_from["fill_exit_code"], fill_from["fill_cpu_seconds"]
        fill_proved = set(fill_from["fill_proved"])
    # checks: compiles from scratch with what is not repaired admitted; statements kept
    standin, cursor, pieces = after, 0, []
    for proof in iter_proofs(split_sentences(after)):
        if proof.name in found - repaired and proof.ending == "Qed":
            pieces += [after[cursor : proof.proof[0].start], "Admitted."]
            cursor = proof.proof[-1].end
    standin = "".join(pieces) + after[cursor:]
    compiles = _compiles(standin + "\n", folder / "check", name)
    added = new_axioms(case, after, sorted(repaired & set(case["broken"]))) if compiles else {}
    return {
        **case,
        "exit_code": code,
        "found": sorted(found),
        "missed": sorted(set(case["broken"]) - found),
        "repaired": sorted(repaired & set(case["broken"])),
        "repair_cpu_seconds": round(cpu, 2),
        "fill_exit_code": fill_code,
        "fill_proved": sorted(fill_proved & set(case["broken"])),
        "fill_cpu_seconds": round(fill_cpu, 2),
        "compiles_from_scratch": compiles,
        "statements_unchanged": _statements(after) == _statements(changed),
        "new_axioms": added,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-kind", type=int, default=4, help="cases per kind and file")
    ap.add_argument(
        "--most", type=int, default=8, help="a change that breaks more proofs is not a case"
    )
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--make-only", action="store_true")
    ap.add_argument("--limit", type=int)
    ap.add_argument(
        "--only", help="comma-separated case folder names: run these cases alone (with --merge)"
    )
    ap.add_argument(
        "--repair-only",
        action="store_true",
        help="with --merge: rerun orch repair only, the statement-only figures from there",
    )
    ap.add_argument(
        "--merge",
        type=Path,
        help="an earlier result: its rows stand for the cases not run now (one table)",
    )
    a = ap.parse_args()
    work = a.work.resolve()
    listing = work / "cases.json"
    if listing.exists():
        cases = json.loads(listing.read_text())
    else:
        work.mkdir(parents=True, exist_ok=True)
        skipped: list[dict[str, Any]] = []
        cases = make_cases(a.seed, a.per_kind, a.most, work, skipped)
        listing.write_text(json.dumps(cases, indent=1))
        (work / "skipped.json").write_text(json.dumps(skipped, indent=1))
    total = sum(len(c["broken"]) for c in cases)
    print(f"{len(cases)} cases, {total} broken proofs", flush=True)
    if a.make_only:
        return 0
    only = set(a.only.split(",")) if a.only else None
    earlier = {r["dir"]: r for r in json.loads(a.merge.read_text())["cases"]} if a.merge else {}
    rows = []
    for case in cases[: a.limit]:
        if only is not None and Path(case["dir"]).name not in only:
            if case["dir"] in earlier:
                rows.append({**earlier[case["dir"]], "from": str(a.merge)})
            continue
        fill_from = earlier.get(case["dir"]) if a.repair_only else None
        rows.append(run_case(case, a.budget, fill_from))
        print(json.dumps({k: rows[-1][k] for k in ("dir", "broken", "repaired", "fill_proved")}))
    per_kind = {
        kind: {
            "cases": sum(1 for r in rows if r["kind"] == kind),
            "broken": sum(len(r["broken"]) for r in rows if r["kind"] == kind),
            "missed": sum(len(r["missed"]) for r in rows if r["kind"] == kind),
            "repaired": sum(len(r["repaired"]) for r in rows if r["kind"] == kind),
            "statement_only": sum(len(r["fill_proved"]) for r in rows if r["kind"] == kind),
            "repair_cpu_seconds": round(
                sum(r["repair_cpu_seconds"] for r in rows if r["kind"] == kind), 1
            ),
        }
        for kind in KINDS
    }
    broken = sum(v["broken"] for v in per_kind.values())
    repaired = sum(v["repaired"] for v in per_kind.values())
    statement_only = sum(v["statement_only"] for v in per_kind.values())
    result = {
        "kind": "repair-bench",
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "seed": a.seed,
        "merged_from": str(a.merge) if a.merge else None,
        "rerun": sorted(only) if only is not None else None,
        "rerun_arms": ["repair"] if a.repair_only else ["repair", "fill"],
        "budget": a.budget,
        "files": sorted({r["source"] for r in rows}),
        "changes_skipped": json.loads((work / "skipped.json").read_text())
        if (work / "skipped.json").exists()
        else [],
        "per_kind": per_kind,
        "broken": broken,
        "repaired": repaired,
        "repaired_rate": round(repaired / max(broken, 1), 3),
        "statement_only": statement_only,
        "repair_over_statement_only": round(repaired / max(statement_only, 1), 2),
        "all_compile": all(r["compiles_from_scratch"] for r in rows),
        "all_statements_unchanged": all(r["statements_unchanged"] for r in rows),
        "new_axioms": {f"{r['file']}:{k}": v for r in rows for k, v in r["new_axioms"].items()},
        "cases": rows,
    }
    out = BENCH / "results" / f"{result['timestamp']}-repair.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "cases"}, indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
