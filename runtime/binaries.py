"""Running an allow-listed binary step: bounded environment, mapped credentials, no shell."""

from __future__ import annotations

import contextlib

from runtime.execution import StepEnvironment, StepError, StepOutcome
from runtime.process import ProcessStartError, run_process


def child_environment(
    env: StepEnvironment,
    binary: str,
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
    if credential is not None and config_dir is not None:
        auth = env.services.auth
        child.update(auth.binary_environment(credential, host or auth.default_host(), config_dir))
    return child


def run_binary(
    path: str,
    binary: str,
    args: list[str],
    env: StepEnvironment,
    credential: str | None = None,
    host: str | None = None,
) -> StepOutcome:
    # a mapped binary (gh) gets a config folder of its own for this step, never the caller's;
    # an unmapped one gets none (creating and removing a folder per step costs ~3 ms)
    folder: contextlib.AbstractContextManager[str | None] = contextlib.nullcontext(None)
    if credential is not None:
        import tempfile  # here: ~10 ms to import, and only mapped binaries need it

        folder = tempfile.TemporaryDirectory(prefix=f"runtime-{binary}-")
    try:
        with folder as config_dir:
            child = child_environment(env, binary, credential, host, config_dir)
            result = run_process(
                [path, *args],
                env=child,
                cwd=env.cwd,
                timeout=env.timeout,
                on_output=env.on_output,
                redact=env.redactor.text,
            )
    except ProcessStartError as exc:
        raise StepError(
            str(exc), hint="check that the binary is installed and executable"
        ) from None
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
    return outcome
