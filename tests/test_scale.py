"""What keeps cost linear in the number of holes: the dependents index, paged goal queries."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.dashboard import create_app
from proof_orchestrator.dashboard.app import MAX_PAGE
from proof_orchestrator.goals import Goal, HoleKind, Outcome
from proof_orchestrator.ledger import Ledger, LedgerReader
from proof_orchestrator.run.reports import FileReport, FileStatus
from proof_orchestrator.run.worker import FileState
from proof_orchestrator.scheduler.queue import Mentions


def _search(text: str, name: str) -> int:
    """The count the queue used to make: a search of the text for the whole identifier."""
    return len(re.findall(rf"(?<![\w'.]){re.escape(name)}(?![\w'])", text))


def test_mentions_count_what_a_search_of_the_rest_of_the_text_finds() -> None:
    rng = random.Random(4)
    pieces = ["a", "ab", "a'", "a_b", "L.a", "a.b", "(a)", "1a", "éa", " ", ".", "\n", "b#2", "_a"]
    names = ["a", "ab", "a'", "a_b", "b", "_a", "b#2", "L.a", "missing"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        index = Mentions(text)
        for name in names:
            for offset in range(len(text) + 1):
                assert index.after(name, offset) == _search(text[offset:], name), (text, name)
    assert Mentions("a a").after("") == 0


def test_a_files_holes_count_the_later_mentions_of_their_names() -> None:
    text = (
        "Lemma a : True.\nProof.\nAdmitted.\n"
        "Lemma b : True.\nProof.\n  pose proof a as H.\n  admit.\nAdmitted.\n"
        "Lemma c : True.\nProof.\n  pose proof a as H. pose proof b.\n  admit.\nAdmitted.\n"
    )
    holes = scan_coq_text(Path("/p/F.v"), text)
    state = FileState(Path("/p/F.v"), text, None, FileReport(Path("/p/F.v"), FileStatus.DONE), 3)  # type: ignore[arg-type]
    counts = {h.goal.name: state.mentions_after(h.goal.name, h.proof_end) for h in holes}
    assert counts == {"a": 2, "b": 1, "c": 0}


# -- paged goal queries ----------------------------------------------------------------


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    """Nine goals over three files, added out of order; attempts on some, proofs on two."""
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    run_id = ledger.start_run("fill", {}, "test")
    places = [("B.v", 9), ("A.v", 5), ("C.v", 1), ("A.v", 1), ("B.v", 2)]
    places += [("C.v", 7), ("A.v", 3), ("B.v", 4), ("C.v", 3)]
    for file, line in places:
        name = f"{file[0].lower()}{line}"
        goal = Goal(
            Path(f"/p/{file}"), line, name, f"Lemma {name} : True.", HoleKind.ADMITTED, "fp-" + name
        )
        goal_id = ledger.upsert_goal(goal)
        for _ in range(line % 3):
            ledger.record_attempt(
                run_id=run_id,
                goal_id=goal_id,
                fingerprint=goal.fingerprint,
                strategy="micro",
                outcome=Outcome.FAILED,
            )
        if name in ("a3", "c7"):
            ledger.record_proof(
                run_id=run_id,
                goal_id=goal_id,
                fingerprint=goal.fingerprint,
                sentences=("exact I.",),
                strategy="micro" if name == "a3" else "induction",
                prover_version="test",
                diff="",
                written=True,
            )
    yield ledger
    ledger.close()


def test_goals_are_listed_in_file_and_line_order_with_counts(ledger: Ledger) -> None:
    goals = LedgerReader(ledger).goals()
    assert [g["name"] for g in goals] == ["a1", "a3", "a5", "b2", "b4", "b9", "c1", "c3", "c7"]
    by_name = {g["name"]: g for g in goals}
    assert {n: g["attempts"] for n, g in by_name.items()} == {n: int(n[1:]) % 3 for n in by_name}
    assert by_name["a3"]["strategy"] == "micro"
    assert by_name["a3"]["status"] == "proved"
    assert by_name["c7"]["strategy"] == "induction"
    assert by_name["b9"]["strategy"] == ""


def test_pages_of_goals_are_slices_of_the_whole_list(ledger: Ledger) -> None:
    reader = LedgerReader(ledger)
    everything = reader.goals()
    for limit in (1, 2, 4, 20):
        for offset in range(0, 11):
            page = reader.goals(limit=limit, offset=offset)
            assert page == everything[offset : offset + limit]
    proved = reader.goals(status="proved")
    assert [g["name"] for g in proved] == ["a3", "c7"]
    assert reader.goals(status="proved", limit=1, offset=1) == proved[1:]
    assert [g["name"] for g in reader.goals(strategy="induction")] == ["c7"]
    assert [g["name"] for g in reader.goals(file="B.v", offset=1)] == ["b4", "b9"]
    assert reader.count_goals() == 9
    assert reader.count_goals(status="proved") == 2
    assert reader.count_goals(strategy="micro") == 1
    assert reader.count_goals(file="C.v", status="open") == 2


def test_open_statements_are_those_of_unproved_goals(ledger: Ledger) -> None:
    statements = LedgerReader(ledger).open_statements()
    expected = [g["statement"] for g in LedgerReader(ledger).goals() if g["status"] != "proved"]
    assert sorted(statements) == sorted(expected)
    assert len(statements) == 7


def test_api_goals_pages_and_gives_the_total(ledger: Ledger, tmp_path: Path) -> None:
    client = TestClient(create_app(ledger, tmp_path))
    everything = client.get("/api/goals").json()
    assert len(everything) == 9
    response = client.get("/api/goals", params={"limit": 3, "offset": 4})
    assert response.status_code == 200
    assert response.json() == everything[4:7]
    assert response.headers["X-Total-Count"] == "9"
    proved = client.get("/api/goals", params={"status": "proved", "limit": 1})
    assert [g["name"] for g in proved.json()] == ["a3"]
    assert proved.headers["X-Total-Count"] == "2"
    assert client.get("/api/goals", params={"offset": 50}).json() == []
    for bad in ({"limit": 0}, {"limit": MAX_PAGE + 1}, {"offset": -1}):
        assert client.get("/api/goals", params=bad).status_code == 422


def test_proofs_over_time_keeps_a_bounded_number_of_exact_points(ledger: Ledger) -> None:
    goal_id = LedgerReader(ledger).goals(status="proved")[0]["id"]
    for _ in range(40):
        ledger.record_proof(
            run_id=1,
            goal_id=goal_id,
            fingerprint="fp-a3",
            sentences=("exact I.",),
            strategy="micro",
            prover_version="test",
            diff="",
            written=True,
        )
    reader = LedgerReader(ledger)
    every = reader.proofs_over_time()
    assert [n for _, n in every] == list(range(1, 43))
    assert reader.proofs_over_time(max_points=42) == every
    for limit in (2, 5, 10, 41):
        points = reader.proofs_over_time(max_points=limit)
        assert len(points) == limit
        assert points[0] == every[0]
        assert points[-1] == every[-1]
        assert set(points) <= set(every)
        assert [n for _, n in points] == sorted({n for _, n in points})
