"""Preflight: does this machine have what the capability needs, here and now?

Each check records two answers, each ``True``, ``False`` or ``Unknown``:
*resolution* (is the target well defined, does the reference resolve) and
*readiness* (is it usable now), with a short reason and, when not ready, how
to fix it. Offline by default; ``live`` adds bounded, read-only network
checks. A report never contains a secret, a URL's credentials, query or
fragment, or a remote error text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from runtime.document.requirements import Requirement, _sanitize, declared
from runtime.plan.build import Plan
from runtime.plan.network import NetworkRule
from runtime.preflight.inferred import inferred
from runtime.tls import CertificateSetupError
from runtime.workspace import Workspace

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
VERSION_RE = re.compile(r"(\d+(?:\.\d+)+)")
PROBE_TIMEOUT = 3.0
LIVE_TIMEOUT = 5.0
LIVE_MAX_BYTES = 64 * 1024


@dataclass
class Check:
    requirement: Requirement
    resolution: str
    readiness: str
    reason: str
    fix: str | None = None
    checked_at: str | None = None
    valid_until: str | None = None
    # an Unknown runtime can never settle, whatever the machine: MDA's tools and model
    # (they describe the consumer's agent and model) and packages it cannot look up
    # (informational in MDA). Shown, never a refusal, not even with --strict.
    advisory: bool = False

    @property
    def blocks(self) -> bool:
        return not self.requirement.optional and self.readiness == FALSE

    def to_json(self) -> dict[str, Any]:
        doc = self.requirement.to_json()
        doc.update(
            {
                "resolution": self.resolution,
                "readiness": self.readiness,
                "reason": self.reason,
                "fix": self.fix,
                "advisory": self.advisory,
            }
        )
        if self.checked_at:
            doc["checkedAt"] = self.checked_at
        if self.valid_until:
            doc["validUntil"] = self.valid_until
        return doc


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cost_hints: dict[str, Any] | None = None
    live: bool = False
    strict: bool = False

    def blocking(self) -> list[Check]:
        """Required checks not ready: False, and with ``strict`` every Unknown that could
        hide a failure (all but the advisory ones)."""
        return [
            c
            for c in self.checks
            if not c.requirement.optional
            and (
                c.readiness == FALSE or (self.strict and c.readiness == UNKNOWN and not c.advisory)
            )
        ]

    @property
    def ready(self) -> bool:
        return not self.blocking()

    def to_json(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "live": self.live,
            "strict": self.strict,
            "checks": [c.to_json() for c in self.checks],
            "blocking": [c.requirement.id for c in self.blocking()],
            "warnings": self.warnings,
            "cost_hints": self.cost_hints,
        }


def sanitize_url(url: str) -> str:
    """Scheme, host, port and path only: no credentials, query or fragment."""
    return _sanitize(url)


@dataclass
class Context:
    ws: Workspace
    services: Any
    plan: Plan
    inputs: dict[str, str]
    live: bool
    probe: bool  # may run `NAME --version` (not in `plan`, which starts no process)
    now: Callable[[], float]
    runner_capabilities: tuple[str, ...] | None = None
    network: NetworkRule | None = None
    hosts: list[str] = field(default_factory=list)
    # folder -> (is a folder, writable and searchable): asked once per folder in one
    # preflight, not once per file written into it (bench/, figure 5)
    folders: dict[str, tuple[bool, bool]] = field(default_factory=dict)


def run_preflight(
    ws: Workspace,
    services: Any,
    plan: Plan,
    inputs: dict[str, str],
    *,
    live: bool = False,
    strict: bool = False,
    probe: bool = True,
    runner_capabilities: tuple[str, ...] | None = None,
) -> Report:
    cap = plan.capability
    decl = declared(cap)
    inf = inferred(plan)
    ctx = Context(ws, services, plan, inputs, live, probe, ws.clock, runner_capabilities)
    ctx.network = NetworkRule.from_requires(cap.requires.get("network"))
    ctx.hosts = [r.target["host"] for r in inf.items if r.type == "networkHost"]
    report = Report(
        warnings=decl.warnings + inf.warnings,
        cost_hints=decl.cost_hints,
        live=live,
        strict=strict,
    )
    extra = typed_requirements(cap)
    for req in [*decl.items, *extra, *inf.items]:
        report.checks.append(check(req, ctx))
    _duplicates(report, extra)
    return report


def typed_requirements(cap: Any) -> list[Requirement]:
    """Declared typed requirements (``metadata.runtime.requirements``)."""
    from runtime.document.typed_requirements import collect

    return collect(cap)


def _duplicates(report: Report, typed: list[Requirement]) -> None:
    seen: dict[str, int] = {}
    for req in typed:
        seen[req.id] = seen.get(req.id, 0) + 1
    for rid, count in seen.items():
        if count > 1:
            dup = Requirement(
                f"duplicate-id:{rid}",
                "duplicateId",
                {"id": rid},
                source="metadata.runtime.requirements",
            )
            report.checks.append(
                Check(
                    dup,
                    FALSE,
                    FALSE,
                    f"requirement id '{rid}' is declared {count} times",
                    "give each requirement a unique id",
                )
            )


def _stamp(ctx: Context) -> str:
    return datetime.fromtimestamp(ctx.now(), UTC).isoformat(timespec="seconds")


def check(req: Requirement, ctx: Context) -> Check:
    if req.origin == "inferred" and req.review_status == "needsReview":
        return Check(
            req,
            UNKNOWN,
            UNKNOWN,
            "inferred requirement awaiting review (reviewStatus: needsReview)",
        )
    fn = CHECKERS.get(req.type)
    if fn is None:
        return Check(req, UNKNOWN, UNKNOWN, f"no check for requirement type '{req.type}'")
    result = fn(req, ctx)
    if req.max_age_seconds is not None and result.readiness != UNKNOWN:
        stamp = result.checked_at or _stamp(ctx)
        result.checked_at = stamp
        at = datetime.fromisoformat(stamp)
        result.valid_until = (at + timedelta(seconds=req.max_age_seconds)).isoformat(
            timespec="seconds"
        )
    return result


# -- MDA standard keys ------------------------------------------------------------------------


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


def check_network(req: Requirement, ctx: Context) -> Check:
    rule = ctx.network
    if rule is None:
        return Check(req, FALSE, FALSE, f"malformed network value {req.target.get('rule')!r}")
    if not ctx.hosts:
        return Check(req, TRUE, TRUE, f"{rule.describe()}; no step contacts a network host")
    verdicts = [(h, *rule.check(h, resolve=False)) for h in ctx.hosts]
    refused = [f"{h} ({why})" for h, ok, why in verdicts if ok is False]
    if refused:
        return Check(
            req,
            TRUE,
            FALSE,
            f"{rule.describe()}, but steps contact: {'; '.join(refused)}",
            "remove those steps, or change requires.network deliberately",
        )
    unknown = [h for h, ok, _ in verdicts if ok is None]
    if unknown:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"{rule.describe()}; cannot tell offline whether {', '.join(unknown)} "
            "is local (enforced when the step runs)",
        )
    return Check(req, TRUE, TRUE, f"{rule.describe()} covers {', '.join(ctx.hosts)}")


def check_model(req: Requirement, ctx: Context) -> Check:
    return Check(
        req,
        TRUE,
        UNKNOWN,
        "runtime runs no language model: shown; advisory, never a refusal (not even with --strict)",
        advisory=True,
    )


# -- inferred ------------------------------------------------------------------------------------


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
                checked_at=_stamp(ctx),
            )
        return _version_check(req, ctx, name, path, found, version)
    extra = "" if req.typed or listed else " (not in allowed_binaries)"
    return Check(req, TRUE, TRUE, f"{name} at {path}{extra}")


def _version_check(
    req: Requirement, ctx: Context, name: str, path: str, found: str, wanted: str
) -> Check:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    stamp = _stamp(ctx)
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


def check_credential(req: Requirement, ctx: Context) -> Check:
    auth = ctx.services.auth
    if "env" in req.target:  # declared typed credential: only whether the variable is set
        var = req.target["env"]
        if ctx.ws.environ.get(var):
            return Check(req, TRUE, TRUE, f"{var} is set")
        return Check(req, TRUE, FALSE, f"{var} is not set", f"export {var}=...")
    host = req.target.get("host") or auth.default_host(req.target["name"])
    found = auth.lookup(req.target["name"], host)
    if found.credential is None:
        why = f" ({found.problem})" if found.problem else ""
        return Check(
            req,
            TRUE,
            FALSE,
            f"no {req.target['name']} credential for {host}: looked in "
            f"{', '.join(found.tried)}{why}",
            auth.fix_hint(req.target["name"], host, found.problem is not None),
        )
    if not ctx.live:
        return Check(
            req,
            TRUE,
            TRUE,
            f"{req.target['name']} credential for {host} from {found.credential.source}",
        )
    return _live_credential(req, ctx, host, found.credential.value, found.credential.source)


SCOPE_PARENTS = {
    "public_repo": "repo",
    "repo:status": "repo",
    "repo_deployment": "repo",
    "repo:invite": "repo",
    "read:org": "admin:org",
    "write:org": "admin:org",
    "notifications": "repo",
}


def _covered(scope: str, granted: set[str]) -> bool:
    if scope in granted:
        return True
    parent = SCOPE_PARENTS.get(scope)
    if parent and parent in granted:
        return True
    return scope == "read:org" and "write:org" in granted


def _live_credential(req: Requirement, ctx: Context, host: str, token: str, source: str) -> Check:
    from runtime.provider import StepError

    stamp = _stamp(ctx)
    name = req.target["name"]
    provider = ctx.ws.registry.credential_owner(name)
    try:
        if provider is None:
            raise NotImplementedError
        user = provider.check_token(ctx.services, host, token, LIVE_TIMEOUT)
    except NotImplementedError:
        return Check(req, TRUE, UNKNOWN, f"no live check of {name} tokens", checked_at=stamp)
    except StepError as exc:
        status = exc.http_status
        if status == 401:
            return Check(
                req,
                TRUE,
                FALSE,
                f"the token from {source} was rejected by {host} (401)",
                ctx.services.auth.fix_hint(name, host),
                checked_at=stamp,
            )
        if status is not None:
            return Check(
                req, TRUE, FALSE, f"{host} answered {status} to the token check", checked_at=stamp
            )
        return Check(
            req,
            TRUE,
            FALSE,
            f"{host} did not answer",
            "check the network and the host",
            checked_at=stamp,
        )
    needed = req.target.get("scopes") or []
    scopes: list[str] | None = user.get("scopes")  # type: ignore[assignment]
    login = user.get("login")
    if needed and scopes is None:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"valid for {host} (login {login}); the token reports no scopes "
            f"(fine-grained?), so {', '.join(needed)} cannot be checked",
            checked_at=stamp,
        )
    missing = [s for s in needed if not _covered(s, set(scopes or []))]
    if missing:
        return Check(
            req,
            TRUE,
            FALSE,
            f"valid for {host} (login {login}) but lacks scope {', '.join(missing)}",
            f"create a token with {', '.join(missing)}",
            checked_at=stamp,
        )
    return Check(
        req,
        TRUE,
        TRUE,
        f"valid for {host} (login {login})" + (f" with {', '.join(needed)}" if needed else ""),
        checked_at=stamp,
    )


def check_host(req: Requirement, ctx: Context) -> Check:
    host = req.target["host"]
    verdict: tuple[bool | None, str] = (True, "no network rule declared")
    if ctx.network is not None:
        verdict = ctx.network.check(host, resolve=False)
    if verdict[0] is False:
        return Check(req, TRUE, FALSE, verdict[1], "change requires.network, or the steps")
    if not ctx.live:
        return Check(req, TRUE, UNKNOWN if verdict[0] is None else TRUE, verdict[1])
    return _live_host(req, ctx, host)


def _live_host(req: Requirement, ctx: Context, host: str) -> Check:
    """A bounded, read-only GET of the API root: does the host answer at all?"""
    from runtime.provider import StepError

    stamp = _stamp(ctx)
    planned = next((s for s in ctx.plan.steps if s.index == req.step), None)
    provider = ctx.ws.registry.get(planned.provider or "") if planned is not None else None
    try:
        if provider is None:
            raise NotImplementedError
        status = provider.ping(ctx.services, host, LIVE_TIMEOUT, LIVE_MAX_BYTES)
    except NotImplementedError:
        return Check(req, TRUE, UNKNOWN, f"no live check for {host}", checked_at=stamp)
    except StepError:
        return Check(
            req,
            TRUE,
            FALSE,
            f"{host} did not answer",
            "check the network and the host",
            checked_at=stamp,
        )
    return Check(req, TRUE, TRUE, f"{host} answered (HTTP {status})", checked_at=stamp)


def _created_by_earlier(
    ctx: Context, path: str, step: int | None, kinds: tuple[str, ...]
) -> int | None:
    for s in ctx.plan.steps:
        if step is not None and s.index >= step:
            break
        if s.operation is None or s.operation.name not in kinds:
            continue
        for p, _ in s.inspection.paths:
            if p == path:
                return s.index
    return None


def _binary_before(ctx: Context, step: int | None) -> bool:
    return any(s.binary is not None and (step is None or s.index < step) for s in ctx.plan.steps)


def check_path(req: Requirement, ctx: Context) -> Check:
    path = req.target["path"]
    if req.typed:
        return _declared_path(req, ctx)
    from runtime.document.grammar import REFERENCE

    declared = ctx.plan.capability.inputs
    waiting = [
        name
        for name in dict.fromkeys(m.group(1) for m in REFERENCE.finditer(path))
        if name in declared and name not in ctx.inputs
    ]
    if waiting:  # a preflight without that input: the path is not known yet
        names = ", ".join(waiting)
        return Check(req, UNKNOWN, UNKNOWN, f"{path} depends on input {names}, not supplied")
    op = req.target.get("operation")
    step = req.step
    p = Path(path)
    if op in ("read", "list", "delete"):
        if p.exists():
            need = os.R_OK if op != "delete" else os.W_OK
            target = p if op != "delete" else p.parent
            if os.access(target, need):
                return Check(req, TRUE, TRUE, f"{path} exists")
            return Check(
                req,
                TRUE,
                FALSE,
                f"{path} exists but is not {'readable' if op != 'delete' else 'removable'}",
            )
        made = _created_by_earlier(ctx, path, step, ("write", "append", "mkdir"))
        if made is not None:
            return Check(req, TRUE, TRUE, f"{path} is created by step {made}")
        if _binary_before(ctx, step):
            return Check(
                req,
                TRUE,
                UNKNOWN,
                f"{path} does not exist yet; an earlier binary step may create it",
            )
        return Check(req, TRUE, FALSE, f"{path} does not exist", "create it first, or fix the path")
    parent = str(p.parent)
    if op == "mkdir" and p.is_dir():
        return Check(req, TRUE, TRUE, f"{path} already exists")
    if p.exists() and op in ("write", "append") and not os.access(p, os.W_OK):
        return Check(req, TRUE, FALSE, f"{path} is not writable")
    folder = ctx.folders.get(parent)
    if folder is None:
        is_dir = Path(parent).is_dir()
        folder = ctx.folders[parent] = (is_dir, is_dir and os.access(parent, os.W_OK | os.X_OK))
    if folder[0]:
        if folder[1]:
            return Check(req, TRUE, TRUE, f"{parent} is writable")
        return Check(req, TRUE, FALSE, f"{parent} is not writable")
    made = _created_by_earlier(ctx, parent, step, ("mkdir",))
    if made is not None:
        return Check(req, TRUE, TRUE, f"its folder {parent} is created by step {made}")
    if _binary_before(ctx, step):
        return Check(
            req, TRUE, UNKNOWN, f"{parent} does not exist yet; an earlier binary step may create it"
        )
    return Check(
        req,
        TRUE,
        FALSE,
        f"the folder {parent} does not exist",
        f"add a `files mkdir {parent}` step first",
    )


def _declared_path(req: Requirement, ctx: Context) -> Check:
    raw = req.target["path"]
    p = Path(os.path.expanduser(raw))
    p = p if p.is_absolute() else ctx.ws.cwd / p
    if not p.exists():
        return Check(req, TRUE, FALSE, f"{raw} does not exist", "create it, or fix the path")
    flags = {"read": os.R_OK, "write": os.W_OK, "execute": os.X_OK}
    missing = [a for a in req.target.get("access", []) if not os.access(p, flags.get(a, 0))]
    if missing:
        return Check(req, TRUE, FALSE, f"{raw}: no {', '.join(missing)} permission")
    return Check(req, TRUE, TRUE, f"{raw}: {', '.join(req.target.get('access', []))} allowed")


def check_input(req: Requirement, ctx: Context) -> Check:
    name = req.target["name"]
    if name in ctx.inputs:
        return Check(req, TRUE, TRUE, f"input {name} is supplied")
    return Check(req, TRUE, FALSE, f"required input {name} is not supplied", f"--input {name}=...")


# -- declared typed requirements -----------------------------------------------------------------


def check_object_ref(req: Requirement, ctx: Context) -> Check:
    from runtime.document.catalog import resolve_name
    from runtime.home.contexts import ContextStore

    kind, name = req.target["kind"], req.target["name"]
    note = (
        "; generation ignored (this kind has no generations)" if "generation" in req.target else ""
    )
    if kind == "capability":
        found = resolve_name(name, ctx.ws.sources)
        if found is None:
            return Check(
                req,
                FALSE,
                FALSE,
                f"no capability named {name} in the capability sources{note}",
                "add it to a capability source folder",
            )
        return Check(req, TRUE, TRUE, f"capability {name} at {found}{note}")
    if kind == "context":
        names = ContextStore(ctx.ws.home).names()
        if name in names:
            return Check(req, TRUE, TRUE, f"context {name} exists{note}")
        return Check(
            req,
            FALSE,
            FALSE,
            f"no context named {name}{note}",
            f"runtime context set {name} key=value",
        )
    # policy: "default" (shipped), "user" (the user policy file), or a path to a policy file
    if name == "default":
        return Check(req, TRUE, TRUE, f"the default policy ships with runtime{note}")
    path = ctx.ws.policy_file if name == "user" else Path(os.path.expanduser(name))
    if path is not None and not path.is_absolute():
        path = ctx.ws.cwd / path
    if path is not None and path.is_file():
        return Check(req, TRUE, TRUE, f"policy file {path} exists{note}")
    return Check(req, FALSE, FALSE, f"no policy file for '{name}'{note}")


def check_runner_capability(req: Requirement, ctx: Context) -> Check:
    name = req.target["name"]
    if ctx.runner_capabilities is None:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            "no --runner-capability was given, so the runner's capabilities are unknown",
        )
    if name in ctx.runner_capabilities:
        return Check(req, TRUE, TRUE, f"the runner offers {name}", checked_at=_stamp(ctx))
    return Check(
        req,
        TRUE,
        FALSE,
        f"the runner does not offer {name}",
        f"run on a runner with --runner-capability {name}",
        checked_at=_stamp(ctx),
    )


def check_context_source(req: Requirement, ctx: Context) -> Check:
    if "path" in req.target:
        raw = req.target["path"]
        p = Path(os.path.expanduser(raw))
        p = p if p.is_absolute() else ctx.ws.cwd / p
        if p.exists() and os.access(p, os.R_OK):
            return Check(req, TRUE, TRUE, f"{raw} is readable")
        return Check(
            req, TRUE, FALSE, f"{raw} is not readable" if p.exists() else f"{raw} does not exist"
        )
    url = req.target["url"]
    shown = sanitize_url(url)
    if not ctx.live:
        return Check(req, TRUE, UNKNOWN, f"{shown} is checked only with --live")
    import httpx

    from runtime.provider import StepError

    stamp = _stamp(ctx)
    try:
        verify = _verify(ctx)
        with httpx.Client(timeout=LIVE_TIMEOUT, verify=verify, trust_env=False) as http:
            status = http.head(url).status_code
    except (httpx.HTTPError, StepError, ValueError, CertificateSetupError):
        return Check(req, TRUE, FALSE, f"{shown} did not answer", checked_at=stamp)
    if status < 400:
        return Check(req, TRUE, TRUE, f"{shown} answered HEAD with HTTP {status}", checked_at=stamp)
    return Check(req, TRUE, FALSE, f"{shown} answered HEAD with HTTP {status}", checked_at=stamp)


def _verify(ctx: Context) -> Any:
    from runtime.tls import ssl_context

    return ssl_context(ctx.ws.environ)


MCP_EXTRA = "pip install 'runtime-engine[mcp]'"


def _mcp_timeout(ctx: Context) -> float:
    """RUNTIME_MCP_TIMEOUT (seconds, for the whole discovery of one requirement), else 10."""
    try:
        value = float(ctx.ws.environ.get("RUNTIME_MCP_TIMEOUT", "10"))
    except ValueError:
        return 10.0
    return value if 0 < value < float("inf") else 10.0


def check_mcp(req: Requirement, ctx: Context) -> Check:
    url = req.target["serverUrl"]
    shown = sanitize_url(url)
    if not ctx.live:
        return Check(req, TRUE, UNKNOWN, f"MCP server {shown} is checked only with --live")
    try:  # the official SDK, an optional extra: imported here, on the --live path only
        from runtime.preflight.mcp import discover
    except ImportError as exc:
        missing = (exc.name or "mcp").partition(".")[0]
        if missing == "runtime":
            raise
        reason = "live MCP checks need the mcp SDK, an optional extra that is not installed"
        if missing != "mcp":
            reason = f"live MCP checks need the mcp SDK, which is incomplete ({missing} is missing)"
        return Check(req, TRUE, UNKNOWN, reason, MCP_EXTRA)

    stamp = _stamp(ctx)
    kind = {"mcpServer": "server", "mcpTool": "tools", "mcpResource": "resources"}[req.type]
    wanted = req.target.get("name") if req.type == "mcpTool" else req.target.get("uri")
    try:
        verify = _verify(ctx)
    except CertificateSetupError as exc:
        return Check(
            req, TRUE, FALSE, str(exc), "fix SSL_CERT_FILE / SSL_CERT_DIR", checked_at=stamp
        )
    found = discover(url, kind, find=wanted, verify=verify, timeout=_mcp_timeout(ctx))  # type: ignore[arg-type]
    if not found.ok:
        return Check(req, TRUE, FALSE, found.reason, checked_at=stamp)
    if req.type == "mcpServer":
        return Check(req, TRUE, TRUE, f"MCP server {shown} answered", checked_at=stamp)
    what = "tool" if req.type == "mcpTool" else "resource"
    if wanted in found.names:
        return Check(req, TRUE, TRUE, f"{shown} lists the {what} {wanted}", checked_at=stamp)
    if found.cut_off:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"{what} {wanted} not among the first {found.pages} pages of {shown} "
            "(discovery stops there)",
            checked_at=stamp,
        )
    return Check(req, TRUE, FALSE, f"{shown} does not list the {what} {wanted}", checked_at=stamp)


def _launcher(ctx: Context) -> Any:
    """The run's launcher; without probing (plan) only whether bwrap is on PATH."""
    if ctx.probe and ctx.services is not None:
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
    launcher = _launcher(ctx)
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


def check_network_enforcement(req: Requirement, ctx: Context) -> Check:
    rule = ctx.network
    if rule is None:
        return Check(req, FALSE, FALSE, "the capability's network rule cannot be read")
    if req.target.get("kind") != "binary":
        return Check(
            req,
            TRUE,
            TRUE,
            f"{rule.describe()}: checked by the provider before every connection it makes",
        )
    if _launcher(ctx).confined:
        return Check(
            req,
            TRUE,
            TRUE,
            f"{rule.describe()}: the program runs in a network namespace of its own and "
            "reaches, through runtime's proxy, only the hosts its profile and the policy "
            "name that the rule allows",
        )
    if rule.kind == "public":
        return Check(req, TRUE, TRUE, "public: an unconfined program's network is not restricted")
    return Check(
        req,
        TRUE,
        FALSE,
        f"{rule.describe()}: cannot be enforced without OS confinement; the step is refused",
        "install bubblewrap and allow unprivileged user namespaces, or drop the binary step",
    )


CHECKERS: dict[str, Callable[[Requirement, Context], Check]] = {
    "confinement": check_confinement,
    "networkEnforcement": check_network_enforcement,
    "objectRef": check_object_ref,
    "runnerCapability": check_runner_capability,
    "contextSource": check_context_source,
    "mcpServer": check_mcp,
    "mcpTool": check_mcp,
    "mcpResource": check_mcp,
    "runtime": check_runtime,
    "tool": check_tool,
    "package": check_package,
    "network": check_network,
    "model": check_model,
    "providerOperation": check_operation,
    "executable": check_executable,
    "credential": check_credential,
    "networkHost": check_host,
    "localPath": check_path,
    "input": check_input,
}
