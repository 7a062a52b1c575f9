"""`runtime doctor`: is this installation healthy, and what to do when it is not."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from runtime.cli.render import emit_json, out, paint, plural
from runtime.cli.session import home_in_the_way, json_mode, workspace
from runtime.text import printable

if TYPE_CHECKING:
    from runtime.plan.workspace import Workspace
    from runtime.redact import Redactor

doctor_app = typer.Typer(rich_markup_mode=None)


def _check(name: str, status: str, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"check": name, "status": status, "detail": detail, "fix": fix}


def _home(ws: Workspace) -> list[dict[str, Any]]:
    from runtime import __version__
    from runtime.home.layout import MANIFEST, VERSION_FILE

    root = ws.home.root
    blocked = home_in_the_way(ws)
    if blocked is not None:  # bootstrap could not help: it fails the same way
        problem, fix = blocked
        return [_check("home", "error", problem, fix)]
    unwritable = _unwritable(root)
    if unwritable is not None:  # bootstrap could not help either: it writes there
        return [
            _check(
                "home",
                "error",
                unwritable,
                "set RUNTIME_HOME to a folder you can write (a missing one is created), "
                "e.g. `export RUNTIME_HOME=/tmp/runtime-home`, or make it writable",
            )
        ]
    fix = "run `runtime bootstrap`"
    try:
        version = (root / VERSION_FILE).read_text(encoding="utf-8").strip()
        files = json.loads((root / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError):
        return [_check("home", "error", f"{root} is not bootstrapped", fix)]
    if version != __version__:
        return [
            _check(
                "home", "error", f"{root} is for version {version}, runtime is {__version__}", fix
            )
        ]
    bad = [rel for rel, digest in files.items() if not _holds(root / rel, digest)]
    if bad:
        return [
            _check(
                "home",
                "error",
                f"{len(bad)} runtime-owned file(s) differ: {', '.join(bad[:3])}",
                fix,
            )
        ]
    return [_check("home", "ok", f"{root} (version {version}, {len(files)} files verified)")]


def _unwritable(root: Path) -> str | None:
    """What stops runtime writing Home at ``root`` (a read-only HOME, a folder of another
    user's), or None: ``root`` itself when it exists, else the nearest folder above it,
    where it would be created."""
    import os

    for path in (root, *root.parents):
        if not os.path.isdir(path):
            continue
        if os.access(path, os.W_OK | os.X_OK):
            return None
        if path == root:
            return f"{root} is not writable: runs cannot record in its audit log"
        return f"{root} cannot be created: {path} is not writable"
    return None


def _holds(path: Path, digest: str) -> bool:
    """Whether ``path`` is a file with this sha256; one that cannot be read does not."""
    try:
        return bool(path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest)
    except OSError:
        return False


def _policy_and_config(ws: Workspace) -> list[dict[str, Any]]:
    from runtime.errors import RuntimeFailure

    checks = []
    try:
        ws.config  # noqa: B018 - parsing is the check
        checks.append(_check("config", "ok", ws.config.source))
        for source, why, by in ws.skipped_sources:
            checks.append(
                _check(
                    "capability sources",
                    "warning",
                    f"{source} ({by}) {why}; capability lookups skip it",
                    f"create it, or remove it from capability_sources in {ws.home.config_file}"
                    if by == "config.yaml"
                    else f"create it, or unset {by}",
                )
            )
    except RuntimeFailure as exc:
        checks.append(_check("config", "error", exc.message, exc.hint or "fix config.yaml"))
    try:
        policy = ws.policy
        checks.append(_check("policy", "ok", " <- ".join(policy.sources)))
    except RuntimeFailure as exc:
        checks.append(_check("policy", "error", exc.message, exc.hint or "fix the policy file"))
    return checks


def _contexts(ws: Workspace) -> dict[str, Any]:
    """contexts.json, as every command that reads it will: the file, and the active context's
    values (what providers read); a broken one stops those commands with exit 2."""
    from runtime.errors import RuntimeFailure
    from runtime.home.contexts import ContextStore

    store = ContextStore(ws.home)
    try:
        names = store.names()
        active = store.active()
    except RuntimeFailure as exc:
        return _check("contexts", "error", exc.message, exc.hint or f"fix {store.path}")
    if not names:
        return _check("contexts", "ok", "none")
    which = f"active: {active.name}" if active is not None else "none active"
    return _check("contexts", "ok", f"{plural(len(names), 'context')} ({which})")


def _login_fix(ws: Workspace) -> str:
    """What to do without a keyring: export the variables the credentials are read from."""
    from runtime.errors import RuntimeFailure
    from runtime.execute.services import Services

    try:
        auth = Services(ws, _redactor()).auth
        names = [auth.token_env(name) for name in sorted(auth.kinds())]
    except RuntimeFailure:
        names = []
    exports = " or ".join(f"export {n}=<token>" for n in names) or "use environment variables"
    return f"{exports} instead of `runtime auth login`"


def _redactor() -> Redactor:
    from runtime.redact import Redactor

    return Redactor()


def _keyring(ws: Workspace) -> dict[str, Any]:
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
    except Exception as exc:
        return _check(
            "keyring",
            "warning",
            f"the keyring could not be loaded ({type(exc).__name__})",
            _login_fix(ws),
        )
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    if isinstance(backend, fail.Keyring):
        return _check(
            "keyring",
            "warning",
            "no keyring backend is available (common on headless servers)",
            _login_fix(ws),
        )
    return _check("keyring", "ok", name)


def _programs(ws: Workspace) -> list[dict[str, Any]]:
    """The programs provider operations run (gh for github's CLI operations): each on PATH,
    and what its --version says."""
    from runtime.execute.process import ProcessStartError, run_process

    needed: dict[str, list[str]] = {}
    for provider in ws.registry.providers.values():
        for op in provider.operations:
            if op.program:
                needed.setdefault(op.program, []).append(f"{provider.name} {op.name}")
    checks = []
    for program, operations in sorted(needed.items()):
        path = shutil.which(program, path=ws.path)
        if path is None:
            checks.append(
                _check(
                    program,
                    "warning",
                    f"{program} is not on PATH: {', '.join(operations)} need it",
                    f"install {program}",
                )
            )
            continue
        try:
            result = run_process(
                [path, "--version"],
                env={"PATH": ws.path},
                cwd=ws.cwd,
                timeout=5,
                head_bytes=4096,
                tail_bytes=0,
            )
        except (ProcessStartError, OSError):
            checks.append(
                _check(program, "warning", f"{path} could not be run", f"reinstall {program}")
            )
            continue
        first = (result.stdout.strip().splitlines() or ["?"])[0]
        checks.append(_check(program, "ok", f"{first} ({path})"))
    return checks


def _binaries(ws: Workspace) -> list[dict[str, Any]]:
    from runtime.errors import RuntimeFailure

    try:
        policy = ws.policy
    except RuntimeFailure:
        return []
    found: list[str] = []
    missing: list[str] = []
    for name in sorted(policy.allowed_binaries):
        if name in policy.denied_binaries:
            continue
        path = shutil.which(name, path=ws.path)
        (found if path else missing).append(f"{name}={path}" if path else name)
    status = "ok" if not missing else "warning"
    detail = f"{len(found)} on PATH" + (f"; not found: {', '.join(missing)}" if missing else "")
    return [
        _check(
            "allowed binaries",
            status,
            detail,
            "install them or drop them from the policy" if missing else None,
        )
    ]


def _confinement(ws: Workspace) -> list[dict[str, Any]]:
    """Whether steps that start a program run confined here, and each layer this machine
    offers and has in force: said plainly either way."""
    from runtime.errors import RuntimeFailure
    from runtime.execute.launch import for_run
    from runtime.plan.gate import CONFINEMENT_FIX

    try:
        launcher = for_run(ws)
        unconfined = ws.policy.unconfined_allowed
    except RuntimeFailure:
        return [_check("confinement", "warning", "not checked: the policy cannot be read")]
    layers = [
        _check(
            f"confinement.{name}",
            "ok" if on else "warning",
            f"{'in force' if on else 'not in force'}: {detail}",
            None if on else CONFINEMENT_FIX,
        )
        for name, on, detail in launcher.layers()
    ]
    if launcher.confined:
        overall = _check("confinement", "ok", f"the programs steps start run {launcher.describe()}")
    elif unconfined:
        overall = _check(
            "confinement",
            "warning",
            f"the programs steps start run NOT confined: {launcher.availability.reason}; the "
            f"policy allows it (allow_unconfined: true, {ws.policy.allow_unconfined[1]}) "
            "and each such step says so",
            CONFINEMENT_FIX,
        )
    else:
        overall = _check(
            "confinement",
            "error",
            f"steps that start a program are refused: {launcher.availability.reason}",
            CONFINEMENT_FIX + "; or allow_unconfined: true in a user policy, deliberately",
        )
    return [overall, *layers]


def _providers(ws: Workspace) -> dict[str, Any]:
    registry = ws.registry
    if registry.broken:
        broken = "; ".join(f"{n}: {why}" for n, why in registry.broken.items())
        return _check("providers", "error", broken, "reinstall the package that provides it")
    return _check("providers", "ok", ", ".join(registry.names()))


@doctor_app.command("doctor")
def doctor_cmd() -> None:
    """Check the installation: Home, policy, config, contexts, keyring, the programs providers run,
    allowed binaries,
    OS confinement of binary steps, providers."""
    ws = workspace()
    checks = [
        *_home(ws),
        *_policy_and_config(ws),
        _contexts(ws),
        _keyring(ws),
        *_programs(ws),
        *_binaries(ws),
        *_confinement(ws),
        _providers(ws),
    ]
    errors = [c for c in checks if c["status"] == "error"]
    code = 5 if errors else 0
    if json_mode():
        emit_json({"ok": not errors, "exit_code": code, "checks": checks})
    else:
        colours = {"ok": "green", "warning": "yellow", "error": "red"}
        for c in checks:
            status = paint(c["status"].upper().ljust(7), colours[c["status"]])
            out(f"{status} {printable(c['check'])}: {printable(c['detail'])}", styled=True)
            if c["fix"] and c["status"] != "ok":
                out(f"        fix: {c['fix']}")
        out("healthy" if not errors else f"{plural(len(errors), 'problem')} to fix")
    raise typer.Exit(code)
