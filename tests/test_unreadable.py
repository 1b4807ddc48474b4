"""Unreadable input is bad input: one line naming the file, exit code 2, the rest goes on."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.backends import load_source
from proof_orchestrator.cli import app
from proof_orchestrator.errors import UnreadableSource

from .conftest import coqc_ok

runner = CliRunner()

GOOD = "Lemma good : forall n : nat, n = n.\nAdmitted.\n"
BAD = {
    "latin1.v": ("Lemma a : True.\nAdmitted.\n(* café *)\n".encode("latin-1"), "not UTF-8"),
    "binary.v": (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", "binary file"),
    "comment.v": (b"Lemma b : True.\nAdmitted.\n(* never closed\nLemma c : True.\n", "comment"),
}


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("latin1.v", "x.\n(* é *)\n".encode("latin-1"), "byte 0xe9 at offset 6 (line 2, byte 4"),
        ("binary.v", b"abc\x00def", "binary file (NUL byte at offset 3)"),
        ("comment.v", b"Lemma b : True.\n  (* (* *) never closed\n", "comment at line 2, column 3"),
        ("string.v", b'Definition s := "open.\n', "unterminated string at line 1, column 17"),
        ("open.lean", b"theorem t : True := by\n  /- open", "comment at line 2, column 3"),
    ],
)
def test_the_message_names_the_file_and_the_place(
    tmp_path: Path, name: str, data: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnreadableSource) as caught:
        load_source(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_fill_reports_each_unreadable_file_and_still_proves_the_good_one(tmp_path: Path) -> None:
    for name, (data, _) in BAD.items():
        (tmp_path / name).write_bytes(data)
    good = tmp_path / "good.v"
    good.write_text(GOOD, encoding="utf-8")
    result = runner.invoke(app, ["fill", str(tmp_path), "--profile", "0", "--budget", "5"])
    assert result.exit_code == 2, result.output
    complaints = [line for line in result.stderr.splitlines() if line.startswith("orch: ")]
    assert len(complaints) == len(BAD)
    for (name, (_, why)), line in zip(sorted(BAD.items()), sorted(complaints), strict=True):
        assert line.startswith(f"orch: {tmp_path / name}: ")
        assert why in line
    assert "Admitted." not in good.read_text(encoding="utf-8")
    assert coqc_ok(good)
    for name, (data, _) in BAD.items():
        assert (tmp_path / name).read_bytes() == data


def test_json_output_marks_the_file_unreadable_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.v"
    bad.write_bytes(BAD["latin1.v"][0])
    result = runner.invoke(app, ["fill", str(bad), "--json", "--profile", "0"])
    assert result.exit_code == 2
    assert '"status": "unreadable"' in result.stdout
    assert f"orch: {bad}: is not UTF-8" in result.stderr
