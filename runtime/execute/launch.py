"""How the engine starts a step's program: confined where the system allows it.

One :class:`Launcher` per run. With bubblewrap and Landlock usable
(:mod:`runtime.execute.sandbox`) every program a step starts -- an
allow-listed binary, or gh for a provider operation -- runs confined: it
reads only the policy's system paths and roots, writes only its write roots
and a private temporary folder (``TMPDIR``), never Runtime Home or the policy
file, sees only its own processes, executes only itself and the helpers it is
given, reaches the network only through the proxy it is given, and dies with
its step (and with the runtime, if the runtime is killed).

Without confinement (macOS, an old kernel, user namespaces turned off) the
policy station refuses such steps, unless a policy allows them to run
unconfined (``allow_unconfined: true``). Then the other layers still hold
(binding as authored, the policy, hardened git, protected paths), and the
runtime does what an unprivileged process can:

* each program is started through ``setpriv --pdeathsig KILL`` (util-linux)
  where it exists, so a SIGKILLed runtime takes the step's program with it;
* the runtime is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a daemon
  that double-forked out of the step's process group is re-parented to the
  runtime, which kills it when the step ends (:func:`reap_orphans`).

The runtime is a subreaper in both cases: confined, bubblewrap's helper in the
step's process group often ends just after the program, and as the runtime's
child it is reaped at once instead of waiting for init.

Preflight and ``runtime doctor`` say which of the two applies, layer by layer.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.execute import egress, landlock, sandbox

if TYPE_CHECKING:
    from runtime.plan.workspace import Workspace

# Variables naming files a program reads to trust a private CA: made visible inside.
_CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
# Proxy variables a program may have been given: replaced by the step's own proxy.
_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")
# The first port tried for the proxy inside the sandbox (its loopback is the step's own).
PROXY_PORT = 3128


@dataclass(frozen=True)
class Launcher:
    availability: sandbox.Availability
    base: sandbox.Confinement  # the policy's view of the machine; network and files per program
    setpriv: str | None = None  # unconfined: `setpriv --pdeathsig KILL` when it exists

    @property
    def confined(self) -> bool:
        return self.availability.ok

    def describe(self) -> str:
        if self.confined:
            return (
                f"confined by bubblewrap ({self.availability.bwrap}) and Landlock "
                f"(ABI {self.availability.landlock})"
            )
        return f"NOT OS-confined: {self.availability.reason}"

    def layers(self) -> list[tuple[str, bool, str]]:
        """Each layer of confinement: (name, whether it is in force, what it does or lacks)."""
        a = self.availability
        abi = a.landlock
        bwrap_ok = a.bwrap is not None and (a.ok or a.reason == sandbox.NO_LANDLOCK)
        on = a.ok
        return [
            (
                "bubblewrap",
                on and bwrap_ok,
                f"{a.bwrap}: the policy's roots only, a private /proc, PID and network "
                "namespace, nothing outlives its step"
                if bwrap_ok
                else a.reason,
            ),
            (
                "landlock-execute",
                on and abi >= landlock.EXECUTE_ABI,
                f"ABI {abi}: only the program and its profile's helpers can be executed"
                if abi >= landlock.EXECUTE_ABI
                else "the kernel offers no Landlock",
            ),
            (
                "landlock-tcp",
                on and abi >= landlock.TCP_ABI,
                "TCP connections only to the step's proxy"
                if abi >= landlock.TCP_ABI
                else f"needs Landlock ABI {landlock.TCP_ABI}, the kernel offers {abi}",
            ),
            (
                "landlock-scopes",
                on and abi >= landlock.SCOPE_ABI,
                "no abstract unix socket or signal outside the step"
                if abi >= landlock.SCOPE_ABI
                else f"needs Landlock ABI {landlock.SCOPE_ABI}, the kernel offers {abi}",
            ),
        ]

    @contextlib.contextmanager
    def scratch(self, name: str) -> Iterator[str]:
        """A folder of the program's own for this one start (gh's GH_CONFIG_DIR): pass it
        to :meth:`command` as ``scratch``.

        Confined, it is made empty inside the private temporary folder, which is new
        for each start and gone with it; unconfined, a host temporary folder removed
        afterwards.
        """
        if self.confined:
            yield f"{sandbox.private_tmp(self.base)}/{name}"
            return
        with tempfile.TemporaryDirectory(prefix=f"runtime-{name}-") as folder:
            yield folder

    def command(
        self,
        argv: Sequence[str],
        environ: Mapping[str, str],
        *,
        executables: Sequence[str] = (),
        proxy: egress.EgressProxy | None = None,
        scratch: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that start ``argv`` (argv[0] absolute) for a step.

        Confined, the program may execute itself (and its ELF interpreter) and
        ``executables``, nothing else; it reaches the network only through ``proxy``,
        when there is one: its port on the sandbox's loopback is what ``HTTPS_PROXY``
        names, and each loopback service it allows is listened on at its own address."""
        child = dict(environ)
        if not self.confined:
            prefix = [self.setpriv, "--pdeathsig", "KILL", "--"] if self.setpriv else []
            return [*prefix, *argv], child
        files = [os.path.realpath(argv[0])]
        files += [child[v] for v in _CA_VARIABLES if os.path.isabs(child.get(v, ""))]
        bridges: list[sandbox.Bridge] = []
        if proxy is not None:
            forwarded = [a for a in proxy.allowed if a.loopback]
            taken = {a.port for a in forwarded}
            port = next(p for p in range(PROXY_PORT, PROXY_PORT + 100) if p not in taken)
            bridges.append(sandbox.Bridge("127.0.0.1", port))
            for allowed in forwarded:
                assert allowed.port is not None
                target = str(allowed)
                bridges += [
                    sandbox.Bridge("127.0.0.1", allowed.port, target),
                    sandbox.Bridge("::1", allowed.port, target),
                ]
            url = f"http://127.0.0.1:{port}"
            for name in _PROXY_VARIABLES:
                child.pop(name, None)
                child.pop(name.lower(), None)
            for name in ("HTTPS_PROXY", "HTTP_PROXY"):
                child[name] = child[name.lower()] = url
        spec = replace(
            self.base,
            extra_read_files=tuple(files),
            private_dirs=(scratch,) if scratch else (),
            guard=sandbox.guard(
                landlock.executables([argv[0], *executables]),
                bridges,
                proxy.path if proxy is not None else None,
            ),
        )
        child["TMPDIR"] = sandbox.private_tmp(spec)
        assert self.availability.bwrap is not None
        return sandbox.command(self.availability.bwrap, argv, spec), child


def for_run(ws: Workspace, *, probe: bool = True) -> Launcher:
    """The run's launcher: the policy's paths, and whether bubblewrap confines here.

    ``probe=False`` (plan, which starts no process) only looks bwrap up on PATH.
    """
    policy = ws.policy
    cwd = str(ws.cwd)
    # as absolute paths: RUNTIME_POLICY_FILE (or RUNTIME_HOME) may be relative to the cwd
    protected = [os.path.realpath(ws.cwd / ws.home.root)]
    if ws.policy_file is not None:
        protected.append(os.path.realpath(ws.cwd / ws.policy_file))
    base = sandbox.Confinement(
        cwd=cwd,
        read_paths=tuple(str(p) for p in policy.roots("read", ws.cwd)),
        write_paths=tuple(str(p) for p in policy.roots("write", ws.cwd)),
        system_paths=tuple(os.path.expanduser(p) for p in policy.system_paths),
        protected_paths=tuple(protected),
    )
    if probe:
        availability = sandbox.probe(ws.path)
    else:
        found = shutil.which("bwrap", path=ws.path) if sys.platform.startswith("linux") else None
        abi = landlock.abi()
        reason = "" if found else sandbox.NOT_INSTALLED
        if found and abi < landlock.EXECUTE_ABI:
            reason = sandbox.NO_LANDLOCK
        availability = sandbox.Availability(ok=not reason, bwrap=found, reason=reason, landlock=abi)
    if availability.ok:
        try:
            sandbox.command(availability.bwrap or "bwrap", ["/bin/true"], base)
        except ValueError as exc:  # a root that would uncover /proc or /dev, e.g. write_roots: [/]
            availability = sandbox.Availability(
                ok=False, bwrap=availability.bwrap, reason=f"the policy's roots: {exc}"
            )
    setpriv = None
    if not availability.ok and sys.platform.startswith("linux"):
        setpriv = shutil.which("setpriv", path=ws.path)
    return Launcher(availability, base, setpriv)


# -- the runtime process itself ------------------------------------------------------------

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here: only runs that start steps pay for it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def protect_process() -> None:
    """Make the runtime not dumpable: no process of the same user can read its memory or
    its ``/proc/<pid>/environ`` (where a token from the environment lives), nor ptrace it."""
    _prctl(_PR_SET_DUMPABLE, 0)


def become_subreaper(on: bool = True) -> bool:
    """Orphans of our steps (a double-forked daemon) become our children, to be reaped;
    ``on=False`` when the run is over (a process that goes on is left as it was)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0)


def children() -> set[int]:
    """The runtime's child processes now (Linux; empty elsewhere)."""
    if not sys.platform.startswith("linux"):
        return set()
    me = str(os.getpid()).encode()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1] == me:
            found.add(int(entry.name))
    return found


def reap_orphans(before: set[int]) -> int:
    """Kill and reap the runtime's children that were not there before the step started:
    the step's own program has been waited for, so what is left escaped its process group
    (a double-forked daemon, re-parented to us as the subreaper)."""
    killed = [pid for pid in children() - before]
    for pid in killed:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in killed:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # SIGKILL cannot be caught: this returns at once
    return len(killed)
