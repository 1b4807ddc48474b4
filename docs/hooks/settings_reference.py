"""MkDocs hook: the settings reference, generated from the code at every build.

``docs/reference/settings.md`` holds the marker ``<!-- settings-reference -->``;
this hook replaces it with what the code says:

- the settings model, ``proof_orchestrator.config.Settings``: every field, its
  type and default, and its help (the field's metadata, set by
  ``config.setting``; the same text ``--help`` shows beside the flag);
- its environment variable (``proof_orchestrator.config.env_name``);
- the flag that sets it and the commands that take that flag, read from the
  ``orch`` command itself (the Typer app named in ``pyproject.toml``): an option
  counts as a setting's flag when it has the setting's name and its help names
  the setting's environment variable, as every flag made by
  ``cli/options.settings_flags`` does.

Nothing of this is committed as text, so the page cannot drift from the code.
Run ``python docs/hooks/settings_reference.py`` to print the generated part.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- settings-reference -->"
PAGE = "reference/settings.md"

def _helps(settings_class: type) -> dict[str, str]:
    """The help of each field, from its metadata."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(settings_class)}


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    subcommands = getattr(command, "commands", None)
    if subcommands:
        for name, sub in subcommands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield " ".join(path), command


def _flags(env_names: dict[str, str]) -> dict[str, dict[str, Any]]:
    """For each setting: its flag(s), the flag's help, and the commands that take it."""
    import typer

    from proof_orchestrator.cli import app

    found: dict[str, dict[str, Any]] = {}
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            env = env_names.get(param.name or "")
            if env is None or getattr(param, "param_type_name", "") != "option":
                continue
            help_text = getattr(param, "help", None) or ""
            if env not in help_text:
                continue  # an option of the same name that is not the setting
            entry = found.setdefault(
                param.name,
                {
                    "opts": [*param.opts, *param.secondary_opts],
                    # as the terminal shows it: rich's escapes removed
                    "help": help_text.replace("\\[", "["),
                    "commands": [],
                },
            )
            entry["commands"].append(path)
    return found


def _value(value: Any) -> str:
    if value == "":
        return '`""` (none)'
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The generated part of the settings page, as Markdown."""
    from proof_orchestrator import config

    fields = dataclasses.fields(config.Settings)
    defaults = config.Settings()
    comments = _helps(config.Settings)
    missing = [f.name for f in fields if not comments[f.name]]
    if missing:
        raise ValueError(
            "settings without a help in proof_orchestrator/config.py (setting(default, help); "
            f"the docs are generated from it): {', '.join(missing)}"
        )
    env_names = {f.name: config.env_name(f.name) for f in fields}
    flags = _flags(env_names)

    out = [
        "| setting | default | environment variable | flag | meaning |",
        "|---|---|---|---|---|",
    ]
    for f in fields:
        flag = flags.get(f.name)
        flag_text = " / ".join(f"`{o}`" for o in flag["opts"]) if flag else "(none)"
        out.append(
            f"| [`{f.name}`](#{f.name.replace('_', '-')}) | {_value(getattr(defaults, f.name))} "
            f"| `{env_names[f.name]}` | {flag_text} | {_cell(comments[f.name])} |"
        )
    out.append("")
    for f in fields:
        flag = flags.get(f.name)
        default = getattr(defaults, f.name)
        out += [
            f"### `{f.name}` {{#{f.name.replace('_', '-')}}}",
            "",
            comments[f.name][:1].upper() + comments[f.name][1:] + ".",
            "",
            f"- type: `{type(default).__name__}`, default {_value(default)}",
            f"- environment: `{env_names[f.name]}`",
            f"- file: `{f.name} = ...` in `orch.toml`, or in `[tool.orch]` of `pyproject.toml`",
        ]
        if flag:
            opts = " / ".join(f"`{o}`" for o in flag["opts"])
            commands = ", ".join(f"`orch {c}`" for c in flag["commands"])
            out += [
                f"- flag: {opts} on {commands}",
                f"- the flag's help: {flag['help']}",
            ]
        else:
            out.append("- flag: none (environment or file only)")
        if f.name == "allow_import":
            from proof_orchestrator.backends import backends

            known = sorted({n for b in backends() for n in b.importable})
            out.append(f"- known imports (the backends'): {', '.join(f'`{n}`' for n in known)}")
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **_: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}")
    return markdown.replace(MARKER, render())


if __name__ == "__main__":
    print(render())
