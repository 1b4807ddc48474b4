"""Shared fixtures. Tests run the real coqtop/coqc: `make test` installs them."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from proof_orchestrator.ledger import Ledger

from .postgres import fresh_database, postgres_server

REPO = Path(__file__).resolve().parent.parent
BANK = REPO / "bench" / "bank"


@pytest.fixture(scope="session", autouse=True)
def _coq_is_installed() -> None:
    if shutil.which("coqtop") is None or shutil.which("coqc") is None:
        pytest.exit(
            "coqtop/coqc are not on PATH. Run `make test` (it installs Coq as root) or "
            "`apt-get install coq libcoq-hammer eprover cvc4`.",
            returncode=3,
        )


@pytest.fixture
def write_v(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a .v file into the test's own folder."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A PostgreSQL server on loopback for the whole test session (skipped if not installed)."""
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def any_ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh ledger URL on each backend the ledger supports."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    server: str = request.getfixturevalue("postgres_server_url")
    return fresh_database(server)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    yield ledger
    ledger.close()


def coqc_ok(path: Path, *flags: str) -> bool:
    """Does ``path`` compile with coqc? (Compiled in a scratch copy; the folder stays clean.)"""
    scratch = path.parent / ".coqc-check"
    scratch.mkdir(exist_ok=True)
    copy = scratch / path.name
    shutil.copyfile(path, copy)
    done = subprocess.run(["coqc", *flags, str(copy)], capture_output=True, text=True, check=False)
    shutil.rmtree(scratch)
    return done.returncode == 0
