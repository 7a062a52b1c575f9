"""One run's services: the engine's side of :class:`runtime.provider.RunContext`.

Made once per command (plan, preflight, execute), lazily: nothing is created
until something needs it, so a command that never reaches a credential never
imports keyring, and one that starts no program never probes bubblewrap.
Whatever a provider keeps for the run (an HTTP client, resolved folders) is
its own typed object, made by :meth:`RunServices.state` and closed with the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from runtime.errors import StepError
from runtime.provider.operations import Access
from runtime.provider.run import (
    EditLimits,
    HostRule,
    ProgramResult,
    ProtectedPaths,
    Roots,
    Setting,
)
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.execute.launch import Launcher
    from runtime.execute.profiles import ProgramAccess
    from runtime.home.auth import AuthEngine
    from runtime.home.contexts import ContextStore
    from runtime.plan.workspace import Workspace

T = TypeVar("T")


class RunServices:
    def __init__(self, workspace: Workspace, redactor: Redactor) -> None:
        self.workspace = workspace
        self._redactor = redactor
        self._closers: list[Callable[[], None]] = []
        self._states: dict[Callable[[], Any], Any] = {}
        self._subreaper = False  # set when the launcher is made (the first program)

    # -- what the run is -------------------------------------------------------------------
    @property
    def cwd(self) -> Path:
        return self.workspace.cwd

    @property
    def environ(self) -> Mapping[str, str]:
        return self.workspace.environ

    @property
    def redactor(self) -> Redactor:
        return self._redactor

    @cached_property
    def auth(self) -> AuthEngine:
        from runtime.home.auth import AuthEngine

        return AuthEngine(self.workspace, self._redactor)

    @cached_property
    def contexts(self) -> ContextStore:
        from runtime.home.contexts import ContextStore

        return ContextStore(self.workspace.home)

    @cached_property
    def launcher(self) -> Launcher:
        """How this run starts programs (probed once: bubblewrap confines, or not here)."""
        from runtime.execute.launch import become_subreaper, for_run

        launcher = for_run(self.workspace)
        # Unconfined, a daemon that double-forked out of its step becomes our child, to
        # be killed. Confined, bubblewrap's own helper in the step's group often ends just
        # after the step's leader: as our child it is reaped at once, not left a zombie of
        # init that makes the group look alive (the runner then reads all of /proc).
        self._subreaper = become_subreaper()
        if self._subreaper:
            self.on_close(_stop_reaping)
        return launcher

    # -- RunContext ------------------------------------------------------------------------
    def roots(self, access: Access) -> Roots:
        policy = self.workspace.policy
        source = (policy.read_roots if access == "read" else policy.write_roots)[1]
        return Roots(policy.roots(access, self.cwd), source)

    def protected_paths(self) -> ProtectedPaths:
        policy_file = self.workspace.policy_file
        home = os.path.realpath(self.cwd / self.workspace.home.root)
        policy = os.path.realpath(self.cwd / policy_file) if policy_file is not None else None
        home_id = _identity(home)
        folder = _identity(os.path.dirname(policy)) if policy is not None else None
        return ProtectedPaths(
            home,
            policy,
            home_id,
            (*folder, os.path.basename(policy)) if folder and policy else None,
        )

    def edit_limits(self) -> EditLimits:
        bounds = self.workspace.policy.file_edits
        value = {key: found[0] for key, found in bounds.items()}
        return EditLimits(
            files=int(value["max_files"]),
            bytes=int(value["max_bytes"]),
            matches=int(value["max_matches"]),
            diff_bytes=int(value["max_diff_bytes"]),
            seconds=value["max_seconds"],
            sources={key: found[1] for key, found in bounds.items()},
        )

    def home_key(self, purpose: str) -> bytes | None:
        from runtime.home.layout import home_key

        return home_key(self.workspace.home.root, purpose)

    def setting(self, key: str) -> Setting | None:
        return self.contexts.effective(self.workspace.config.settings).get(key)

    def credential(self, name: str, host: str) -> str:
        return self.auth.require(name, host).value

    def default_host(self, credential: str) -> str:
        return self.auth.default_host(credential)

    def state(self, make: Callable[[], T]) -> T:
        if make not in self._states:
            self._states[make] = make()
        found: T = self._states[make]
        return found

    def on_close(self, closer: Callable[[], None]) -> None:
        self._closers.append(closer)

    def check_host(self, host: str, network: HostRule | None) -> None:
        if network is None:
            return
        allowed, reason = network.check(host, resolve=True)
        if not allowed:
            from runtime.errors import MissingCapability

            raise MissingCapability(
                f"{reason}: the capability declares {network.describe()}",
                hint="change metadata.mda.requires.network in the capability if this host is "
                "intended",
            )

    @cached_property
    def _program_environment(self) -> dict[str, str]:
        environ = self.environ
        return {n: environ[n] for n in self.workspace.policy.binary_environment if n in environ}

    def program_environment(self) -> dict[str, str]:
        return dict(self._program_environment)

    def scratch(self, name: str) -> contextlib.AbstractContextManager[str]:
        return self.launcher.scratch(name)

    def run_program(
        self,
        argv: list[str],
        environ: Mapping[str, str],
        *,
        timeout: float,
        on_output: Callable[[str, str], None],
        scratch: str | None = None,
        network: HostRule | None = None,
    ) -> ProgramResult:
        from runtime.execute import egress
        from runtime.execute.launch import children, reap_orphans
        from runtime.execute.process import ProcessStartError, run_process

        launcher = self.launcher
        executables: tuple[str, ...] = ()
        allowed: list[egress.Allowed] = []
        if launcher.confined:
            found = self._access(argv[0])
            executables = found.executables
            allowed = [egress.Allowed.parse(host) for host in found.hosts]
        # whichever program this is, any git it starts (gh's clone, a hook's) is hardened
        environ = {**environ, **self.git_environment(argv[0], environ)}
        # confined, the step's PID namespace ends with it; unconfined, what it leaves behind
        # is found among our children (we are a subreaper) and killed
        before = set() if launcher.confined else children()
        with contextlib.ExitStack() as stack:
            refusal = _refusal(network)
            proxy = stack.enter_context(egress.serving(allowed, refusal)) if allowed else None
            command, child = launcher.command(
                argv, environ, executables=executables, proxy=proxy, scratch=scratch
            )
            try:
                result = run_process(
                    command,
                    env=child,
                    cwd=self.cwd,
                    timeout=timeout,
                    on_output=on_output,
                    redact=self._redactor.text,
                    subreaper=self._subreaper,
                )
            except ProcessStartError as exc:
                raise StepError(exc.message, hint=_start_hint(exc.errno)) from None
            finally:
                if not launcher.confined:
                    reap_orphans(before)
            if proxy is not None and proxy.refused:
                result = result._replace(blocked=tuple(dict.fromkeys(proxy.refused)))
            return result

    def _access(self, program: str) -> ProgramAccess:
        """What a confined ``program`` may execute besides itself, and the hosts it may reach
        (:func:`runtime.execute.profiles.access`), found once per run."""
        from runtime.execute.profiles import access

        known = self.state(_Accesses)
        if program not in known:
            policy = self.workspace.policy
            known[program] = access(
                program,
                declared=self.workspace.registry.program_profiles(),
                path=self.workspace.path,
                admitted=policy.admitted_helpers,
                named_hosts=policy.binary_hosts,
                credential_hosts=self._credential_hosts,
            )
        return known[program]

    def _credential_hosts(self, credential: str) -> tuple[str, ...]:
        """The host a credential is for in this run, and the names its programs use for it."""
        kind = self.auth.kinds().get(credential)
        if kind is None:  # no provider declares it
            return ()
        host = self.auth.default_host(credential)
        return (host, *(kind.host_aliases(host) if kind.host_aliases else ()))

    def git_environment(self, program: str, environ: Mapping[str, str]) -> dict[str, str]:
        """The variables that harden every git ``program`` starts, itself included
        (:mod:`runtime.execute.githarden`): made once per run and per git, with the
        identity that git reads from the user's global configuration. The git is
        ``program`` when it is git, else the one on ``environ``'s PATH (the one the
        program would start); with none, the hardening carries no identity."""
        from runtime.execute.githarden import git_environment, read_identity

        is_git = "git" in (os.path.basename(program), os.path.basename(os.path.realpath(program)))
        git = program if is_git else shutil.which("git", path=environ.get("PATH", ""))
        known = self.state(_GitEnvironments)
        key = git or ""
        if key not in known:
            identity = read_identity(git, self.environ) if git else {}
            known[key] = git_environment(identity, hooks=self.workspace.policy.git_hooks[0])
        return dict(known[key])

    # -- the end of the run ------------------------------------------------------------------
    def close(self) -> None:
        while self._closers:
            closer = self._closers.pop()
            with contextlib.suppress(Exception):  # closing must never mask the run's result
                closer()


class _Accesses(dict[str, "ProgramAccess"]):
    """What each program may execute and reach, found once per run (RunServices.state)."""


class _GitEnvironments(dict[str, dict[str, str]]):
    """The hardened git environment per git program, made once per run."""


def _refusal(network: HostRule | None) -> Callable[[str], str | None] | None:
    """Why ``network`` (the capability's ``requires.network``) refuses a host, or None."""
    if network is None:
        return None
    rule = network

    def refused(host: str) -> str | None:
        allowed, reason = rule.check(host, resolve=True)
        return None if allowed else f"{reason} (the capability declares {rule.describe()})"

    return refused


def _stop_reaping() -> None:
    from runtime.execute.launch import become_subreaper

    become_subreaper(False)


def _start_hint(errno: int | None) -> str:
    """What to do about a program that did not start, by the reason the system gave."""
    import errno as codes

    if errno == codes.E2BIG:  # one argument over 128 KiB, or all of them over ARG_MAX
        return "the arguments are too long for one program start: pass less data per step"
    if errno in (codes.ENOENT, codes.EACCES, codes.ENOEXEC, codes.ENOTDIR):
        return "check that the program is installed and executable"
    return "check the program and the working directory the step runs in"


# the name the stations and the CLI use
Services = RunServices


def _identity(path: str) -> tuple[int, int] | None:
    """A folder's (device, inode), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
