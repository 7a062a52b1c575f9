"""Each assistant's shell-hook protocol: what its hook gets on stdin, what it reads back.

Every adapter follows its assistant's documented protocol (the fixtures in
``tests/data/agent_hooks/`` are recorded inputs, each with a note on the page it
follows):

- Claude Code, ``PreToolUse`` of its ``Bash`` tool: ``tool_input.command`` and
  ``cwd`` in; ``hookSpecificOutput.permissionDecision`` (``allow`` or ``deny``) and
  ``permissionDecisionReason`` out.
- Codex CLI, ``PreToolUse`` (``Bash``): the same input; only ``deny`` is honoured
  (an ``allow`` without a rewritten input is an error there), so an allowed command
  gets no output, which is Codex's "no objection".
- Gemini CLI, ``BeforeTool`` of ``run_shell_command``: ``tool_input.command`` (and
  ``tool_input.dir_path`` or ``directory``, relative to the project) in; ``decision``
  (``allow``/``deny``) and ``reason`` out.
- Cursor, ``beforeShellExecution``: ``command`` and ``cwd`` in; ``permission``,
  ``user_message`` and ``agent_message`` out (only ``deny`` is reliable there; an
  allowed command gets ``allow``).
- GitHub Copilot CLI, ``preToolUse`` (every tool): ``toolName`` and ``toolArgs`` (a
  JSON string) in, or, configured as ``PreToolUse``, ``tool_name`` and ``tool_input``;
  ``permissionDecision`` and ``permissionDecisionReason`` out, of which only ``deny``
  is processed: an allowed command gets no output.

A call of a tool other than the shell (a hook configured more widely than for the
shell) gets no output: the guard has no say there.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runtime.agent.shell import Verdict

ASSISTANTS = ("claude", "codex", "copilot", "cursor", "gemini")
SOURCE = "runtime agent hook"


class Malformed(Exception):
    """The hook's input is not what the assistant's protocol sends."""


class Call:
    """One shell command the assistant is about to run (``command`` None: the call is of
    another tool, not the guard's to decide)."""

    __slots__ = ("command", "cwd", "session", "tool")

    def __init__(self, command: str | None, cwd: str, session: str | None, tool: str) -> None:
        self.command = command
        self.cwd = cwd
        self.session = session
        self.tool = tool


def parse(assistant: str, raw: bytes) -> Call:
    """The call ``raw`` (the hook's stdin) describes; :class:`Malformed` if it does not."""
    if not raw.strip():
        raise Malformed(
            "the hook got no input: the assistant passes the tool call as JSON on stdin"
        )
    try:
        event = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Malformed(f"the hook's input is not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        line, col = getattr(exc, "lineno", 1), getattr(exc, "colno", 1)
        why = getattr(exc, "msg", str(exc))
        raise Malformed(f"the hook's input is not JSON (at {line}:{col}: {why})") from None
    if not isinstance(event, dict):
        raise Malformed("the hook's input is not a JSON object")
    cwd = _text(event, "cwd", required=False) or os.getcwd()
    if assistant == "cursor":
        _event(event, "beforeShellExecution")
        roots = event.get("workspace_roots")
        if not _text(event, "cwd", required=False) and isinstance(roots, list) and roots:
            cwd = roots[0] if isinstance(roots[0], str) else cwd
        return Call(_text(event, "command"), cwd, _session(event, "conversation_id"), "shell")
    if assistant == "copilot":
        return _copilot(event, cwd)
    if assistant == "gemini":
        _event(event, "BeforeTool")
        tool = _text(event, "tool_name")
        if tool != "run_shell_command":
            return Call(None, cwd, _session(event, "session_id"), tool)
        args = _object(event, "tool_input")
        folder = _text(args, "dir_path", required=False) or _text(args, "directory", required=False)
        where = os.path.join(cwd, folder) if folder else cwd
        return Call(_text(args, "command"), where, _session(event, "session_id"), tool)
    # claude, codex: the same PreToolUse shape
    _event(event, "PreToolUse")
    tool = _text(event, "tool_name")
    if tool != "Bash":
        return Call(None, cwd, _session(event, "session_id"), tool)
    args = _object(event, "tool_input")
    return Call(_text(args, "command"), cwd, _session(event, "session_id"), tool)


def _copilot(event: dict[str, Any], cwd: str) -> Call:
    if "toolName" in event:  # camelCase: preToolUse
        tool = _text(event, "toolName")
        args: Any = event.get("toolArgs")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                raise Malformed("the hook's toolArgs is not JSON") from None
        session = _session(event, "sessionId")
    else:  # configured as PreToolUse: the VS Code shape
        _event(event, "PreToolUse")
        tool = _text(event, "tool_name")
        args = event.get("tool_input")
        session = _session(event, "session_id")
    if tool != "bash":
        return Call(None, cwd, session, tool)
    if not isinstance(args, dict):
        raise Malformed("the hook's tool arguments are not a JSON object")
    return Call(_text(args, "command"), cwd, session, tool)


def _event(event: dict[str, Any], expected: str) -> None:
    name = event.get("hook_event_name")
    if name is not None and name != expected:
        raise Malformed(
            f"the hook got a {name!r} event; configure it for {expected} (runtime agent init)"
        )


def _text(event: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = event.get(key)
    if isinstance(value, str):
        return value
    if value is None and not required:
        return ""
    raise Malformed(f"the hook's input has no string {key!r}")


def _object(event: dict[str, Any], key: str) -> dict[str, Any]:
    value = event.get(key)
    if not isinstance(value, dict):
        raise Malformed(f"the hook's input has no object {key!r}")
    return value


def _session(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) else None


def render(assistant: str, verdict: Verdict | None) -> str:
    """What the hook prints for ``verdict`` (None: a tool that is not the guard's);
    "" for no output."""
    if verdict is None:
        return ""
    if verdict.allowed:
        said = f"{SOURCE}: one runtime command; runtime checks it against the policy and audits it"
        if assistant == "claude":
            return _json(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": said,
                    }
                }
            )
        if assistant == "cursor":
            return _json({"permission": "allow"})
        if assistant == "gemini":
            return _json({"decision": "allow"})
        return ""  # codex, copilot: no output is their "no objection"
    reason = f"{SOURCE} refused this command: {verdict.reason}."
    told = reason + (f" Instead: {verdict.hint}." if verdict.hint else "")
    if assistant in ("claude", "codex"):
        return _json(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": told,
                }
            }
        )
    if assistant == "cursor":
        return _json({"permission": "deny", "user_message": reason, "agent_message": told})
    if assistant == "gemini":
        return _json({"decision": "deny", "reason": told})
    return _json({"permissionDecision": "deny", "permissionDecisionReason": told})


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc) + "\n"
