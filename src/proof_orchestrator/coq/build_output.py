"""What ``coqc`` and ``coqdep`` print, read: the one parser of both.

``coqc`` prints each message under a header, ``File "./theories/x.v", line
12, characters 4-19:``, then ``Error: ...`` or ``Warning: ...``. Warnings
have headers too, so "the first header" is not "the error": every reader of
coqc's output (the build, the whole-file check, the repair) goes through
:func:`first_error`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CoqcError", "CoqcMessage", "first_error", "messages", "parse_coqdep"]

#: the header of one message of coqc: ``File "./theories/x.v", line 12, characters 0-5:``
_HEADER = re.compile(
    r'^File "(?P<file>[^"]+)", line (?P<line>\d+), characters (?P<start>\d+)-(?P<end>\d+):\s*$',
    re.M,
)
#: the longest error message kept (a type error can print pages)
_MESSAGE_CAP = 400


@dataclass(frozen=True, slots=True)
class CoqcMessage:
    """One located message of coqc: where it is, and its text (``Error: ...``)."""

    file: str
    #: 1-based line
    line: int
    #: byte offsets in that line
    start: int
    end: int
    body: str

    @property
    def is_error(self) -> bool:
        return self.body.startswith("Error")


@dataclass(frozen=True, slots=True)
class CoqcError:
    """The first real error of a coqc run: where (when coqc said) and the message, one line."""

    file: str | None
    line: int | None
    #: byte offset in the line where the error starts
    start: int | None
    message: str


def messages(output: str) -> list[CoqcMessage]:
    """Every located message of ``output``, in order."""
    headers = list(_HEADER.finditer(output))
    found: list[CoqcMessage] = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(output)
        found.append(
            CoqcMessage(
                file=header["file"],
                line=int(header["line"]),
                start=int(header["start"]),
                end=int(header["end"]),
                body=output[header.end() : end].strip(),
            )
        )
    return found


def first_error(output: str) -> CoqcError:
    """The first real error in ``coqc`` output.

    Warnings (``Warning: ...`` after a ``File`` header) are skipped, however
    many. An ``Error`` without a location has no file and line; without any
    ``Error`` the last non-blank line stands for the error.
    """
    for message in messages(output):
        if message.is_error:
            text = " ".join(message.body.removeprefix("Error:").split())
            return CoqcError(message.file, message.line, message.start, _cap(text))
    found = re.search(r"^Error:?(.*)", output, re.M | re.S)
    if found:
        return CoqcError(None, None, None, _cap(" ".join(found.group(1).split())))
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return CoqcError(None, None, None, _cap(lines[-1] if lines else "failed without a message"))


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
