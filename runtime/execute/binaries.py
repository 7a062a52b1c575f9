"""Running an allow-listed binary step: bounded environment, mapped credentials, no shell.

The program gets the policy's allow-listed variables and only the
credentials mapped to it (the provider that declares the credential says how
a program receives it). It runs as every step's program runs
(:meth:`RunServices.run_program`): confined where the system allows it, and
with the hardened configuration of :mod:`runtime.execute.githarden` for any
git it starts, itself included (no system or global config but the user's
identity, no program started by repository configuration, hooks off unless
the policy turns them on): ``git`` itself, the git ``gh repo clone`` runs, or
one a user-allowed build tool starts.
"""

from __future__ import annotations

import contextlib

from runtime.execute.outside import explain
from runtime.execute.services import RunServices
from runtime.provider import StepEnvironment, StepOutcome
from runtime.provider.run import ProgramResult


def child_environment(
    services: RunServices,
    credential: str | None,
    host: str | None,
    config_dir: str | None = None,
) -> dict[str, str]:
    """The policy's allow-listed variables, plus only the credentials mapped to this binary."""
    child = services.program_environment()
    if credential is not None and config_dir is not None:
        auth = services.auth
        child.update(
            auth.program_environment(credential, host or auth.default_host(credential), config_dir)
        )
    return child


def run_binary(
    path: str,
    binary: str,
    args: list[str],
    env: StepEnvironment,
    services: RunServices,
    credential: str | None = None,
    host: str | None = None,
) -> StepOutcome:
    # a mapped binary (gh) gets a config folder of its own for this step, never the caller's
    folder: contextlib.AbstractContextManager[str | None] = contextlib.nullcontext(None)
    if credential is not None:
        folder = services.scratch(binary)
    with folder as config_dir:
        child = child_environment(services, credential, host, config_dir)
        result = env.run_program([path, *args], child, config_dir)
    output = result.stdout
    if result.stderr:
        output = output + ("" if not output or output.endswith("\n") else "\n") + result.stderr
    outcome = StepOutcome(
        ok=result.exit_code == 0 and not result.timed_out,
        output=output,
        data={"stdout": result.stdout, "stderr": result.stderr},
        exit_code=result.exit_code,
        output_bytes=result.stdout_bytes + result.stderr_bytes,
        truncated=result.truncated,
        streamed=True,
    )
    if result.timed_out:
        outcome.error = f"timed out after {env.timeout:g} s; the process group was killed"
        outcome.hint = "raise the limit with --timeout SECONDS or timeout_seconds in a user policy"
    elif result.exit_code != 0:
        outcome.error = f"{binary} exited with code {result.exit_code}"
        if services.launcher.confined:
            outcome.error += confinement_note(result)
            hint = confinement_hint(binary, result)
            # the paths its args name that the sandbox does not show or lets it not write
            # (a write there fails with the program's own error, which says nothing of it)
            named = explain(args, services, result.stderr, services.redactor)
            if named is not None:
                outcome.error += named[0]
                hint = named[1] if hint in (None, _NOT_THERE) else f"{hint}; {named[1]}"
            outcome.hint = hint or outcome.hint
    return outcome


# the hint for a file that is not there: one that names the path replaces it
_NOT_THERE = (
    "the step runs confined: it reads only the policy's roots and system_paths "
    "(`runtime policy show`); a program or file outside them is not there"
)
# what a program prints when the kernel refused to execute something (git: "cannot exec
# 'sh': Permission denied"; the code inside the sandbox: "runtime-confine: cannot execute")
_EXEC_DENIED = ("runtime-confine: cannot execute", "cannot exec", "cannot run", "exec format")


def confinement_note(result: ProgramResult) -> str:
    """What the step's confinement refused, for its error: the first blocked connection."""
    if result.blocked:
        return f"; its network refused a connection: {result.blocked[0]}"
    return ""


def confinement_hint(binary: str, result: ProgramResult) -> str | None:
    """How to allow deliberately what a confined step was refused, if that shows."""
    if result.blocked:
        return (
            f"a confined step reaches only the hosts its program's profile and the policy name: "
            f"to allow one deliberately, add it to binary_hosts in a user policy "
            f"(binary_hosts: {{{binary}: [HOST]}})"
        )
    stderr = result.stderr
    missing = stderr.startswith("runtime-confine: cannot execute") and "No such file" in stderr
    if missing or stderr.startswith("bwrap:"):
        return _NOT_THERE
    if "Permission denied" in stderr and any(m in stderr for m in _EXEC_DENIED):
        return (
            f"the step runs confined: it may execute only {binary} and its profile's helpers, "
            "never a shell, an interpreter or a file the step can write (git runs a shell for "
            "aliases, hooks and local-path remotes); to admit a program deliberately, list "
            f"its absolute path in a user policy: admitted_helpers: {{{binary}: [PATH]}}"
        )
    return None
