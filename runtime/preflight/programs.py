"""Preflight's checks of programs: what the capability needs to run here.

MDA's standard keys (``runtime``, ``tools``, ``packages``, ``model``), each
provider operation and executable a step names, with its version where one
is asked for, and whether programs run OS-confined.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from runtime.document.requirements import Requirement
from runtime.preflight.report import FALSE, TRUE, UNKNOWN, Check, Context, timestamp

if TYPE_CHECKING:
    from runtime.execute.launch import Launcher

VERSION_RE = re.compile(r"(\d+(?:\.\d+)+)")
PROBE_TIMEOUT = 3.0


# -- MDA standard keys ---------------------------------------------------------------------


def _which(name: str, ctx: Context) -> str | None:
    return ctx.ws.which(name)


def probe_version(path: str, ctx: Context, ask: tuple[str, ...] = ("--version",)) -> str | None:
    """``PATH --version`` (or ``ask``), bounded in time and output; the first dotted number
    it prints, on stdout or stderr."""
    from runtime.execute.process import ProcessStartError, run_process

    env = {k: ctx.ws.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL") if k in ctx.ws.environ}
    try:
        result = run_process(
            [path, *ask],
            env=env,
            cwd=ctx.ws.cwd,
            timeout=PROBE_TIMEOUT,
            head_bytes=4096,
            tail_bytes=0,
        )
    except (ProcessStartError, OSError, ValueError):
        return None
    if result.timed_out:
        return None
    match = VERSION_RE.search(result.stdout + "\n" + result.stderr)
    return match.group(1) if match else None


def _java_release(version: str) -> str:
    """Java 8 and older print 1.8.0 for the release called Java 8; JEP 223 dropped the
    leading 1. from Java 9 on, and java>=8 means the release."""
    first, _, rest = version.partition(".")
    return rest if first == "1" and rest else version


class RuntimeProgram(NamedTuple):
    programs: tuple[str, ...]  # looked up on PATH in this order
    ask: tuple[str, ...] = ("--version",)  # what makes it print its version
    release: Callable[[str], str] | None = None  # the printed version as the name's scheme


# MDA's runtime token is the name its ecosystem uses (rust, node, python...), not always a
# program's: the well-known ones map to the program that tells their version. Any other
# name is taken as a program's (git>=2.30).
RUNTIMES: dict[str, RuntimeProgram] = {
    "python": RuntimeProgram(("python3", "python")),
    "python3": RuntimeProgram(("python3",)),
    "node": RuntimeProgram(("node",)),
    "nodejs": RuntimeProgram(("node", "nodejs")),
    "deno": RuntimeProgram(("deno",)),
    "bun": RuntimeProgram(("bun",)),
    "rust": RuntimeProgram(("rustc",)),
    "go": RuntimeProgram(("go",), ("version",)),
    "golang": RuntimeProgram(("go",), ("version",)),
    # -version: every Java (--version only from 9)
    "java": RuntimeProgram(("java",), ("-version",), _java_release),
    "ruby": RuntimeProgram(("ruby",)),
    "php": RuntimeProgram(("php",)),
    "perl": RuntimeProgram(("perl",)),
    "dotnet": RuntimeProgram(("dotnet",)),
    "lua": RuntimeProgram(("lua",), ("-v",)),
    "julia": RuntimeProgram(("julia",)),
    "swift": RuntimeProgram(("swift",)),
    "dart": RuntimeProgram(("dart",)),
    "zig": RuntimeProgram(("zig",), ("version",)),
    "r": RuntimeProgram(("Rscript",)),
}


def check_runtime(req: Requirement, ctx: Context) -> Check:
    from runtime.document.grammar import parse_runtime_constraint

    constraint = req.target["constraint"]
    parsed = parse_runtime_constraint(constraint)
    if parsed is None:
        # MDA asks only for a string; the form is a SHOULD: not checked, never invalid
        return Check(
            req,
            UNKNOWN,
            UNKNOWN,
            f"'{constraint}' is not of the form <runtime>[<comparator><version>] "
            "(MDA §10-3.1), so it cannot be checked",
            "write it as, for example, java>=17",
        )
    name, spec = parsed
    known = RUNTIMES.get(name.lower(), RuntimeProgram((name,)))
    found = ((p, _which(p, ctx)) for p in known.programs)
    program, path = next(((p, w) for p, w in found if w), (known.programs[0], None))
    if path is None:
        return Check(
            req,
            FALSE,
            FALSE,
            f"{name}: {' or '.join(known.programs)} is not on PATH",
            f"install {name}{spec} or put {program} on PATH",
        )
    if not spec:
        return Check(req, TRUE, TRUE, f"{name}: found {program} at {path}")
    if not ctx.probe:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"{name}: found {program} at {path}; its version is not probed by plan "
            "(run `runtime capability preflight`)",
        )
    probed = f"{name}: probed {program} at {path}"
    version = probe_version(path, ctx, known.ask)
    if version is None:
        return Check(req, TRUE, UNKNOWN, f"{probed}, but its version could not be read")
    if known.release is not None and known.release(version) != version:
        probed += f" (prints {version})"
        version = known.release(version)
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        ok = SpecifierSet(spec).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return Check(req, TRUE, UNKNOWN, f"{probed}: {version} is not a comparable version")
    if ok:
        return Check(req, TRUE, TRUE, f"{probed}: {version} satisfies {spec}")
    return Check(
        req,
        TRUE,
        FALSE,
        f"{probed}: {version} does not satisfy {spec}",
        f"install {name}{spec}",
    )


def check_tool(req: Requirement, ctx: Context) -> Check:
    return Check(
        req,
        TRUE,
        UNKNOWN,
        "tools are opaque names (MDA §10-3.2): recorded, never matched; advisory, never a "
        "refusal (not even with --strict)",
        advisory=True,
    )


def check_package(req: Requirement, ctx: Context) -> Check:
    name = req.target["name"]
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+\-]*", name):
        path = _which(name, ctx)
        if path:
            return Check(req, TRUE, TRUE, f"{name} found on PATH at {path}")
        return Check(
            req,
            UNKNOWN,
            UNKNOWN,
            f"{name} is not an executable on PATH; other kinds of package cannot be checked "
            "(packages are informational, MDA §10-3.4: never a refusal)",
            f"install {name} if the capability needs it",
            advisory=True,
        )
    return Check(
        req,
        UNKNOWN,
        UNKNOWN,
        f"'{name}' is not a package the runtime can check (informational: never a refusal)",
        advisory=True,
    )


def check_model(req: Requirement, ctx: Context) -> Check:
    return Check(
        req,
        TRUE,
        UNKNOWN,
        "runtime runs no language model: shown; advisory, never a refusal (not even with --strict)",
        advisory=True,
    )


# -- inferred ------------------------------------------------------------------------------


def check_operation(req: Requirement, ctx: Context) -> Check:
    provider = ctx.ws.registry.get(req.target["provider"])
    if provider is None:
        why = ctx.ws.registry.broken.get(req.target["provider"], "not registered")
        return Check(
            req, FALSE, FALSE, f"provider {req.target['provider']}: {why}", "install the provider"
        )
    names = {op.name for op in provider.operations}
    if req.target["operation"] not in names:
        return Check(
            req, FALSE, FALSE, f"{provider.name} has no operation {req.target['operation']}"
        )
    return Check(req, TRUE, TRUE, f"{provider.name} {req.target['operation']} is registered")


def check_executable(req: Requirement, ctx: Context) -> Check:
    name = req.target["name"]
    listed = ctx.ws.policy.binary_listed(name)
    path = _which(name, ctx)
    if path is None:
        return Check(
            req, FALSE, FALSE, f"{name} is not on PATH", f"install {name} or put it on PATH"
        )
    if not os.access(path, os.X_OK):
        return Check(req, TRUE, FALSE, f"{path} is not executable", f"chmod +x {path}")
    version = req.target.get("version")
    if version and req.typed:
        if not ctx.live:
            return Check(
                req,
                TRUE,
                UNKNOWN,
                f"{name} at {path}; version {version} is not probed offline (--live)",
            )
        found = probe_version(path, ctx)
        if found is None:
            return Check(
                req,
                TRUE,
                UNKNOWN,
                f"{name} at {path}; its version could not be read",
                checked_at=timestamp(ctx),
            )
        return _version_check(req, ctx, name, path, found, version)
    extra = "" if req.typed or listed else " (not in allowed_binaries)"
    return Check(req, TRUE, TRUE, f"{name} at {path}{extra}")


def _version_check(
    req: Requirement, ctx: Context, name: str, path: str, found: str, wanted: str
) -> Check:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    stamp = timestamp(ctx)
    try:
        spec = SpecifierSet(wanted if wanted[:1] in "<>=!~" else f"=={wanted}")
        ok = spec.contains(Version(found), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return Check(
            req, TRUE, UNKNOWN, f"{name} {found}: cannot compare with '{wanted}'", checked_at=stamp
        )
    if ok:
        return Check(
            req, TRUE, TRUE, f"{name} {found} at {path} satisfies {wanted}", checked_at=stamp
        )
    return Check(
        req,
        TRUE,
        FALSE,
        f"{name} {found} at {path} does not satisfy {wanted}",
        f"install {name} {wanted}",
        checked_at=stamp,
    )


# -- confinement ---------------------------------------------------------------------------


def run_launcher(ctx: Context) -> Launcher:
    """The run's launcher; without probing (plan) only whether bwrap is on PATH."""
    if ctx.probe:
        return ctx.services.launcher
    from runtime.execute.launch import for_run

    return for_run(ctx.ws, probe=False)


def _confinement_needed(ctx: Context) -> str | None:
    """Why confinement is required here, or None when a policy lets steps run without it."""
    policy = ctx.ws.policy
    required, source = policy.require_confinement
    if required:
        return f"the policy requires it (require_confinement: true, {source})"
    if not policy.unconfined_allowed:
        return "steps that start a program run only confined (allow_unconfined: false)"
    if ctx.network is not None and ctx.network.kind != "public":
        return f"requires.network is {ctx.network.describe()}, which only confinement enforces"
    return None


def check_confinement(req: Requirement, ctx: Context) -> Check:
    launcher = run_launcher(ctx)
    needed = _confinement_needed(ctx)
    req.optional = needed is None
    if launcher.confined:
        how = "" if ctx.probe else " (bwrap found on PATH; not started by plan)"
        return Check(
            req,
            TRUE,
            TRUE,
            f"programs run confined{how}: {launcher.describe()}; the policy's roots and "
            "system_paths only, Runtime Home read-only, a private /proc, TMPDIR and network, "
            "no process outlives its step",
        )
    reason = f"programs are NOT OS-confined here: {launcher.availability.reason}"
    if needed:
        reason += f"; {needed}, so the run is refused"
    else:
        reason += (
            f"; they run unconfined, as the policy allows (allow_unconfined: true, "
            f"{ctx.ws.policy.allow_unconfined[1]}), and each says so"
        )
    from runtime.plan.gate import CONFINEMENT_FIX

    return Check(req, TRUE, FALSE, reason, CONFINEMENT_FIX)
