"""The dashboard: API over a ledger filled by a real bank run, safety, and a real browser."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from typer.testing import CliRunner

from proof_orchestrator.cli import app as cli_app
from proof_orchestrator.config import Settings
from proof_orchestrator.dashboard import create_app
from proof_orchestrator.dashboard.charts import plotly_js
from proof_orchestrator.dashboard.report import render_html
from proof_orchestrator.goals import Goal, HoleKind
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import LiveRun
from proof_orchestrator.run.pipeline import FillOptions
from proof_orchestrator.workflows.bank import run_bank

from .conftest import BANK, REPO
from .served import served

ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def bank_ledger(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Ledger, Path, dict[str, object]]]:
    """A ledger filled by a real `orch bank` run on two bank files."""
    root = tmp_path_factory.mktemp("dash")
    bank = root / "bank"
    (bank / "coq").mkdir(parents=True)
    for name in ("BankOption.v", "BankBool.v"):
        shutil.copyfile(BANK / "coq" / name, bank / "coq" / name)
    shutil.copyfile(BANK / "index.tsv", bank / "index.tsv")
    # quick tactics: the subject is the run's record, not the strategies' strength
    options = FillOptions(orch=Settings(budget=5.0, tactic_timeout=1.0, profile=0))
    result, _ = asyncio.run(run_bank(bank, root / "results", options))
    ledger = Ledger(f"sqlite:///{result['ledger']}")
    (root / "project").mkdir()
    (root / "project" / "A.v").write_text("Lemma a : True. Proof. exact I. Qed.\n")
    (root / "secret.txt").write_text("outside the project\n")
    yield ledger, root, result
    ledger.close()


@pytest.fixture
def client(bank_ledger: tuple[Ledger, Path, dict[str, object]]) -> TestClient:
    ledger, root, _ = bank_ledger
    return TestClient(create_app(ledger, root / "project", results_dir=root / "results"))


def test_stats_match_the_bank_result(
    client: TestClient, bank_ledger: tuple[Ledger, Path, dict]
) -> None:
    _, _, result = bank_ledger
    stats = client.get("/api/stats").json()
    assert stats["holes"]["total"] == result["totals"]["lemmas"]
    assert stats["holes"]["proved"] == result["totals"]["solved"]
    by_strategy = {s["strategy"]: s["proved"] for s in stats["strategies"]}
    expected = {name: s["solved"] for name, s in result["per_strategy"].items() if s["solved"]}
    assert {k: v for k, v in by_strategy.items() if v} == expected
    assert client.get("/api/health").json() == {"status": "ok"}


def test_goal_filters_and_goal_detail(
    client: TestClient, bank_ledger: tuple[Ledger, Path, dict]
) -> None:
    _, _, result = bank_ledger
    proved = client.get("/api/goals", params={"status": "proved"}).json()
    assert len(proved) == result["totals"]["solved"]
    detail = client.get(f"/api/goals/{proved[0]['id']}").json()
    assert detail["proof"]["script"]
    assert detail["attempts"]
    assert client.get("/api/goals/999999").status_code == 404


def test_runs_openapi_and_metrics(client: TestClient) -> None:
    runs = client.get("/api/runs").json()
    assert runs["runs"][0]["command"] == "bank"
    assert runs["benchmarks"][0]["solved"] >= 1
    schema = client.get("/openapi.json").json()
    assert {
        "/api/health",
        "/api/stats",
        "/api/goals",
        "/api/goals/{goal_id}",
        "/api/runs",
        "/api/marketplace",
    } <= set(schema["paths"])
    metrics = client.get("/metrics").text
    assert "orch_proofs_total" in metrics
    assert 'orch_goals{status="proved"}' in metrics


def test_live_api_and_gauges_show_a_running_command(
    client: TestClient, bank_ledger: tuple[Ledger, Path, dict]
) -> None:
    ledger, _, _ = bank_ledger
    assert client.get("/api/live").json()["runs"] == []
    run = ledger.start_run("fill", {}, "8.16.1")
    state = {
        "command": "fill",
        "slots": [{"goal": "a", "file": "/p/A.v", "strategy": "micro", "cpu_seconds": 0.5}],
        "queue": 4,
        "goals": {"total": 9, "done": 3, "proved": 2},
        "cpu": {"target": 0.5, "measured": 0.42},
        "eta_seconds": 12.0,
    }
    ledger.publish_live(run, state)
    try:
        (live,) = client.get("/api/live").json()["runs"]
        assert live["run_id"] == run
        assert live["state"] == state
        assert live["dead"] is False
        metrics = client.get("/metrics").text
        labels = f'{{command="fill",run_id="{run}"}}'
        assert f"orch_live_slots_busy{labels} 1.0" in metrics
        assert f"orch_live_queue_length{labels} 4.0" in metrics
        assert f"orch_live_cpu_share{labels} 0.42" in metrics
        assert f"orch_live_cpu_target{labels} 0.5" in metrics
    finally:
        ledger.clear_live(run)
        ledger.finish_run(run, "finished", {})
    assert client.get("/api/live").json()["runs"] == []
    assert "orch_live_slots_busy{" not in client.get("/metrics").text


def test_plotly_is_served_from_the_installed_package(client: TestClient) -> None:
    import plotly

    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200
    assert js.headers["content-type"].startswith("text/javascript")
    bundled = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert js.content == bundled.read_bytes()
    page = client.get("/").text
    assert '<script src="/static/plotly.min.js">' in page
    assert "cdn" not in page.lower()


def test_html_report_is_self_contained_with_plotly_charts(
    bank_ledger: tuple[Ledger, Path, dict],
) -> None:
    _, _, result = bank_ledger
    html = render_html(result)
    assert plotly_js() in html  # inlined: the file opens offline
    assert "<script src=" not in html
    assert html.count("Plotly.newPlot(") == 5
    for title in ("cumulative search CPU (s)", "lemmas solved", "share of the machine (%)"):
        assert title in html


def test_paths_outside_the_project_are_refused(client: TestClient) -> None:
    assert client.get("/api/files/A.v").text.startswith("Lemma a")
    for path in ("../secret.txt", "..%2Fsecret.txt", "%2E%2E/secret.txt"):
        response = client.get(f"/api/files/{path}")
        assert response.status_code in (403, 404), path
        assert "outside the project" not in response.text or response.status_code == 403
    assert client.get("/files/../secret.txt").status_code in (403, 404)


def test_a_statement_with_script_tags_is_shown_as_text(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.sqlite'}")
    goal = Goal(
        tmp_path / "X.v",
        1,
        "evil",
        "Lemma evil : <script>alert(1)</script> & x < y.",
        HoleKind.ADMITTED,
        "fp-evil",
    )
    goal_id = ledger.upsert_goal(goal)
    page = TestClient(create_app(ledger, tmp_path)).get(f"/goals/{goal_id}").text
    ledger.close()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; x &lt; y." in page


def test_token_is_required_when_configured(bank_ledger: tuple[Ledger, Path, dict]) -> None:
    ledger, root, _ = bank_ledger
    guarded = TestClient(create_app(ledger, root / "project", token="s3cret"))
    assert guarded.get("/api/stats").status_code == 401
    assert guarded.get("/api/stats", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/api/stats", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert guarded.get("/api/stats", params={"token": "s3cret"}).status_code == 200


def test_non_loopback_bind_without_token_refuses_to_start(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli_app, ["dashboard", str(tmp_path), "--host", "0.0.0.0"], env={"ORCH_DASHBOARD_TOKEN": ""}
    )
    assert result.exit_code == 2
    assert "without a token" in result.output


@pytest.fixture
def server(bank_ledger: tuple[Ledger, Path, dict]) -> Iterator[str]:
    ledger, root, _ = bank_ledger
    with served(create_app(ledger, root / "project", results_dir=root / "results")) as url:
        yield url


def test_live_state_streams_as_server_sent_events(
    server: str, bank_ledger: tuple[Ledger, Path, dict]
) -> None:
    import httpx2

    ledger, _, _ = bank_ledger
    run = ledger.start_run("bank", {}, "8.16.1")
    ledger.publish_live(run, {"queue": 5, "slots": []})
    try:
        with httpx2.stream("GET", server + "/api/live/stream", timeout=10) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            assert next(lines) == "event: live"
            data = next(lines)
        assert data.startswith("data: ")
        (live,) = json.loads(data.removeprefix("data: "))["runs"]
        assert (live["run_id"], live["command"], live["state"]["queue"]) == (run, "bank", 5)
    finally:
        ledger.clear_live(run)
        ledger.finish_run(run, "finished", {})


DEAD_STATE = {
    "slots": [
        {
            "goal": "stuck_goal",
            "file": "/p/A.v",
            "strategy": "micro",
            "budget_seconds": 10.0,
            "cpu_seconds": 1.5,
            "elapsed_seconds": 3.0,
        }
    ],
    "queue": 2,
    "goals": {"total": 5, "done": 1, "proved": 1},
    "cpu": {"target": 0.5, "measured": 0.4},
    "eta_seconds": None,
}


def test_dashboard_in_a_real_browser(server: str, bank_ledger: tuple[Ledger, Path, dict]) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian chromium is not installed (make test installs it as root)")
    from playwright.sync_api import sync_playwright

    ledger, _, result = bank_ledger
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        # a run that died without clearing its live row: its heartbeat is a minute old
        dead = ledger.start_run("fill", {}, "8.16.1")
        ledger.publish_live(dead, DEAD_STATE)
        with ledger.engine.begin() as connection:
            connection.execute(
                update(LiveRun)
                .where(LiveRun.run_id == dead)
                .values(heartbeat_at=datetime.now(UTC) - timedelta(minutes=1))
            )
        page.goto(server + "/")
        page.wait_for_selector("#live .live-run.dead")
        assert page.inner_text("#live .live-run.dead .badge") == "DEAD"
        assert page.inner_text("#live .slot-goal") == "stuck_goal"
        assert page.inner_text("#live .slot-cpu") == "1.5 s"
        assert page.inner_text("#total") == str(result["totals"]["lemmas"])
        assert page.inner_text("#proved") == str(result["totals"]["solved"])
        # Plotly draws the charts in the browser: axes with tick labels, a point per proof
        for chart in ("solved", "cpu", "strategy", "memory", "queue"):
            page.wait_for_selector(f"#chart-{chart} .xtick text")
            assert page.locator(f"#chart-{chart} .ytick text").count() >= 2, chart
        assert page.locator("#chart-solved .xtitle").text_content() == "time (UTC)"
        assert (
            page.locator("#chart-solved .scatterlayer .point").count()
            == (result["totals"]["solved"])
        )
        page.screenshot(path=str(ARTIFACTS / "dashboard-overview.png"), full_page=True)
        ledger.clear_live(dead)
        ledger.finish_run(dead, "failed", {})

        page.goto(server + "/goals")
        all_rows = page.locator("tr.goal-row").count()
        page.select_option("#status-filter", "proved")
        page.click("#apply")
        page.wait_for_load_state()
        proved_rows = page.locator("tr.goal-row").count()
        assert proved_rows == result["totals"]["solved"] < all_rows
        assert page.locator("tr.goal-row[data-status='failed']").count() == 0

        page.locator("tr.goal-row a").first.click()
        page.wait_for_load_state()
        assert page.inner_text("#proof").strip().endswith(".")
        diff = page.inner_text("#diff")
        assert diff.count("+Qed.") == 1  # the change this proof made, not the whole file's
        page.screenshot(path=str(ARTIFACTS / "dashboard-goal.png"), full_page=True)
        browser.close()
