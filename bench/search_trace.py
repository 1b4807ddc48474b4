"""Every prover call Coq's ``search`` makes on fixed goals, to compare two versions of it.

    .venv/bin/python bench/search_trace.py OUT.json          # record (real coqtop, ~10 s)
    .venv/bin/python bench/search_trace.py --compare A.json B.json

Records, for 20 holes of the bank (every sixth of each file, five per file)
and three holes of a small file with earlier ``Qed`` proofs (so the k-NN
model has pairs, and one goal needs three steps), each call the strategy
makes to the session: the tactic, the state it ran from (its script), the
status and the goals that came back, and the result (outcome, script,
tactics tried). The search runs with a fixed number of expansions (8) and a
CPU budget it never reaches, so the trace does not depend on the machine's
speed. Two checkouts that give the same traces search identically: same
candidates, order, priorities, merging and output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.strategies.knn import FileModels
from proof_orchestrator.coq.strategies.search import SearchStrategy
from proof_orchestrator.goals import Budget

BANK = Path(__file__).resolve().parent / "bank" / "coq"
EXTRA = """\
Require Import Arith List.
Lemma app_nil_r' : forall (l : list nat), l ++ nil = l.
Proof. intros l. induction l as [|x l IH]. reflexivity. simpl. rewrite IH. reflexivity. Qed.
Lemma add_0_r' : forall n : nat, n + 0 = n.
Proof. intros n. induction n. reflexivity. simpl. rewrite IHn. reflexivity. Qed.
Lemma mul_1_r' : forall n : nat, n * 1 = n.
Proof.
Admitted.
Lemma app_assoc' : forall (l m k : list nat), (l ++ m) ++ k = l ++ (m ++ k).
Proof.
Admitted.
Inductive num : Type := zero : num | succ : num -> num.
Parameter f g h : num -> num.
Axiom g_is_h : forall n : num, g n = h n.
Axiom f_h_inverse : forall n : num, f (h n) = n.
Lemma f_g : forall n : num, f (g n) = n.
Proof.
Admitted.
"""


class _Logged:
    """A session that logs every tactic and script it is asked to run."""

    def __init__(self, session: Any, log: list[list[Any]]) -> None:
        self._session, self._log = session, log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def run_tactic(self, tactic: str, state: Any = None, *, timeout: float, **kw: Any) -> Any:
        reply = await self._session.run_tactic(tactic, state, timeout=timeout, **kw)
        origin = list(state.script) if state is not None else None
        self._log.append(["tactic", tactic, origin, reply.status.value, list(reply.goals)])
        return reply

    async def run_script(self, sentences: Any, state: Any = None, *, timeout: float) -> Any:
        reply = await self._session.run_script(sentences, state, timeout=timeout)
        origin = list(state.script) if state is not None else None
        self._log.append(["script", list(sentences), origin, reply.status.value])
        return reply


async def record(out: Path) -> None:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="orch-search-trace-") as folder:
        work = Path(folder)
        files = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(BANK.glob("*.v"))]
        files.append(("Extra.v", EXTRA))
        for name, text in files:
            path = work / name
            path.write_text(text, encoding="utf-8")
            holes = scan_coq_text(path, text)
            chosen = holes if name == "Extra.v" else holes[::6][:5]
            prover = CoqProver(cwd=str(work))
            models = FileModels()
            try:
                for hole in chosen:
                    log: list[list[Any]] = []
                    async with prover.session(hole.goal, text, hole.prefix_end) as session:
                        search = SearchStrategy(models, max_expansions=8)
                        result = await search.prove(
                            _Logged(session, log), hole.goal, Budget(1000, 1, 5)
                        )
                    results[f"{name}:{hole.goal.name}"] = {
                        "outcome": result.outcome.value,
                        "sentences": list(result.sentences),
                        "tried": result.tactics_tried,
                        "log": log,
                    }
                    print(f"{name}:{hole.goal.name} {result.outcome.value} {len(log)} calls")
            finally:
                await prover.aclose()
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


def compare(a: Path, b: Path) -> int:
    left = json.loads(a.read_text(encoding="utf-8"))
    right = json.loads(b.read_text(encoding="utf-8"))
    if left.keys() != right.keys():
        print("the two traces are of different goals")
        return 1
    differing = [k for k in left if left[k] != right[k]]
    for key in differing:
        la, lb = left[key]["log"], right[key]["log"]
        first = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), None)
        print(f"{key}: differs (first at call {first}; {len(la)} vs {len(lb)} calls)")
    calls = sum(len(v["log"]) for v in left.values())
    print(f"{len(left)} goals, {calls} calls, {len(differing)} goals differ")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give OUT.json or --compare A B")
    asyncio.run(record(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
