"""What a candidate Lean proof script may contain.

The whole-file check and the ``#print axioms`` audit are the real
guarantees; this gate comes first and refuses, before anything is compiled,
every script that could admit a goal or leave the declaration:

* identifiers that admit a goal: ``sorry``, ``admit``, ``stop`` (it closes
  every goal with ``sorry``), ``sorryAx``;
* anything that declares or changes the environment: ``axiom``, ``theorem``,
  ``def``, ``#...`` commands, ``end``, ``namespace``, ``section``, ``open``
  outside a term, ``set_option`` at the start of a line (``set_option ... in``
  inside a tactic is allowed), ``attribute``, ``macro``, ``elab``, ``syntax``;
* unbalanced comment markers (a ``/-`` in a script could swallow the rest of
  the file);
* a line that starts in column 0 of the script after the first one is fine
  (the splicer indents it), but a script must not be empty.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import ScriptRejected, SourceSyntaxError
from .holes import lex

__all__ = ["FORBIDDEN_LEAN", "check_lean_script"]

#: identifiers refused anywhere in a script (outside strings and comments)
FORBIDDEN_LEAN = frozenset(
    {
        "sorry",
        "sorryAx",
        "admit",
        "stop",
        "axiom",
        "theorem",
        "lemma",
        "def",
        "instance",
        "abbrev",
        "example",
        "namespace",
        "section",
        "end",
        "attribute",
        "macro",
        "macro_rules",
        "elab",
        "syntax",
        "notation",
        "infix",
        "opaque",
        "implemented_by",
        "extern",
        "unsafe",
        "import",
    }
)


def check_lean_script(sentences: Sequence[str]) -> tuple[str, ...]:
    """Return the script's tactics (stripped), or raise :class:`ScriptRejected`."""
    script = tuple(s.strip("\n").rstrip() for s in sentences if s.strip())
    if not script:
        raise ScriptRejected("an empty script proves nothing")
    text = "\n".join(script)
    if "/-" in text or "-/" in text or "--" in text:
        raise ScriptRejected(f"comments are not allowed in a proof script: {text[:200]!r}")
    try:
        tokens = lex(text)
    except SourceSyntaxError as exc:
        raise ScriptRejected(f"the script does not lex: {exc}") from exc
    for token in tokens:
        word = token.text.rsplit(".", 1)[-1]
        if token.text in FORBIDDEN_LEAN or word in {"sorry", "sorryAx", "admit"}:
            raise ScriptRejected(f"{token.text!r} is never allowed in a proof script: {text!r}")
        if token.text.startswith("#"):
            raise ScriptRejected(f"commands are not allowed in a proof script: {text!r}")
    if re.search(r"^\s*set_option\b(?!.*\bin\b)", text, re.M):
        raise ScriptRejected(f"set_option is only allowed as `set_option ... in`: {text!r}")
    return script
