"""The live panel in a real browser while a real `orch fill` runs (Debian Chromium, Playwright)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proof_orchestrator.dashboard import create_app
from proof_orchestrator.ledger import Ledger

from .conftest import BANK, REPO
from .served import served

ARTIFACTS = REPO / "test-artifacts"
ORCH = Path(sys.executable).with_name("orch")
QUICK_STRATEGIES = {"micro", "induction", "cached"}


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    """A copy of one bank file (42 holes) and the URL of a fresh ledger."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copyfile(BANK / "coq" / "BankNat.v", root / "BankNat.v")
    (root / "_CoqProject").write_text("-Q . Bank\nBankNat.v\n")
    return root, f"sqlite:///{tmp_path / 'ledger.sqlite'}"


@pytest.fixture
def dashboard(project: tuple[Path, str]) -> Iterator[str]:
    root, url = project
    ledger = Ledger(url)  # made before the run starts, so the dashboard can open it
    with served(create_app(ledger, root)) as url:
        yield url
    ledger.close()


@pytest.mark.slow
def test_live_panel_follows_a_real_fill(project: tuple[Path, str], dashboard: str) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian chromium is not installed (make test installs it as root)")
    from playwright.sync_api import sync_playwright

    root, url = project
    ARTIFACTS.mkdir(exist_ok=True)
    log = root.parent / "fill.log"
    with log.open("w") as out:
        fill = subprocess.Popen(
            [str(ORCH), "fill", str(root), "--profile", "0", "--db", url],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
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
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.goto(dashboard + "/")
            # a slot shows a quick strategy at work on a goal
            page.wait_for_function(
                """names => [...document.querySelectorAll('#live td.slot-strategy')]
                     .some(td => names.includes(td.textContent))""",
                arg=sorted(QUICK_STRATEGIES),
                timeout=60_000,
            )
            assert page.locator("#live").get_attribute("data-source") == "sse"
            assert page.locator("#live .live-run.alive").count() == 1
            assert page.inner_text("#live .live-total") == "42"
            assert page.inner_text("#live .slot-goal >> nth=0").strip()
            # file paths are relative to the project root
            assert page.inner_text("#live .slot-file >> nth=0") == "BankNat.v"
            done = int(page.inner_text("#live .live-done"))
            page.screenshot(path=str(ARTIFACTS / "dashboard-live-1.png"), full_page=True)
            # the CPU-share and memory charts draw the running command's trace, redrawn
            # as it goes (the page opened before the run had a sample: "no data yet" then)
            try:
                page.wait_for_function(
                    """() => ['cpu', 'memory'].every(k => {
                         const div = document.getElementById('chart-' + k);
                         return div && div.dataset.live === 'running'
                           && div.querySelectorAll('.scatterlayer .point').length >= 5; })""",
                    timeout=60_000,
                )
            except Exception as exc:
                raise AssertionError(_charts_state(page, dashboard, fill, log)) from exc
            points = page.evaluate("() => document.getElementById('chart-cpu').data[0].y.length")
            assert points >= 5
            assert page.locator("#chart-cpu .scatterlayer .point").count() >= 3
            assert "running" in (page.locator("#chart-cpu .gtitle").text_content() or "")
            assert "100%" in page.locator("#chart-cpu .ytick text").all_text_contents()
            assert page.locator("#chart-memory .scatterlayer .point").count() >= 3
            page.screenshot(path=str(ARTIFACTS / "dashboard-live-charts.png"), full_page=True)
            # the panel follows the run: more goals done, without reloading the page
            page.wait_for_function(
                "d => +document.querySelector('#live .live-done').textContent > d",
                arg=done,
                timeout=60_000,
            )
            assert int(page.inner_text("#live .live-done")) > done
            page.screenshot(path=str(ARTIFACTS / "dashboard-live-2.png"), full_page=True)

            assert fill.wait(timeout=180) == 0, log.read_text()
            # the run cleared its row: the panel says nothing runs
            page.wait_for_selector("#live-none", timeout=10_000)
            page.reload()
            assert page.inner_text("#files td >> nth=0") == "BankNat.v"
            for chart in ("solved", "cpu", "strategy"):
                page.wait_for_selector(f"#chart-{chart} .xtick text")
                assert page.locator(f"#chart-{chart} .ytick text").count() >= 2, chart
            ticks = page.locator("#chart-cpu .ytick text").all_text_contents()
            assert "100%" in ticks  # the share axis is in percent
            page.screenshot(path=str(ARTIFACTS / "dashboard-live-after.png"), full_page=True)
            browser.close()
    finally:
        if fill.poll() is None:
            os.killpg(fill.pid, signal.SIGTERM)
            fill.wait(timeout=30)


def _charts_state(page: Any, dashboard: str, fill: subprocess.Popen[bytes], log: Path) -> str:
    """What the page and the server showed when the charts did not follow the run."""
    charts = page.evaluate(
        """() => ['cpu', 'memory'].map(k => {
             const div = document.getElementById('chart-' + k);
             return [k, div ? div.dataset.live : 'no div', div ? div.className : '',
                     div ? div.querySelectorAll('.scatterlayer .point').length : -1]; })"""
    )
    with urllib.request.urlopen(dashboard + "/api/live", timeout=10) as response:
        runs = json.load(response)["runs"]
    seen = []
    for run in runs:
        trace = (run["state"].get("cpu") or {}).get("trace") or {}
        seen.append((run["run_id"], run["dead"], len(trace.get("t", []))))
    return (
        f"charts (key, data-live, class, points): {charts}; live runs (id, dead, trace samples): "
        f"{seen}; fill exit code {fill.poll()}; fill log tail: {log.read_text()[-2000:]}"
    )
