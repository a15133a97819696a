"""The variables clients interpolate in a server entry, rewritten into toolscout's `${VAR}`.

VS Code, Cursor and Windsurf write `${env:NAME}`, `${input:id}`, `${workspaceFolder}` and more;
toolscout reads only `${VAR}` from its environment. `apply_strings` runs a rewrite over every value
a client interpolates; `vscode_variables` is the rewrite of the VS Code family.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolscout.client_configs.normalize import Draft, Entry

__all__ = ["VariableContext", "apply_strings", "input_env_name", "vscode_variables"]


def apply_strings(entry: Entry, convert: Callable[[str], str]) -> Entry:
    """The entry with `convert` applied to every value a client interpolates (not to keys)."""
    out: Entry = dict(entry)
    for key in ("command", "cwd", "url"):
        if isinstance(out.get(key), str):
            out[key] = convert(out[key])
    if "args" in out:
        out["args"] = [convert(a) for a in out["args"]]
    for key in ("env", "headers"):
        if key in out:
            out[key] = {k: convert(v) for k, v in out[key].items()}
    return out


_BRACED = re.compile(r"\$\{([^{}]*)\}")


def input_env_name(input_id: str) -> str:
    """A VS Code input id as an environment variable name: `api-key` and `apiKey` become `API_KEY`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", input_id)
    name = re.sub(r"[^A-Za-z0-9]+", "_", spaced).strip("_").upper()
    return name if name and not name[0].isdigit() else f"INPUT_{name}"


@dataclass(frozen=True)
class VariableContext:
    """What VS Code-style variables resolve to while one file is read."""

    project: Path | None = None
    inputs: Mapping[str, Mapping[str, Any]] | None = None  # None: the client has no `${input:...}`


def vscode_variables(text: str, ctx: VariableContext, draft: Draft, client: str) -> str:
    """Rewrite VS Code/Cursor/Windsurf variables into toolscout's `${VAR}` syntax.

    `${env:NAME}` becomes `${NAME}`; `${input:id}` becomes `${ID}` (with a note to
    set it); `${workspaceFolder}` becomes the project folder (or `${WORKSPACE_FOLDER}`
    with a note when the file belongs to no project); `${userHome}` becomes `${HOME}`;
    `${pathSeparator}` and `${/}` the separator. Other client variables are left as
    written, with a note, since toolscout cannot resolve them.
    """

    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        head, _, rest = body.partition(":")
        if head == "env" and rest:
            return f"${{{rest}}}"
        if head == "input" and rest and ctx.inputs is not None:
            return _input_reference(rest, ctx.inputs, draft)
        if body == "workspaceFolder":
            return _project_value(ctx.project, str, "WORKSPACE_FOLDER", draft)
        if body == "workspaceFolderBasename":
            return _project_value(ctx.project, lambda p: p.name, "WORKSPACE_FOLDER_BASENAME", draft)
        if body == "userHome":
            draft.note("`${userHome}` became `${HOME}`: toolscout reads it from its environment")
            return "${HOME}"
        if body in ("pathSeparator", "/"):
            return os.sep
        if ":" in body or body in ("cwd", "file", "fileDirname", "relativeFile", "workspaceRoot"):
            draft.note(f"`{match.group(0)}` is a {client} variable toolscout cannot resolve; it was left as written")
        return match.group(0)

    return _BRACED.sub(replace, text)


def _input_reference(input_id: str, inputs: Mapping[str, Mapping[str, Any]], draft: Draft) -> str:
    name = input_env_name(input_id)
    spec = inputs.get(input_id, {})
    description = spec.get("description")
    about = f" ({description})" if isinstance(description, str) and description else ""
    draft.note(f"VS Code prompted for input `{input_id}`{about}; set {name} in toolscout's environment instead")
    default = spec.get("default")
    if isinstance(default, str) and default and "}" not in default:
        return f"${{{name}:-{default}}}"
    return f"${{{name}}}"


_VARIABLE_OF = {"WORKSPACE_FOLDER": "workspaceFolder", "WORKSPACE_FOLDER_BASENAME": "workspaceFolderBasename"}


def _project_value(project: Path | None, pick: Callable[[Path], str], fallback: str, draft: Draft) -> str:
    if project is not None:
        value = pick(project)
        draft.note(f"`${{{_VARIABLE_OF[fallback]}}}` became {value}")
        return value
    draft.note(f"the file belongs to no project folder: set {fallback} to the folder the server should use")
    return f"${{{fallback}}}"
