"""The orchestrator's own folder in a project (``.orch/``), kept out of version control."""

from __future__ import annotations

from pathlib import Path

__all__ = ["STATE_DIR", "make_state_dir"]

#: name of the folder that holds the ledger, PR bodies and other state of ``orch``
STATE_DIR = ".orch"


def make_state_dir(folder: Path) -> Path:
    """Create ``folder`` (and its parents) and, if it is an ``.orch`` folder, its ``.gitignore``.

    The ``.gitignore`` holds ``*``, as pytest, mypy and ruff do for their caches,
    so ``git status`` stays clean in a project where ``orch`` ran. An existing
    ``.gitignore`` is left as the user made it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for part in (folder, *folder.parents):
        if part.name == STATE_DIR:
            ignore = part / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# made by orch: its state stays out of version control\n*\n")
            break
    return folder
