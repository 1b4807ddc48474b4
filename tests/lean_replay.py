"""A stand-in for the Lean REPL that answers with recorded real replies.

    python tests/lean_replay.py TRANSCRIPT.in [TRANSCRIPT.in ...] [fault options]

It reads requests from stdin exactly as the REPL does (a JSON object, then a
blank line) and answers each with the reply the real REPL gave to the same
request in the transcripts (``NAME.in`` / ``NAME.expected.out`` pairs from
``shared/lean-repl-transcripts``), printed verbatim and followed by a blank
line. Requests are matched by their JSON value, so key order and spacing do not
matter; a request recorded several times gets its recorded replies in turn
(the last one repeats). A tactic that was never recorded is answered as a
tactic that throws (``{"message": "Lean error: ..."}``): the stand-in does
not know whether it would work, so it never pretends it does. Any other
unrecorded request gets the REPL's refusal, ``{"message": "replay: ..."}``.
``--log FILE`` appends every request to FILE, one JSON value per line.

Fault options make the stand-in misbehave on the N-th request (1-based), to
exercise the client's error paths: ``--hang-at N`` (read it, never answer),
``--cut-at N`` (print half the reply, then exit), ``--garbage-at N`` (answer
with text that is not JSON), ``--exit-at N`` (exit without answering). With
``--once MARKER`` a fault happens only while MARKER does not exist, and creates
it: a replacement process started afterwards behaves.

This file is test tooling: nothing in the product imports it.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_SEPARATOR = re.compile(r"\n[ \t]*\n")


def split_blocks(text: str) -> list[str]:
    """Blank-line separated blocks, as the REPL frames requests and replies."""
    return [block.strip() for block in _SEPARATOR.split(text) if block.strip()]


def parse_request(text: str) -> Any:
    """A request's JSON value as the REPL reads it.

    The REPL joins the lines of a request without their line breaks (so a raw
    line break inside a string disappears: the recorded ``invalid_line_break``
    reply complains about ``bysorry``). Raises ``json.JSONDecodeError``.
    """
    return json.loads(text.replace("\r", "").replace("\n", ""))


def request_key(text: str) -> str:
    """Requests that the REPL reads as the same JSON value share a key."""
    try:
        value = parse_request(text)
    except json.JSONDecodeError:
        return "raw:" + text.strip()
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _parsed_or_none(text: str) -> dict[str, Any]:
    try:
        value = parse_request(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def load(paths: list[Path]) -> dict[str, list[str]]:
    replies: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        answers = path.with_name(path.name.removesuffix(".in") + ".expected.out")
        requests = split_blocks(path.read_text(encoding="utf-8"))
        recorded = split_blocks(answers.read_text(encoding="utf-8"))
        if len(requests) != len(recorded):
            raise SystemExit(f"{path}: {len(requests)} requests but {len(recorded)} replies")
        for request, reply in zip(requests, recorded, strict=True):
            replies[request_key(request)].append(reply)
    return replies


def read_request(stdin: Any) -> str | None:
    lines: list[str] = []
    while True:
        line = stdin.readline()
        if not line:
            return "".join(lines) if "".join(lines).strip() else None
        if not line.strip():
            if lines:
                return "".join(lines)
            continue
        lines.append(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="+", type=Path)
    for kind in ("hang", "cut", "garbage", "exit"):
        parser.add_argument(f"--{kind}-at", type=int, default=0, metavar="N")
    parser.add_argument("--log", type=Path, default=None, help="append each request (JSON) here")
    parser.add_argument("--once", type=Path, default=None, metavar="MARKER")
    parser.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM (a stuck REPL)")
    args = parser.parse_args()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    replies = load(args.transcripts)
    served: dict[str, int] = defaultdict(int)
    out = sys.stdout
    count = 0
    while (request := read_request(sys.stdin)) is not None:
        count += 1
        faulty = args.once is None or not args.once.exists()
        fault = (
            next(
                (
                    f
                    for f in ("hang", "cut", "garbage", "exit")
                    if getattr(args, f"{f}_at") == count
                ),
                None,
            )
            if faulty
            else None
        )
        if fault is not None and args.once is not None:
            args.once.touch()
        key = request_key(request)
        parsed = _parsed_or_none(request)
        recorded = replies.get(key)
        if recorded:
            reply = recorded[min(served[key], len(recorded) - 1)]
            served[key] += 1
        elif "tactic" in parsed:
            # an unrecorded tactic: answered the way the REPL answers a tactic that throws
            reply = json.dumps({"message": "Lean error:\nreplay: this tactic was not recorded"})
        else:
            reply = json.dumps({"message": f"replay: no recorded reply for {request.strip()}"})
        if args.log is not None:
            with args.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(parsed, ensure_ascii=False) + "\n")
        if fault == "hang":
            while True:
                time.sleep(3600)
        if fault == "exit":
            return 0
        if fault == "cut":
            out.write(reply[: max(1, len(reply) // 2)])
            out.flush()
            return 0
        if fault == "garbage":
            reply = '{"env": 0, oops this is not json'
        out.write(reply + "\n\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
