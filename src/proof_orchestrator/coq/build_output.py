"""What ``coqc`` and ``coqdep`` print, read: the first real error, the file graph."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["first_error", "parse_coqdep"]

#: the header of one message of coqc: ``File "./theories/x.v", line 12, characters 0-5:``
_HEADER = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+), characters [^\n]*:\s*$', re.M)
#: the longest error message kept (a type error can print pages)
_MESSAGE_CAP = 400


def first_error(output: str) -> tuple[str | None, int | None, str]:
    """The first real error in ``coqc`` output: (its file, its line, its message on one line).

    Warnings (``Warning: ...`` after a ``File`` header) are skipped, however
    many. Without any ``Error`` the last non-blank line stands for the error.
    """
    headers = list(_HEADER.finditer(output))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(output)
        body = output[header.end() : end].strip()
        if body.startswith("Error"):
            message = " ".join(body.removeprefix("Error:").split())
            return header["file"], int(header["line"]), _cap(message)
    found = re.search(r"^Error:?(.*)", output, re.M | re.S)
    if found:
        return None, None, _cap(" ".join(found.group(1).split()))
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return None, None, _cap(lines[-1] if lines else "failed without a message")


def _cap(message: str) -> str:
    return message if len(message) <= _MESSAGE_CAP else message[: _MESSAGE_CAP - 1] + "…"


def parse_coqdep(output: str) -> dict[Path, set[Path]]:
    """``x.vo x.glob ...: x.v y.vo`` lines -> {x.v: {y.v}} (``.vio`` lines ignored)."""
    graph: dict[Path, set[Path]] = {}
    for line in output.splitlines():
        targets, colon, sources = line.partition(": ")
        if not colon or not targets.split() or not targets.split()[0].endswith(".vo"):
            continue
        words = sources.split()
        if not words or not words[0].endswith(".v"):
            continue
        source = Path(words[0]).resolve()
        graph.setdefault(source, set()).update(
            Path(w).with_suffix(".v").resolve() for w in words[1:] if w.endswith(".vo")
        )
    return graph
