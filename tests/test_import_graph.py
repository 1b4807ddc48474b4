"""The package's import graph: no cycle, and the neutral core imports no prover code.

Every module of ``proof_orchestrator`` is parsed (not imported) with ``ast``.
Every ``import`` counts, at module level and inside functions alike (an import
moved into a function to dodge a cycle is still a cycle), and relative imports
are resolved. An edge goes to the most specific module named: ``from .project
import holes`` is an edge to ``proof_orchestrator.project.holes``, ``from
.ledger import Ledger`` one to the ``proof_orchestrator.ledger`` package.
"""

from __future__ import annotations

import ast
import functools
import graphlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import proof_orchestrator

PACKAGE = "proof_orchestrator"
ROOT = Path(proof_orchestrator.__file__).parent

#: the packages that speak to one prover: its syntax, script gate, holes,
#: sessions, verifier and strategies
PROVER_PACKAGES = ("coq", "lean")
#: other modules that speak to a prover (none: the backends registry is the seam's one door)
PROVER_MODULES: tuple[str, ...] = ()
#: the neutral core: it imports neither prover package, not even through others
NEUTRAL_CORE = (
    "errors",
    "goals",
    "config",
    "ledger",
    "scheduler",
    "search",
    "provers",
    "strategies",
    "project",
    "llm",
)
#: the modules outside ``coq/`` and ``lean/`` that may import a prover package directly
#: (the backend registry and two commands; the package's public surface is neutral)
PROVER_IMPORTERS = (
    "backends",
    "cli.lean",
    "cli.doctor",
)
#: at most this many modules at the package root, and no module longer than this
ROOT_MODULES = 6
MAX_LINES = 600


def module_name(path: Path) -> str:
    """``.../proof_orchestrator/ledger/store.py`` -> ``proof_orchestrator.ledger.store``."""
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    """Every module of the package (migration scripts included), by dotted name."""
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imported(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> Iterator[str]:
    """The package modules that the imports anywhere in ``tree`` (module ``name``) name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = name.split(".")
                # a module's own package is level 1; a package's __init__ is its own anchor
                drop = node.level - 1 if is_package else node.level
                base = ".".join(anchor[: len(anchor) - drop])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            # `import a.b.c` where only `a.b` is ours still names `a.b`
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith(PACKAGE) and target != name:
                yield target


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its body)."""
    modules = package_modules()
    names = set(modules)
    return {
        name: set(
            imported(
                ast.parse(path.read_text(encoding="utf-8"), str(path)),
                name,
                path.name == "__init__.py",
                names,
            )
        )
        for name, path in modules.items()
    }


def reachable(graph: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or not, with one import chain to it."""
    chains: dict[str, list[str]] = {start: [start]}
    todo = [start]
    while todo:
        here = todo.pop()
        for there in sorted(graph[here]):
            if there not in chains:
                chains[there] = [*chains[here], there]
                todo.append(there)
    del chains[start]
    return chains


def test_the_walker_sees_function_level_and_relative_imports() -> None:
    source = (
        "import os\n"
        "from . import base\n"
        "from ..ledger import Ledger\n"
        "import proof_orchestrator.provers.base\n"
        "def f():\n"
        "    from ..scheduler.governor import CpuGovernor\n"
    )
    modules = set(package_modules())
    found = set(imported(ast.parse(source), f"{PACKAGE}.strategies.search", False, modules))
    assert found == {
        f"{PACKAGE}.strategies.base",
        f"{PACKAGE}.ledger",
        f"{PACKAGE}.provers.base",
        f"{PACKAGE}.scheduler.governor",
    }
    in_init = set(imported(ast.parse("from .store import X"), f"{PACKAGE}.ledger", True, modules))
    assert in_init == {f"{PACKAGE}.ledger.store"}


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    with pytest.raises(graphlib.CycleError) as caught:
        graphlib.TopologicalSorter(graph).prepare()
    cycle = caught.value.args[1]
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {"a", "b", "c"}


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 50, "the walker found too few modules"
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        pytest.fail("import cycle: " + " -> ".join(exc.args[1]))


def in_package(module: str, package: str) -> bool:
    """``module`` is ``proof_orchestrator.<package>`` or one of its submodules."""
    name = f"{PACKAGE}.{package}"
    return module == name or module.startswith(f"{name}.")


def prover_modules(graph: dict[str, set[str]]) -> set[str]:
    """Every module of the prover packages, and the other prover modules."""
    found = {m for m in graph if any(in_package(m, p) for p in PROVER_PACKAGES)}
    return found | {f"{PACKAGE}.{m}" for m in PROVER_MODULES}


def test_the_prover_packages_exist() -> None:
    graph = import_graph()
    for package in PROVER_PACKAGES:
        inside = [m for m in graph if in_package(m, package)]
        assert len(inside) > 5, f"{package}/ holds too few modules: {inside}"
    assert {f"{PACKAGE}.{m}" for m in PROVER_MODULES} <= set(graph)


def subpackage(module: str) -> str:
    """The first-level room of ``module`` (``run`` for ``proof_orchestrator.run.worker``);
    a module at the package root is its own room."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The rooms (first-level subpackages and root modules) and the rooms each imports."""
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = subpackage(module)
        rooms.setdefault(here, set())
        rooms[here] |= {subpackage(t) for t in targets if subpackage(t) != here}
    # the package's __init__ re-exports the public surface: it is nobody's room
    rooms.pop("", None)
    for targets in rooms.values():
        targets.discard("")
    return rooms


def test_the_rooms_have_no_import_cycle() -> None:
    """No cycle between subpackages either (``agents -> coq -> ledger -> agents``)."""
    try:
        graphlib.TopologicalSorter(room_graph(import_graph())).prepare()
    except graphlib.CycleError as exc:
        pytest.fail("cycle between rooms: " + " -> ".join(exc.args[1]))


def test_a_cycle_between_rooms_is_found() -> None:
    """The room rule can fail: ``ledger`` importing ``run`` closes a cycle."""
    graph = dict(import_graph())
    graph[f"{PACKAGE}.ledger"] = {*graph[f"{PACKAGE}.ledger"], f"{PACKAGE}.run.worker"}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(room_graph(graph)).prepare()


def test_only_the_seam_imports_the_prover_packages() -> None:
    """Outside ``coq/`` and ``lean/`` only the backend registry and two commands import
    a prover package; the engine, the workflows, the agents and
    ``project/`` reach Coq and Lean through the seam."""
    graph = import_graph()
    importers = sorted(
        module.removeprefix(PACKAGE).lstrip(".")
        for module, targets in graph.items()
        if not any(in_package(module, p) for p in PROVER_PACKAGES)
        and any(in_package(t, p) for t in targets for p in PROVER_PACKAGES)
    )
    assert len(importers) <= 5, importers
    assert set(importers) <= set(PROVER_IMPORTERS), importers


def test_the_house_is_small_rooms() -> None:
    """At most six modules at the package root; no module over 600 lines."""
    root = [p.name for p in ROOT.glob("*.py")]
    assert len(root) <= ROOT_MODULES, root
    long = {
        module_name(p): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


@pytest.mark.parametrize("core", NEUTRAL_CORE)
def test_the_neutral_core_imports_no_prover_module(core: str) -> None:
    """The core reaches neither ``coq`` nor ``lean`` (nor ``tools``), not even
    through others."""
    graph = import_graph()
    prover = prover_modules(graph)
    starts = [m for m in graph if in_package(m, core)]
    assert starts
    for start in starts:
        for target, chain in reachable(graph, start).items():
            assert target not in prover, f"{start} imports a prover module: {' -> '.join(chain)}"


@pytest.mark.parametrize(("package", "other"), [("coq", "lean"), ("lean", "coq")])
def test_one_prover_package_does_not_import_the_other(package: str, other: str) -> None:
    graph = import_graph()
    for start in (m for m in graph if in_package(m, package)):
        for target, chain in reachable(graph, start).items():
            assert not in_package(target, other), f"{start} imports {other}: {' -> '.join(chain)}"


def test_the_walker_sees_an_import_of_a_prover_package() -> None:
    """The rule can fail: a module importing ``coq`` reaches a prover module."""
    graph = dict(import_graph())
    graph[f"{PACKAGE}.goals"] = {*graph[f"{PACKAGE}.goals"], f"{PACKAGE}.coq.syntax"}
    assert f"{PACKAGE}.coq.syntax" in reachable(graph, f"{PACKAGE}.goals")
    assert f"{PACKAGE}.coq.syntax" in prover_modules(graph)


def test_nothing_outside_the_command_line_imports_it() -> None:
    """``cli/`` is a leaf: the commands call the package, never the other way round."""
    cli = f"{PACKAGE}.cli"
    graph = import_graph()
    for module, targets in graph.items():
        if module == cli or module.startswith(f"{cli}."):
            continue
        inside = sorted(t for t in targets if t == cli or t.startswith(f"{cli}."))
        assert not inside, f"{module} imports {inside}"


#: the one module that starts child processes (process group, memory cap, timeout)
PROCESS_LAUNCHER = f"{PACKAGE}.provers.process"
#: functions that start a process without the launcher
_PROCESS_STARTERS = frozenset(
    {
        "create_subprocess_exec",
        "create_subprocess_shell",
        "subprocess_exec",
        "subprocess_shell",
        "system",
        "popen",
        "fork",
        "forkpty",
        "posix_spawn",
        "posix_spawnp",
        *(f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
        *(f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
    }
)


def process_starts(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each place in ``tree`` that imports :mod:`subprocess` or starts a
    process with something other than the launcher (``asyncio.create_subprocess_exec``,
    ``os.system``, ``os.fork``...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "subprocess":
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] == "subprocess":
                yield node.lineno, f"from {node.module} import ..."
            elif node.module == "asyncio" and any(a.name == "subprocess" for a in node.names):
                yield node.lineno, "from asyncio import subprocess"
            elif node.module in ("os", "asyncio", "pty") and any(
                a.name in _PROCESS_STARTERS or a.name == "spawn" for a in node.names
            ):
                yield node.lineno, f"from {node.module} import a process starter"
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else ""
            owner = (
                func.value.id
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                else ""
            )
            if name in _PROCESS_STARTERS and (owner in ("os", "asyncio") or "subprocess" in name):
                yield node.lineno, f"{owner or '...'}.{name}()"
            elif owner == "pty" and name == "spawn":
                yield node.lineno, "pty.spawn()"


def test_the_process_check_sees_every_way_to_start_a_process() -> None:
    """The rule can fail: each of these starts a process without the launcher."""
    source = (
        "import subprocess\n"
        "from subprocess import run\n"
        "import asyncio, os\n"
        "async def f(loop):\n"
        "    await asyncio.create_subprocess_exec('coqc')\n"
        "    await loop.subprocess_exec(object, 'coqc')\n"
        "    os.system('make')\n"
        "    os.execvp('coqtop', ['coqtop'])\n"
        "x: asyncio.subprocess.Process | None = None\n"
    )
    found = sorted(line for line, _ in process_starts(ast.parse(source)))
    assert found == [1, 2, 5, 6, 7, 8]


def test_only_the_launcher_starts_processes() -> None:
    """Every child process starts through ``provers/process.py`` (its own process group,
    the memory cap, a timeout): no ``subprocess`` and no other process starter elsewhere."""
    offenders = [
        f"{name}:{line}: {what}"
        for name, path in package_modules().items()
        if name != PROCESS_LAUNCHER
        for line, what in process_starts(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    ]
    assert not offenders, offenders


#: the calls that reach an attribute by a name written as a string
REFLECTIVE_CALLS = ("getattr", "hasattr", "setattr", "delattr")


def class_attributes(tree: ast.AST) -> set[str]:
    """The attribute names the classes of ``tree`` define: their methods and properties,
    their class-level fields (annotated or assigned) and what their methods assign to
    ``self.<name>``."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for item in cls.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(item.name)
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
            elif isinstance(item, ast.Assign):
                names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        for node in ast.walk(cls):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            names |= {
                t.attr
                for t in targets
                if isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            }
    return names


def in_prover_package(path: Path) -> bool:
    return path.relative_to(ROOT).parts[0] in PROVER_PACKAGES


@functools.cache
def backend_specific_names() -> frozenset[str]:
    """The attribute names only the classes of ``coq/`` and ``lean/`` define: a name that
    no class outside them (the seam's protocols, the engine's records) declares is one a
    neutral room can only know about by knowing a prover (Lean's ``decl_name``, the Coq
    builder's ``override``). Dunder names are Python's, not a backend's."""
    prover: set[str] = set()
    neutral: set[str] = set()
    for path in ROOT.rglob("*.py"):
        names = class_attributes(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        (prover if in_prover_package(path) else neutral).update(names)
    return frozenset(n for n in prover - neutral if not n.startswith("__"))


def reflective_uses(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """(line, call, name) for every ``getattr(x, "name", ...)``-like call in ``tree``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in REFLECTIVE_CALLS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            yield node.lineno, node.func.id, node.args[1].value


def backend_specific_reflection(sources: dict[str, str]) -> list[str]:
    """``module:line call("name")`` for each reflective use of a backend-specific name in
    ``sources`` (module name -> its text)."""
    specific = backend_specific_names()
    return [
        f"{module}:{line} {call}({name!r})"
        for module, text in sorted(sources.items())
        for line, call, name in reflective_uses(ast.parse(text))
        if name in specific
    ]


def test_the_backend_specific_names_are_found() -> None:
    """Lean's ``decl_name`` and the Coq builder's ``override`` are backend-specific; the
    seam's own words (``goal``, ``verifier``, ``builder``) are not."""
    specific = backend_specific_names()
    assert {"decl_name", "override", "proof_opener"} <= specific
    assert not {"goal", "verifier", "builder", "join_script", "name", "text"} & specific


def test_a_reflective_use_of_a_backend_name_is_found() -> None:
    """The rule can fail: ``getattr(hole, "decl_name", "")`` in the engine is a leak, and
    ``hasattr(builder, "override")`` in a workflow too; ``getattr(x, "goal")`` is not."""
    found = backend_specific_reflection(
        {
            "run.example": 'name = getattr(hole, "decl_name", "") or hole.goal.name\n',
            "workflows.example": 'if hasattr(builder, "override"):\n    pass\n',
            "run.neutral": 'goal = getattr(hole, "goal")\n',
        }
    )
    assert found == [
        "run.example:1 getattr('decl_name')",
        "workflows.example:1 hasattr('override')",
    ]


def test_no_room_outside_the_provers_reaches_a_backend_name_by_reflection() -> None:
    """Outside ``coq/`` and ``lean/``, nothing reads a backend's own attribute through
    ``getattr``/``hasattr``: what the engine needs of a backend is in the seam's
    protocols (:mod:`proof_orchestrator.provers.backend`), typed."""
    sources = {
        module.removeprefix(PACKAGE).lstrip("."): path.read_text(encoding="utf-8")
        for module, path in package_modules().items()
        if not in_prover_package(path)
    }
    assert backend_specific_reflection(sources) == []
