"""``runtime agent init``: the project files that wire AI assistants to runtime.

For each assistant, what its documentation names as a project's files:

| assistant | MCP server entry | shell hook |
| --- | --- | --- |
| Claude Code | ``.mcp.json`` (``mcpServers``) | ``.claude/settings.json`` (``hooks.PreToolUse``, ``Bash``) |
| Cursor | ``.cursor/mcp.json`` (``mcpServers``) | ``.cursor/hooks.json`` (``beforeShellExecution``) |
| Gemini CLI | ``.gemini/settings.json`` (``mcpServers``) | the same file (``hooks.BeforeTool``, ``run_shell_command``) |
| Codex CLI | ``.codex/config.toml`` (``[mcp_servers.runtime]``) | ``.codex/hooks.json`` (``hooks.PreToolUse``, ``Bash``) |
| GitHub Copilot | ``.mcp.json`` (the CLI), ``.vscode/mcp.json`` (``servers``, VS Code) | ``.github/hooks/runtime.json`` (``preToolUse``) |

and ``AGENTS.md``, a section between markers that says how to act through runtime.
The MCP entry runs ``runtime mcp serve`` over stdio; the hook runs ``runtime agent
hook ASSISTANT``.

Merging never changes what the user wrote: a JSON file keeps every key, value and
order it has, and gets only what is missing (our server under its key, our hook
appended to its event's list unless a hook that runs ``runtime agent hook`` is
there); a server the user already named ``runtime`` is kept as it is, and said so. A
TOML file gets its table appended when it has none; ``AGENTS.md`` keeps everything
outside the markers. A file whose content is already what it should be is not
written. A file that is not valid JSON (TOML) is refused at its line and column
before anything is written.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import UsageError

ASSISTANTS = ("claude", "codex", "copilot", "cursor", "gemini")
SERVER = "runtime"
MCP_COMMAND = {"command": "runtime", "args": ["mcp", "serve"]}
BEGIN = "<!-- BEGIN runtime agent init: this section is rewritten by `runtime agent init` -->"
END = "<!-- END runtime agent init -->"
SECTION = """## Acting through runtime

This project's AI assistants act through `runtime`: each shell command is one
`runtime ...` command, optionally piped into the read-only filters the policy
lists (`runtime policy show`); a hook refuses any other command and says what to
run instead. Every command is checked against the policy and recorded in the
audit log (`runtime audit tail`).

- `runtime capability list` shows what this project can do, and `runtime
  capability execute NAME --input KEY=VALUE` runs one (`plan` first shows what
  it would do).
- Single operations: `runtime files read|write|list ...`, `runtime github ...`,
  `runtime command run BINARY ARGS...` for a binary the policy allows.
- `runtime -o json ...` prints one JSON document; pipe it into `jq` to pick a value.
- Over MCP, the `runtime` server (`runtime mcp serve`) offers the same as tools.
"""


@dataclass
class Change:
    """One file: what is there (None: missing), what init writes, and notes."""

    path: str
    before: str | None
    after: str
    notes: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        return "unchanged" if self.before == self.after else "update"

    def diff(self) -> str:
        if self.before == self.after:
            return ""
        before = (self.before or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            before,
            self.after.splitlines(keepends=True),
            "/dev/null" if self.before is None else f"a/{self.path}",
            f"b/{self.path}",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def hook_command(assistant: str) -> str:
    return f"runtime agent hook {assistant}"


def plan(root: Path, chosen: tuple[str, ...] = ASSISTANTS) -> list[Change]:
    """What init would write under ``root`` for the ``chosen`` assistants, every file
    read and checked first (:class:`UsageError` at a malformed one's line and column)."""
    files: dict[str, Change] = {}

    def json_file(path: str) -> tuple[Change, Any]:
        change = files.get(path)
        if change is None:
            before = _read(root / path)
            change = Change(path, before, before or "")
            files[path] = change
        doc = _parse_json(path, change.after) if change.after.strip() else {}
        if not isinstance(doc, dict):
            raise UsageError(
                f"{path}:1:1: the file is not a JSON object; nothing was written",
                hint=f"make {path} a JSON object (or move it away) and run runtime agent init again",
            )
        return change, doc

    def update(change: Change, doc: dict[str, Any]) -> None:
        change.after = _dump(doc, change.before)

    for assistant in chosen:
        if assistant in ("claude", "copilot"):
            change, doc = json_file(".mcp.json")
            _server(change, doc, "mcpServers", dict(MCP_COMMAND))
            update(change, doc)
        if assistant == "claude":
            change, doc = json_file(".claude/settings.json")
            _hook_group(change, doc, ["hooks", "PreToolUse"], "Bash", assistant)
            update(change, doc)
        if assistant == "cursor":
            change, doc = json_file(".cursor/mcp.json")
            _server(change, doc, "mcpServers", dict(MCP_COMMAND))
            update(change, doc)
            change, doc = json_file(".cursor/hooks.json")
            doc.setdefault("version", 1)
            _hook_entry(
                change,
                doc,
                ["hooks", "beforeShellExecution"],
                {"command": hook_command(assistant)},
                assistant,
            )
            update(change, doc)
        if assistant == "gemini":
            change, doc = json_file(".gemini/settings.json")
            _server(change, doc, "mcpServers", dict(MCP_COMMAND))
            _hook_group(change, doc, ["hooks", "BeforeTool"], "run_shell_command", assistant)
            update(change, doc)
        if assistant == "codex":
            change, doc = json_file(".codex/hooks.json")
            _hook_group(change, doc, ["hooks", "PreToolUse"], "Bash", assistant)
            update(change, doc)
            files[".codex/config.toml"] = _codex_config(root)
        if assistant == "copilot":
            change, doc = json_file(".vscode/mcp.json")
            _server(change, doc, "servers", {"type": "stdio", **MCP_COMMAND})
            update(change, doc)
            change, doc = json_file(".github/hooks/runtime.json")
            doc.setdefault("version", 1)
            _hook_entry(
                change,
                doc,
                ["hooks", "preToolUse"],
                {"type": "command", "bash": hook_command(assistant), "timeoutSec": 30},
                assistant,
            )
            update(change, doc)
    files["AGENTS.md"] = _agents_md(root)
    return list(files.values())


def write(root: Path, changes: list[Change]) -> list[str]:
    """Write the changed files (each replaced atomically, keeping its mode); their paths."""
    from runtime.home.layout import atomic_write

    written = []
    for change in changes:
        if change.action == "unchanged":
            continue
        target = root / change.path
        mode = None
        if change.before is not None:
            mode = os.stat(target).st_mode & 0o7777
        atomic_write(target, change.after.encode("utf-8"), mode)
        written.append(change.path)
    return written


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(
            f"cannot read {path}: {exc.strerror or exc}; nothing was written",
            hint="make it readable, or move it away, and run runtime agent init again",
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UsageError(
            f"{path}:{line}:{column}: the file is not UTF-8 text; nothing was written",
            hint="save it as UTF-8 and run runtime agent init again",
        ) from None


def _parse_json(path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}:{exc.lineno}:{exc.colno}: the file is not valid JSON ({exc.msg}); "
            "nothing was written",
            hint=f"fix {path} (runtime agent init merges into it, keeping what you wrote) "
            "and run it again",
        ) from None


def _dump(doc: dict[str, Any], before: str | None) -> str:
    """``doc`` as JSON, indented as the file was (two spaces for a new one)."""
    if before is not None and not before.strip():
        before = None
    indent: int | str = 2
    for line in (before or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            indent = len(lead) if set(lead) == {" "} else lead
            break
    text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
    if before is not None and json.loads(before) == doc:
        return before  # nothing to add: the file stays byte for byte
    return text


def _container(change: Change, doc: dict[str, Any], keys: list[str], kind: type) -> Any:
    """``doc[keys[0]][keys[1]]...``, made where missing; :class:`UsageError` where the
    user's file has something else there."""
    node: Any = doc
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        if key not in node:
            node[key] = kind() if last else {}
        node = node[key]
        want = kind if last else dict
        if not isinstance(node, want):
            where = ".".join(keys[: depth + 1])
            raise UsageError(
                f"{change.path}: {where} is not a JSON {'array' if want is list else 'object'}; "
                "nothing was written",
                hint=f"fix {where} in {change.path} and run runtime agent init again",
            )
    return node


def _server(change: Change, doc: dict[str, Any], key: str, entry: dict[str, Any]) -> None:
    servers = _container(change, doc, [key], dict)
    if SERVER not in servers:
        servers[SERVER] = entry
    elif servers[SERVER] != entry:
        change.notes.append(
            f"{change.path}: kept your {key}.{SERVER} as it is (init would run "
            f"`{' '.join([entry['command'], *entry['args']])}`)"
        )


def _hook_entry(
    change: Change, doc: dict[str, Any], keys: list[str], entry: dict[str, Any], assistant: str
) -> None:
    hooks = _container(change, doc, keys, list)
    if not any(_runs_guard(item, assistant) for item in hooks):
        hooks.append(entry)


def _hook_group(
    change: Change, doc: dict[str, Any], keys: list[str], matcher: str, assistant: str
) -> None:
    """A ``{matcher, hooks: [{type: command, command}]}`` group, as Claude Code, Codex
    and Gemini CLI configure a tool's hooks."""
    hooks = _container(change, doc, keys, list)
    if any(_runs_guard(item, assistant) for item in hooks):
        return
    handler: dict[str, Any] = {"type": "command", "command": hook_command(assistant)}
    if assistant == "gemini":
        handler = {"name": "runtime-guard", **handler}
    hooks.append({"matcher": matcher, "hooks": [handler]})


def _runs_guard(item: Any, assistant: str) -> bool:
    """Whether a hook entry (or a group of them) already runs this assistant's guard."""
    if isinstance(item, dict):
        for key in ("command", "bash"):
            if item.get(key) == hook_command(assistant):
                return True
        inner = item.get("hooks")
        if isinstance(inner, list):
            return any(_runs_guard(i, assistant) for i in inner)
    return False


def _codex_config(root: Path) -> Change:
    import tomllib

    path = ".codex/config.toml"
    before = _read(root / path)
    text = before or ""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        import re

        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, column = (where.group(1), where.group(2)) if where else ("1", "1")
        why = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise UsageError(
            f"{path}:{line}:{column}: the file is not valid TOML ({why}); nothing was written",
            hint=f"fix {path} and run runtime agent init again",
        ) from None
    change = Change(path, before, text)
    servers = doc.get("mcp_servers", {})
    if isinstance(servers, dict) and SERVER in servers:
        if servers[SERVER] != MCP_COMMAND:
            change.notes.append(f"{path}: kept your mcp_servers.{SERVER} as it is")
        return change
    table = f'[mcp_servers.{SERVER}]\ncommand = "runtime"\nargs = ["mcp", "serve"]\n'
    if text and not text.endswith("\n"):
        text += "\n"
    change.after = text + ("\n" if text else "") + table
    return change


def _agents_md(root: Path) -> Change:
    path = "AGENTS.md"
    before = _read(root / path)
    text = before or ""
    section = f"{BEGIN}\n{SECTION}{END}\n"
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if not begins and not ends:
        glue = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        return Change(path, before, text + glue + section)
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        if len(begins) > 1:
            stray = begins[1]
        elif len(ends) > 1 or not begins:
            stray = ends[1] if len(ends) > 1 else ends[0]
        else:  # a BEGIN without its END, or an END before the BEGIN
            stray = begins[0] if not ends else ends[0]
        raise UsageError(
            f"{path}:{stray + 1}:1: the markers of runtime's section are not one BEGIN "
            "followed by one END; nothing was written",
            hint=f"keep one pair of the markers in {path} (or none) and run runtime agent init "
            "again",
        )
    after = "".join(lines[: begins[0]]) + section + "".join(lines[ends[0] + 1 :])
    return Change(path, before, after)
