"""``runtime agent hook ASSISTANT``: the pre-execution guard an assistant's shell hook runs.

It reads the assistant's event on stdin (:mod:`runtime.agent.assistants`), decides the
shell command (:mod:`runtime.agent.shell`) with the policy's ``agents.shell_filters``
(:mod:`runtime.agent.settings`), records the decision in the audit log (an
``agent.hook`` record), and prints the decision as the assistant's protocol asks. It
fails closed: empty or malformed input, a policy or ``config.yaml`` that is refused,
an audit log that cannot be written, and any failure of its own are each a denial
that says why. It exits 0 whenever it printed a decision (some assistants ignore the
output of a hook that exits otherwise, and one lets the command run then), and 2 for
a command line it does not know (which those that read exit codes take as a block).

It runs on every shell command an assistant issues, so it starts before typer:
``runtime/console.py`` calls :func:`main` for ``runtime agent hook ...`` before the
command line is loaded, and this module imports the standard library, tree-sitter and
the lean modules of runtime it needs only (ARCHITECTURE.md, "Measured choices").
"""

from __future__ import annotations

import os
import sys

from runtime.agent import assistants

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runtime.agent.shell import Verdict

# More than any command an assistant writes; the rest is not read.
MAX_INPUT = 1024 * 1024
USAGE = f"""Usage: runtime agent hook ASSISTANT

  The shell-hook guard: reads an assistant's pre-execution event on stdin, allows
  the shell command only when it is one `runtime ...` invocation (optionally piped
  into the policy's agents.shell_filters), records the decision in the audit log,
  and prints it in the assistant's protocol. `runtime agent init` configures it.

  ASSISTANT: {", ".join(assistants.ASSISTANTS)}
"""


def main(argv: list[str], environ: Mapping[str, str] | None = None) -> int:
    """Run the guard for ``argv`` (the words after ``runtime agent hook``)."""
    env = os.environ if environ is None else environ
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if len(argv) != 1 or argv[0] not in assistants.ASSISTANTS:
        got = f"unknown assistant {argv[0]!r}" if argv else "missing ASSISTANT"
        if len(argv) > 1 and argv[0] in assistants.ASSISTANTS:
            got = f"unexpected argument {argv[1]!r}"
        sys.stderr.write(
            f"runtime agent hook: {got}\n"
            f"  hint: run `runtime agent hook ASSISTANT`, ASSISTANT one of "
            f"{', '.join(assistants.ASSISTANTS)}\n"
        )
        return 2
    assistant = argv[0]
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    except (OSError, ValueError):  # no stdin at all
        raw = b""
    try:
        text = _decide(assistant, raw, env)
    except Exception as exc:  # fail closed: a failure of the guard is a denial
        from runtime.agent.shell import Verdict

        text = assistants.render(
            assistant,
            Verdict(
                False,
                "internal-error",
                f"the guard failed ({type(exc).__name__})",
                "report this; until it is fixed the guard refuses every command",
            ),
        )
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError:
        return 0
    return 0


def _decide(assistant: str, raw: bytes, env: Mapping[str, str]) -> str:
    from runtime.agent import settings
    from runtime.agent.shell import Verdict

    call: assistants.Call | None = None
    verdict: Verdict | None = None
    if len(raw) > MAX_INPUT:
        verdict = Verdict(
            False, "malformed", "the hook's input is over 1 MiB", "run a shorter command"
        )
    else:
        try:
            call = assistants.parse(assistant, raw)
        except assistants.Malformed as exc:
            verdict = Verdict(
                False, "malformed", str(exc), "configure the hook with runtime agent init"
            )
        else:
            if call.command is None:
                return ""  # another tool's call: not the guard's to decide
    home: str | None = None
    found: dict[str, Any] = {}
    try:
        home = settings.home_folder(env)
        found = settings.load(env, home)
    except settings.SettingsError as exc:
        if verdict is None:
            verdict = Verdict(False, "policy", str(exc), exc.hint or "fix the file it names")
    if verdict is None:
        assert call is not None and call.command is not None
        verdict = _judge(call.command, call.cwd, found)
    if home is None:
        # no Home, so no audit log: a decision that cannot be recorded is a denial
        verdict = Verdict(False, "audit", "the decision cannot be recorded: " + verdict.reason)
        return assistants.render(assistant, verdict)
    try:
        _record(assistant, call, verdict, env, home, found)
    except Exception as exc:
        verdict = Verdict(
            False,
            "audit",
            f"the decision cannot be recorded in the audit log ({exc})",
            "make Runtime Home writable, or set RUNTIME_HOME",
        )
    return assistants.render(assistant, verdict)


def _judge(command: str, cwd: str, found: dict[str, Any]) -> Verdict:
    from runtime.agent.shell import judge, parser

    verdict = judge(command, cwd, found["shell_filters"], parser())
    allowed = found.get("allowed_binaries") or []
    if not verdict.allowed and "runtime command run" in verdict.hint and allowed:
        verdict.hint += f" (the policy allows {', '.join(allowed)})"
    return verdict


def _record(
    assistant: str,
    call: assistants.Call | None,
    verdict: Verdict,
    env: Mapping[str, str],
    home: str,
    found: dict[str, Any],
) -> None:
    """Append the ``agent.hook`` record of ``verdict``: secrets of the environment and
    token shapes redacted, a value over 4,096 characters kept as its digest."""
    import time

    from runtime.execute.auditfile import LogFile, stamp
    from runtime.redact import Redactor
    from runtime.text import json_dumps

    record: dict[str, Any] = {
        "event": "agent.hook",
        "time": stamp(time.time()),
        "assistant": assistant,
        "decision": "allow" if verdict.allowed else "deny",
    }
    if not verdict.allowed:
        record["rule"] = verdict.rule
        record["reason"] = verdict.reason
    if call is not None:
        record["command"] = call.command
        record["cwd"] = call.cwd
        if call.session is not None:
            record["session"] = call.session
    record["pid"] = os.getpid()
    redactor = Redactor()
    redactor.add_environment(env)
    line = json_dumps(record)
    if redactor.may_change_json(line):
        record = redactor.data(record)
        line = json_dumps(record)
    if len(line) > 4096:
        from runtime.execute.audit import LONG_VALUE, digest

        record = {
            k: digest(v) if isinstance(v, str) and len(v) > LONG_VALUE else v
            for k, v in record.items()
        }
        line = json_dumps(record)
    folder = os.path.join(home, "audit")
    os.makedirs(folder, exist_ok=True)
    log = LogFile(os.path.join(folder, "audit.jsonl"))
    try:
        max_bytes = int(found.get("audit_max_bytes", 10 * 1024 * 1024))
        log.append((line + "\n").encode("utf-8"), max_bytes, int(found.get("audit_keep", 5)))
    finally:
        log.close()
