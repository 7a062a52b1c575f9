"""Running an allow-listed binary step: bounded environment, mapped credentials, no shell.

The program gets the policy's allow-listed variables and only the
credentials mapped to it; git also gets the hardened configuration of
:mod:`runtime.execute.githarden` (no system or global config but the user's
identity, no program started by repository configuration, hooks off unless
the policy turns them on). It runs as :meth:`StepEnvironment.run_program`
runs every program: confined where the system allows it.
"""

from __future__ import annotations

import contextlib
import os

from runtime.execute.process import ProcessStartError
from runtime.execution import StepEnvironment, StepError, StepOutcome


def child_environment(
    env: StepEnvironment,
    binary: str,
    path: str,
    credential: str | None,
    host: str | None,
    config_dir: str | None = None,
) -> dict[str, str]:
    """The policy's allow-listed variables, plus only the credentials mapped to this binary."""
    # the allow-listed part is the same for every step of a run: looked up once
    cache = env.services.cache
    allowed: dict[str, str] | None = cache.get("binary-environment")
    if allowed is None:
        names = env.policy.binary_environment
        allowed = cache["binary-environment"] = {
            name: env.environ[name] for name in names if name in env.environ
        }
    child = dict(allowed)
    if _is_git(binary, path):
        child.update(git_environment(env, path))
    if credential is not None and config_dir is not None:
        auth = env.services.auth
        child.update(auth.binary_environment(credential, host or auth.default_host(), config_dir))
    return child


def _is_git(binary: str, path: str) -> bool:
    return binary == "git" or os.path.basename(os.path.realpath(path)) == "git"


def git_environment(env: StepEnvironment, git: str) -> dict[str, str]:
    """The hardened git configuration for this run (the identity is read once per run)."""
    from runtime.execute.githarden import git_environment as hardened
    from runtime.execute.githarden import read_identity

    cache = env.services.cache
    found: dict[str, str] | None = cache.get("git-environment")
    if found is None:
        identity = read_identity(git, env.environ)
        found = cache["git-environment"] = hardened(identity, hooks=env.policy.git_hooks[0])
    return found


def run_binary(
    path: str,
    binary: str,
    args: list[str],
    env: StepEnvironment,
    credential: str | None = None,
    host: str | None = None,
) -> StepOutcome:
    # a mapped binary (gh) gets a config folder of its own for this step, never the caller's
    folder: contextlib.AbstractContextManager[str | None] = contextlib.nullcontext(None)
    if credential is not None:
        folder = env.launcher.scratch(binary)
    try:
        with folder as config_dir:
            child = child_environment(env, binary, path, credential, host, config_dir)
            result = env.run_program([path, *args], child, config_dir)
    except ProcessStartError as exc:
        raise StepError(str(exc), hint=_start_hint(exc)) from None
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
        if env.launcher.confined and result.stderr.startswith("bwrap:"):
            outcome.hint = (
                "the step runs confined: it reads only the policy's roots and system_paths "
                "(`runtime policy show`); a program or file outside them is not there"
            )
    return outcome


def _start_hint(exc: ProcessStartError) -> str:
    if "Argument list too long" in exc.message:
        return "the arguments are too long for one program start: pass less data per step"
    return "check that the binary is installed and executable"
