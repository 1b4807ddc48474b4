"""Broken and repaired proofs in `orch stats` and on the dashboard (a real browser), after a
real `orch repair` run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from proof_orchestrator.cli import app as cli_app
from proof_orchestrator.dashboard import create_app
from proof_orchestrator.ledger import Ledger

from .served import served
from .test_dashboard import ARTIFACTS
from .test_repair_git import SOURCE


@pytest.fixture(scope="module")
def repaired(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Ledger, Path]]:
    """A ledger after `orch repair` on a file with a proof broken by a rename (repaired)
    and a false lemma (still broken)."""
    root = tmp_path_factory.mktemp("views")
    (root / "Renamed.v").write_text(SOURCE, encoding="utf-8")
    db = root / "ledger.sqlite"
    result = CliRunner().invoke(
        cli_app,
        [
            "repair",
            str(root / "Renamed.v"),
            "--budget",
            "3",
            "--profile",
            "0",
            "--db",
            str(db),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["repaired"] == 1
    ledger = Ledger(f"sqlite:///{db}")
    yield ledger, root
    ledger.close()


def test_stats_count_broken_and_repaired_proofs(repaired: tuple[Ledger, Path]) -> None:
    _, root = repaired
    db = str(root / "ledger.sqlite")
    result = CliRunner().invoke(cli_app, ["stats", str(root), "--db", db], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "2 found by orch repair: 1 repaired, 1 still broken" in text
    as_json = CliRunner().invoke(cli_app, ["stats", str(root), "--db", db, "--json"])
    goals = json.loads(as_json.stdout)["goals"]
    assert (goals["broken"], goals["repaired"]) == (1, 1)


def test_the_api_lists_broken_proofs_with_cause_and_both_proofs(
    repaired: tuple[Ledger, Path],
) -> None:
    ledger, root = repaired
    client = TestClient(create_app(ledger, root))
    stats = client.get("/api/stats").json()
    assert stats["repairs"] == {"broken": 1, "repaired": 1}
    assert stats["holes"]["total"] == 0  # a broken proof is not a hole
    repairs = client.get("/api/repairs").json()
    by_name = {p["name"]: p for p in repairs["proofs"]}
    assert by_name["one_is_two"]["status"] == "broken"
    assert by_name["one_is_two"]["cause"].startswith("broken (type_mismatch) at reflexivity.")
    twice = by_name["twice"]
    assert twice["status"] == "repaired"
    assert "unknown_reference" in twice["cause"]
    assert "plus_zero_r" in twice["old"]
    assert "plus_n_zero" in twice["new"]
    assert twice["strategy"] == "repair"


def test_the_dashboard_shows_broken_and_repaired_proofs_in_a_real_browser(
    repaired: tuple[Ledger, Path],
) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian chromium is not installed (make test installs it as root)")
    from playwright.sync_api import sync_playwright

    ledger, root = repaired
    ARTIFACTS.mkdir(exist_ok=True)
    with served(create_app(ledger, root)) as server, sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.goto(server + "/")
        assert page.inner_text("#broken") == "1"
        assert page.inner_text("#repaired") == "1"
        assert page.inner_text("#total") == "0"
        assert page.locator("#files tr").count() == 1  # no holes: the header alone
        (still,) = page.locator("#broken-proofs tr.broken-row").all()
        assert "one_is_two" in still.inner_text()
        assert "type_mismatch" in still.locator(".cause").inner_text()
        assert "Unable to unify" in still.locator(".cause").inner_text()
        (fixed,) = page.locator("#repaired-proofs tr.repaired-row").all()
        assert "twice" in fixed.inner_text()
        assert "unknown_reference" in fixed.locator(".cause").inner_text()
        assert "plus_n_zero" in fixed.locator(".new").inner_text()
        page.screenshot(path=str(ARTIFACTS / "dashboard-repairs.png"), full_page=True)
        page.goto(server + "/goals")
        page.select_option("#status-filter", "broken")
        page.click("#apply")
        page.wait_for_load_state()
        assert page.locator("tr.goal-row").count() == 1
        page.locator("tr.goal-row a").first.click()
        page.wait_for_load_state()
        assert "Unable to unify" in page.inner_text("#attempts .cause")
        browser.close()
