"""The options several commands share.

The settings' flags are made from :class:`~..config.Settings` by
:func:`settings_flags`: one flag per field, named like it, with the field's
help, its environment variable and its default. A command names the settings
it takes and receives the values given on its command line as one mapping,
``flags``, which :func:`~.common.load_command_settings` reads.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

import typer

from ..config import Settings, env_name

__all__ = [
    "ALL_SETTINGS",
    "AllowDirty",
    "LedgerOpt",
    "PushOpt",
    "SettingFlags",
    "settings_flags",
]

#: the values of the settings' flags a command was given (None: not given)
SettingFlags = Mapping[str, Any]

#: every setting: the flags of ``fill``, ``bg``, ``bank``, ``repair`` and ``mcp``
ALL_SETTINGS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Settings))

#: where ``--help`` lists the settings' flags, apart from the command's own options
PANEL = "Settings (also ORCH_* variables, orch.toml or \\[tool.orch] in pyproject.toml)"

Command = Callable[..., None]


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return repr(value) if value == "" else str(value)


def setting_option(name: str, extra: Iterable[str] = (), note: str = "") -> inspect.Parameter:
    """The keyword parameter that makes the flag of setting ``name`` (default None: not given).

    ``extra`` are more names for the same flag (a command's older spelling); ``note``
    says what the setting means for this command, before the setting's own help.
    """
    field = next(f for f in dataclasses.fields(Settings) if f.name == name)
    default = field.default
    kind = type(default)
    dashed = name.replace("_", "-")
    flag = field.metadata.get("flag") or (
        f"--{dashed}/--no-{dashed}" if kind is bool else f"--{dashed}"
    )
    # rich reads a lowercase word in brackets as markup: escape the text's own brackets
    help_text = field.metadata["help"].replace("[", "\\[")
    if note:
        help_text = f"{note}. The setting: {help_text}"
    option = typer.Option(
        flag,
        *extra,
        help=f"{help_text} [{env_name(name)}, {_shown(default)}]",
        rich_help_panel=PANEL,
        show_default=False,
    )
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[kind | None, option],
    )


def settings_flags(
    names: Iterable[str] = ALL_SETTINGS,
    *,
    extra: Mapping[str, tuple[str, ...]] | None = None,
    notes: Mapping[str, str] | None = None,
) -> Callable[[Command], Command]:
    """Give a command a flag for each setting in ``names``.

    ``extra`` gives a setting's flag more names, ``notes`` a sentence on what it
    means for this command (see :func:`setting_option`).

    The command declares a keyword parameter ``flags`` (a :data:`SettingFlags`)
    instead of one parameter per setting; Typer sees the command's own
    parameters followed by the settings' flags. A setting's name may not be one
    of the command's own parameters.
    """
    chosen = tuple(names)
    unknown = set(chosen) - set(ALL_SETTINGS)
    if unknown:
        raise ValueError(f"not settings: {', '.join(sorted(unknown))}")

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "flags"]
        if "flags" not in signature.parameters:
            raise TypeError(f"{command.__name__} needs a keyword parameter flags: SettingFlags")
        clash = {p.name for p in own} & set(chosen)
        if clash:
            raise TypeError(f"{command.__name__} has parameters named like settings: {clash}")
        options = [
            setting_option(name, (extra or {}).get(name, ()), (notes or {}).get(name, ""))
            for name in chosen
        ]

        @functools.wraps(command)
        def with_flags(*args: Any, **kwargs: Any) -> None:
            given = {name: kwargs.pop(name, None) for name in chosen}
            command(*args, flags=given, **kwargs)

        parameters = [*own, *options]
        with_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_flags.__annotations__ = {
            **{p.name: p.annotation for p in parameters},
            "return": signature.return_annotation,
        }
        return with_flags

    return decorate


LedgerOpt = Annotated[str | None, typer.Option("--db", help="ledger URL or SQLite path")]
PushOpt = Annotated[
    bool, typer.Option("--push", help="with --git: push the branches and open pull requests")
]
AllowDirty = Annotated[
    bool, typer.Option("--allow-dirty", help="with --git: run on a tree with changes")
]
