"""The options several commands share (a flag each, named like the setting it sets)."""

from __future__ import annotations

from typing import Annotated

import typer

CpuTarget = Annotated[
    float | None, typer.Option(help="fraction of the machine to use [ORCH_CPU_TARGET, 0.5]")
]
MaxLight = Annotated[int | None, typer.Option(help="quick sessions at once [ORCH_MAX_LIGHT, 2]")]
MaxHeavy = Annotated[int | None, typer.Option(help="heavy sessions at once [ORCH_MAX_HEAVY, 1]")]
Profile = Annotated[
    int | None, typer.Option(help="0 quick tactics, 1 + search, 2 + learned [ORCH_PROFILE, 1]")
]
Seed = Annotated[int | None, typer.Option(help="random seed of the bandit [ORCH_SEED, 0]")]
BanditOpt = Annotated[str | None, typer.Option(help="thompson or ucb1 [ORCH_BANDIT]")]
Portfolio = Annotated[
    int | None, typer.Option(help="strategies raced per goal [ORCH_PORTFOLIO, 2]")
]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        help="CPU seconds per goal for its first pass, all strategies and the orchestrator "
        "together: cheap tactics first, the expensive strategies share the rest; a pass "
        "that runs out is revisited at twice the budget [ORCH_BUDGET, 10]"
    ),
]
BudgetCap = Annotated[
    float | None,
    typer.Option(
        help="largest per-goal budget: a goal that failed at it is parked (set it to "
        "--budget for a single pass) [ORCH_BUDGET_CAP, 160]"
    ),
]
ProverMemory = Annotated[
    int | None, typer.Option(help="memory cap of one prover, MiB [ORCH_PROVER_MEMORY_MB]")
]
MemoryBudget = Annotated[
    int | None, typer.Option(help="memory of all provers, MiB [ORCH_MEMORY_BUDGET_MB]")
]
ExecutorOpt = Annotated[
    str | None, typer.Option(help="where attempts run: local or ray [ORCH_EXECUTOR, local]")
]
RayAddress = Annotated[
    str | None,
    typer.Option(help="Ray cluster: auto, HOST:PORT, or empty for a local one [ORCH_RAY_ADDRESS]"),
]
AllowImport = Annotated[
    str | None,
    typer.Option(
        help="imports a proof may add, comma-separated: lia (`From Coq Require Import Lia.`, "
        "the default), hammer-tactics (`From Hammer Require Import Tactics.`, for proofs only "
        "CoqHammer's sauto/hauto rebuild); '' for none [ORCH_ALLOW_IMPORT]"
    ),
]
UseLlm = Annotated[
    bool | None,
    typer.Option(
        "--llm/--no-llm",
        help="add the llm strategies: the model server and model come from the \\[llm] table "
        "of orch.toml or ORCH_LLM_BASE_URL and ORCH_LLM_MODEL; `orch doctor` checks them "
        "[ORCH_USE_LLM]",
    ),
]
LlmBudget = Annotated[
    float | None, typer.Option(help="cap the run's model spend, USD [ORCH_LLM_BUDGET_USD]")
]
TacticTimeout = Annotated[
    float | None, typer.Option(help="timeout of one tactic, s [ORCH_TACTIC_TIMEOUT, 1]")
]
StrictHoles = Annotated[
    bool | None,
    typer.Option(
        "--strict-holes/--no-strict-holes",
        help="refuse a proof that rests on other holes (Admitted/sorry goals of the project) "
        "instead of writing it closed modulo them [ORCH_STRICT_HOLES, off]",
    ),
]
StrictAxioms = Annotated[
    bool | None,
    typer.Option(
        "--strict-axioms/--no-strict-axioms",
        help="Coq: refuse a proof that rests on an axiom of a loaded library (classic, "
        "functional_extensionality, the Reals' axioms...) unless the file's own finished "
        "proofs already rest on it; by default an axiom a loaded library declares in its "
        "source is trusted [ORCH_STRICT_AXIOMS, off]",
    ),
]
BuildCommand = Annotated[
    str | None,
    typer.Option(
        "--build",
        help="the project's own build command, e.g. 'make -j2', run in its root before the "
        "search instead of orch compiling what the files need into .orch/build [ORCH_BUILD]",
    ),
]
LedgerOpt = Annotated[str | None, typer.Option("--db", help="ledger URL or SQLite path")]
PushOpt = Annotated[
    bool, typer.Option("--push", help="with --git: push the branches and open pull requests")
]
AllowDirty = Annotated[
    bool, typer.Option("--allow-dirty", help="with --git: run on a tree with changes")
]
