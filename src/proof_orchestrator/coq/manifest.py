"""Whether a file's compiled form is up to date: ``.orch/build/manifest.json`` and ``make``'s rule.

A file's ``.vo`` is looked for in two places:

* ``.orch/build/<the file's path>.vo``, where orch compiles: up to date when
  the manifest holds the SHA-256 of the source it was built from and the
  stamps (size, mtime) of the ``.vo`` files it was built against, and these
  are still the ones on disk;
* the user's own ``theories/x.vo`` (``make`` put it there): up to date when it
  is newer than its source and every dependency it needs is the user's and
  older, as ``make`` would judge.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..project.statedir import make_state_dir
from ..provers.build import FileBuild

__all__ = ["BuildManifest", "Choice", "stamp"]

_MANIFEST = "manifest.json"

#: one file's entry: the source's SHA-256, the output's stamp, the stamps of its deps' outputs
Entry = dict[str, object]


def stamp(path: Path) -> str | None:
    """``size:mtime_ns`` of ``path`` (None when it is not there)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return f"{stat.st_size}:{stat.st_mtime_ns}"


@dataclass(slots=True)
class Choice:
    """The compiled form chosen for one file and whether it is up to date."""

    state: FileBuild
    output: Path
    #: the output is the user's (``theories/x.vo``), not orch's
    users: bool = False


class BuildManifest:
    """``.orch/build/manifest.json``: what each ``.vo`` orch built was built from.

    ``output_of`` says where orch builds a source (None: outside the root, or
    the user's command builds); ``overrides`` are texts built in place of the
    files on disk (their SHA-256 counts, and the user's ``.vo`` never does).
    """

    def __init__(
        self,
        root: Path,
        build_dir: Path,
        output_of: Callable[[Path], Path | None],
        overrides: dict[Path, str],
    ) -> None:
        self.root = root
        self.build_dir = build_dir
        self._output_of = output_of
        self._overrides = overrides

    # -- the file -----------------------------------------------------------------------

    def read(self) -> dict[str, Entry]:
        try:
            data = json.loads((self.build_dir / _MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save(self, entries: dict[str, Entry]) -> None:
        make_state_dir(self.build_dir)
        scratch = self.build_dir / f".{_MANIFEST}.{os.getpid()}"
        scratch.write_text(json.dumps(entries, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(scratch, self.build_dir / _MANIFEST)

    def key(self, source: Path) -> str:
        return (
            str(source.relative_to(self.root)) if source.is_relative_to(self.root) else str(source)
        )

    def source_sha(self, source: Path) -> str:
        text = self._overrides.get(source)
        data = text.encode() if text is not None else source.read_bytes()
        return hashlib.sha256(data).hexdigest()

    def record(
        self,
        entries: dict[str, Entry],
        source: Path,
        output: Path,
        deps: set[Path],
        chosen: dict[Path, Choice],
    ) -> None:
        """``output`` was just built from ``source`` against ``deps``: write it down."""
        entries[self.key(source)] = {
            "source": self.source_sha(source),
            "stamp": stamp(output),
            "deps": self.dep_stamps(deps, chosen),
        }
        self.save(entries)

    def remove_ours(self, entries: dict[str, Entry], source: Path, ours: Path) -> None:
        """Delete orch's build of ``source`` (it would shadow the user's, up to date)."""
        for suffix in (".vo", ".vok", ".vos", ".glob"):
            with contextlib.suppress(OSError):
                ours.with_suffix(suffix).unlink()
        if entries.pop(self.key(source), None) is not None:
            self.save(entries)

    # -- freshness ----------------------------------------------------------------------

    @staticmethod
    def dep_stamps(deps: Iterable[Path], chosen: dict[Path, Choice]) -> dict[str, str | None]:
        return {str(chosen[d].output): stamp(chosen[d].output) for d in sorted(deps) if d in chosen}

    def assess(
        self,
        source: Path,
        deps: set[Path],
        chosen: dict[Path, Choice],
        entries: dict[str, Entry],
    ) -> Choice:
        """Where ``source``'s up-to-date compiled form is, if anywhere (its deps assessed)."""
        users = source.with_suffix(".vo")
        ours = self._output_of(source)
        deps_fresh = all(chosen[d].state is FileBuild.BUILT for d in deps if d in chosen)
        if ours is not None and ours.exists():
            entry = entries.get(self.key(source), {})
            fresh = (
                entry.get("source") == self.source_sha(source)
                and entry.get("stamp") == stamp(ours)
                and entry.get("deps") == self.dep_stamps(deps, chosen)
            )
            if fresh and deps_fresh:
                return Choice(FileBuild.BUILT, ours)
        if users.exists() and source not in self._overrides:
            mtime = users.stat().st_mtime_ns
            own_deps = all(
                chosen[d].users and chosen[d].output.stat().st_mtime_ns <= mtime
                for d in deps
                if d in chosen
            )
            if mtime >= source.stat().st_mtime_ns and own_deps and deps_fresh:
                return Choice(FileBuild.BUILT, users, users=True)
        if ours is not None and ours.exists():
            return Choice(FileBuild.STALE, ours)
        if users.exists():
            return Choice(FileBuild.STALE, users, users=True)
        return Choice(FileBuild.MISSING, ours or users, users=ours is None)

    def assess_all(self, order: list[Path], graph: dict[Path, set[Path]]) -> dict[Path, Choice]:
        """Every file's choice, in dependency ``order``."""
        entries = self.read()
        chosen: dict[Path, Choice] = {}
        for source in order:
            chosen[source] = self.assess(source, graph.get(source, set()), chosen, entries)
        return chosen
