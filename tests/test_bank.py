"""The benchmark bank: both languages, labels, and a real run on part of it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from proof_orchestrator.config import Settings
from proof_orchestrator.run.pipeline import FillOptions
from proof_orchestrator.workflows.bank import load_index, run_bank

from .conftest import BANK


def coq_ids(path: Path) -> list[str]:
    return re.findall(r"^Lemma (\w+)", path.read_text(), re.M)


def lean_ids(path: Path) -> list[str]:
    return re.findall(r"^theorem (\w+)", path.read_text(), re.M)


def test_bank_has_120_labelled_lemmas_in_both_languages() -> None:
    index = load_index(BANK)
    assert len(index) >= 120
    assert set(Counter(e.level for e in index.values())) == {"easy", "medium", "hard"}
    assert set(Counter(e.domain for e in index.values())) == {"nat", "list", "bool", "option"}
    for coq in sorted((BANK / "coq").glob("*.v")):
        lean = BANK / "lean" / f"{coq.stem}.lean"
        assert coq_ids(coq) == lean_ids(lean), coq.name
        assert all(index[i].file == coq.stem for i in coq_ids(coq))
        assert coq.read_text().count("Admitted.") == len(coq_ids(coq))
        assert lean.read_text().count("sorry") == len(lean_ids(lean))
    assert sum(len(coq_ids(p)) for p in (BANK / "coq").glob("*.v")) == len(index)


@pytest.mark.parametrize("name", ["BankNat.v", "BankList.v", "BankBool.v", "BankOption.v"])
def test_coq_bank_files_compile_with_their_holes(name: str, tmp_path: Path) -> None:
    copy = tmp_path / name
    shutil.copyfile(BANK / "coq" / name, copy)
    done = subprocess.run(["coqc", str(copy)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


async def test_bank_run_writes_a_result_and_rechecks_files(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    (bank / "coq").mkdir(parents=True)
    for name in ("BankOption.v", "BankBool.v"):
        shutil.copyfile(BANK / "coq" / name, bank / "coq" / name)
    shutil.copyfile(BANK / "index.tsv", bank / "index.tsv")
    # quick tactics: the subject is the run's record, not the strategies' strength
    options = FillOptions(orch=Settings(budget=5.0, tactic_timeout=1.0, profile=0))
    result, path = await run_bank(bank, tmp_path / "results", options)
    assert json.loads(path.read_text()) == result
    assert result["totals"]["lemmas"] == 52
    assert result["recheck"]["compiled"] == 2
    solved = {row["id"] for row in result["lemmas"] if row["solved"]}
    remaining = {n for names in result["recheck"]["remaining_holes"].values() for n in names}
    assert solved.isdisjoint(remaining)
    assert len(solved) + len(remaining) == 52
    # every easy lemma of these two files is within reach of the micro strategy
    easy = [row for row in result["lemmas"] if row["level"] == "easy"]
    assert easy
    assert all(row["solved"] for row in easy)
    assert sum(s["solved"] for s in result["per_strategy"].values()) == len(solved)
    quick_and_strong = {
        "micro",
        "induction",
        "cached",
        "analogy",
        "rewrite",
        "search",
        "sauto",
        "hammer",
    }
    assert set(result["per_strategy"]) <= quick_and_strong
    assert result["cpu_trace"]
    assert result["overhead"]["prover_cpu_seconds"] > 0
    # the live state was published all along, and its cost is part of the orchestrator's
    assert result["overhead"]["live_publishes"] >= 1
    live_cpu = result["overhead"]["live_publisher_cpu_seconds"]
    assert 0 < live_cpu < result["overhead"]["orchestrator_cpu_seconds"]
    # the round trips to coqtop were counted, each carrying one or more sentences
    overhead = result["overhead"]
    assert 0 < overhead["prover_writes"] <= overhead["prover_requests"]
    assert overhead["orchestrator_ms_per_write"] > 0
    assert (bank / "coq" / "BankBool.v").read_text().count(
        "Admitted."
    ) == 27  # the bank itself is untouched
