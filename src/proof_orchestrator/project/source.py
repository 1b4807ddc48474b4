"""Reading a user's source file, with errors that say which file and where.

A file that is binary, not UTF-8, or that the scanner cannot split (an
unterminated comment or string) raises :class:`UnreadableSource`, whose
message is one line naming the file and the position: the CLI prints it as
it is and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UnreadableSource

__all__ = ["line_and_column", "read_source"]

#: a NUL byte this early means a binary file, not source text
_BINARY_PROBE = 8192


def line_and_column(text: str | bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text`` (columns count characters or bytes)."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")  # one character per byte: offsets stay the same
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def read_source(path: Path) -> str:
    """The text of ``path``, decoded as UTF-8; :class:`UnreadableSource` when it is not text."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableSource(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    nul = data.find(b"\x00", 0, _BINARY_PROBE)
    if nul >= 0:
        raise UnreadableSource(
            f"{path}: is a binary file (NUL byte at offset {nul}), not Coq or Lean source"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = line_and_column(data, exc.start)
        raise UnreadableSource(
            f"{path}: is not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"(line {line}, byte {column} of the line); save the file as UTF-8"
        ) from exc
