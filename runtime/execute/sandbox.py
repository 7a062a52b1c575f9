"""Confine one program with bubblewrap (``bwrap``): the operating-system layer of the design.

What it gives a binary step
---------------------------
- Only the policy's folders exist: system folders and read roots read-only,
  write roots read-write, everything else is simply absent from the mount
  namespace (not "permission denied": not there). Outside the write roots and
  the private temporary folder everything is read-only, bwrap's own root too:
  a write there fails with the program's own error (EROFS), never lands in a
  scratch space that vanishes with the step (:func:`view` says what a path is
  inside, for the messages that explain it).
- A private ``/proc`` in a PID namespace of its own: the program sees only its
  own processes, never the runtime's ``/proc/<pid>/environ`` (where tokens live).
- Processes die with their step. bwrap runs as PID 1 of the namespace, and when
  it exits the kernel kills every process left in it, so a double-forked
  ``--detach`` daemon cannot outlive the step. ``--die-with-parent`` does the
  same when the runtime itself is SIGKILLed.
- A network namespace of its own, always (``--unshare-net``, part of
  ``--unshare-all``): not even loopback reaches the host, nor do the host's
  abstract unix sockets. A step that may reach hosts does so through the
  egress proxy (:mod:`runtime.execute.egress`), whose unix socket is bound in.
- Landlock, applied last: the program runs through a :class:`Guard`, the code
  of :mod:`runtime.execute.inside`, which restricts what can be executed (and
  TCP connects, abstract sockets and signals) just before ``execve``. What the
  program may execute is bound read-only, so nothing writable is executable.
- Read-only overlays: Runtime Home and the user's policy file stay read-only
  even when they lie under a write root.
- ``--cap-drop ALL``: no capability survives, even when runtime runs as root.
- No ``--new-session``: the program stays in the process group the caller
  started bwrap in, so that killing that group (a timeout, a signal to the
  runtime) reaches it even in the moment before bwrap has set up
  ``--die-with-parent`` inside. The caller starts bwrap in a session of its
  own with stdin from /dev/null, so the program has no controlling terminal
  to inject keystrokes into (TIOCSTI) either way.

Why bubblewrap and Landlock
---------------------------
Landlock alone only ever adds allowed trees: it cannot carve a read-only hole
(Runtime Home) out of a writable tree, nor hide other processes' ``/proc``
entries, nor kill a daemon that escaped the process group. bubblewrap does all
of this with namespaces and needs no privileges where unprivileged user
namespaces are allowed (Debian, Fedora, most CI runners). What bubblewrap
cannot do is decide what may be executed: Landlock's ``EXECUTE`` right does,
per file and folder, and it must come after bubblewrap (a Landlock domain may
not mount). Their cost, a confined start for bubblewrap and a Python start
for the Landlock step, is not felt next to the programs steps run.

The command line, and why its order matters
-------------------------------------------
bwrap applies mounts in the order given, and a later mount hides whatever an
earlier one put at or below the same path. :func:`command` therefore emits:

1. namespaces and hardening: ``--unshare-all``, ``--die-with-parent``,
   ``--cap-drop ALL``;
2. system folders, read-only, shallow before deep; a host path that is a
   symlink (merged-/usr: ``/bin -> usr/bin``) becomes the same symlink inside,
   since binding it would duplicate a tree instead of reproducing the layout;
3. a minimal ``--dev /dev`` and a private ``--proc /proc``;
4. the private temporary folder, a tmpfs (see :func:`private_tmp`), before the
   roots so that a root below it (tests keep theirs under ``/tmp``) shows through;
   a tmpfs of its own for each folder just below it that leads to a deeper bind
   (the skeleton of ``/tmp/ci/work``: ``/tmp/ci``), read-only at the end; then the
   system folders below it (a virtual environment under ``/tmp``), and the empty
   folders asked for inside it (``private_dirs``: gh's config folder);
5. read roots (``--ro-bind-try``), shallow before deep;
6. write roots (``--bind-try``), shallow before deep, after the read roots: a
   write root inside a read root is writable, and a read root inside a write
   root stays writable (the write bind of the outer folder covers it) -- the
   union of what the policy grants. Within one kind, shallow before deep
   changes nothing a program sees (each bind brings the host tree as it is);
   it keeps the command line stable and readable;
7. single extra files read-only (the binary's own real path outside the system
   folders, a CA bundle...), unless a mount above already shows them;
8. the guard's interpreter installation and the proxy's socket, read-only;
9. protected paths read-only, last, so they win over any write root above them
   (with a guard: also its interpreter and every file it lets be executed);
10. ``--remount-ro`` of each skeleton and of ``/``, bwrap's root, where it made
    the folders each mount needs: only the write roots, the private temporary
    folder and ``/dev`` (bwrap's minimal one, with its ``shm``) stay writable;
11. ``--chdir cwd``, ``--`` and the program (behind the guard's command line).

Roots and files use the ``-try`` variants, so a root missing on this machine is
skipped instead of failing the step. A protected path uses the plain
``--ro-bind``: if it vanished between the check and the mount, bwrap fails
rather than leave it writable.

Refused: a root, system folder or file that is ``/`` or an ancestor of ``/proc``
or ``/dev``, or lies under ``/proc`` -- binding it would bring back the host's
``/proc`` and devices over the private ones.

No ``--setenv``: bwrap passes on the environment it is started with, and the
caller builds that environment (including ``TMPDIR=private_tmp(spec)``). The
one change is bwrap's own: it sets ``PWD`` to the directory it changed to.
Paths are used as given: the caller passes real paths (policy roots are
resolved already); only protected paths are resolved here, because their
protection must land on the real folder a write root exposes.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runtime.execute import landlock

# How long the probe's trivial confined command may take before bwrap is deemed unusable.
PROBE_TIMEOUT = 2.0
# What the probe binds to run `true`: enough for a dynamically linked program.
PROBE_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PROBE_PROGRAMS = ("/usr/bin/true", "/bin/true")
# Where the private temporary folder may go, in order of preference; the first
# one no visible path covers wins (a root over it would hide the tmpfs).
TMP_CANDIDATES = ("/tmp", "/run/runtime-tmp", "/var/tmp/runtime-tmp")
# The private kernel views a bind from the host must never cover.
_PRIVATE_MOUNTS = ("/proc", "/dev")

NOT_INSTALLED = "bubblewrap (bwrap) is not installed; install the Debian package bubblewrap"
NO_LANDLOCK = (
    "the kernel offers no Landlock (Linux 5.13 or later with lsm=landlock), so what a "
    "confined program may execute cannot be restricted"
)
NO_NAMESPACES_HINT = (
    "unprivileged user namespaces may be turned off (sysctl kernel.unprivileged_userns_clone"
    " / user.max_user_namespaces, or kernel.apparmor_restrict_unprivileged_userns on Ubuntu)"
)


@dataclass(frozen=True)
class Availability:
    """Whether OS confinement is usable here; ``reason`` says why not, in words a user can act on."""

    ok: bool
    bwrap: str | None  # absolute path of the bwrap found, None when none was
    reason: str = ""
    landlock: int = 0  # the kernel's Landlock ABI version (0: none)


@dataclass(frozen=True, kw_only=True)
class Confinement:
    """What one confined program may see. Every path is absolute."""

    cwd: str  # working directory inside, the same path as outside
    read_paths: tuple[str, ...] = ()  # policy read roots (real paths)
    write_paths: tuple[str, ...] = ()  # policy write roots (real paths)
    system_paths: tuple[str, ...] = ()  # system folders, read-only; missing ones are skipped
    extra_read_files: tuple[str, ...] = ()  # single files, read-only
    protected_paths: tuple[str, ...] = ()  # read-only even under a write root
    private_dirs: tuple[str, ...] = ()  # empty folders made inside the private temporary folder
    guard: Guard | None = None  # what runs inside before the program: Landlock, bridges


@dataclass(frozen=True)
class Bridge:
    """A loopback port inside the sandbox carried to the egress proxy: as a proxy itself
    (``target`` None: programs send CONNECT through it) or to one fixed ``target``."""

    address: str
    port: int
    target: str | None = None


@dataclass(frozen=True, kw_only=True)
class Guard:
    """The trusted code run inside the sandbox just before the program
    (:mod:`runtime.execute.inside`): what it may execute, and the network it carries."""

    python: str  # the interpreter's real path
    prefix: str  # its installation (standard library), bound read-only
    source: str  # the code, given in argv: never read from a file a step could write
    executables: tuple[str, ...]  # files and folders the program may execute
    bridges: tuple[Bridge, ...] = ()
    proxy: str | None = None  # the egress proxy's unix socket (host path, bound at the same)

    def argv(self, program: Sequence[str]) -> list[str]:
        words = [f"exec={path}" for path in self.executables]
        words += [f"port={port}" for port in sorted({b.port for b in self.bridges})]
        words += [f"bridge={b.address},{b.port},{b.target or ''}" for b in self.bridges]
        if self.proxy is not None:
            words.append(f"proxy={self.proxy}")
        return [self.python, "-I", "-S", "-B", "-c", self.source, *words, "--", *program]


def probe(path_env: str) -> Availability:
    """Find bwrap on ``path_env`` and prove, once per process, that it confines here with
    Landlock inside: a trivial program run as steps are run.

    Never raises for an ordinary failure: a missing bwrap, a kernel without
    unprivileged user namespaces or Landlock, or a hanging bwrap all come back as
    ``ok=False``.
    """
    if not sys.platform.startswith("linux"):
        return Availability(
            ok=False, bwrap=None, reason="not Linux: bubblewrap needs Linux namespaces"
        )
    found = shutil.which("bwrap", path=path_env)
    abi = landlock.abi()
    if found is None:
        return Availability(ok=False, bwrap=None, reason=NOT_INSTALLED, landlock=abi)
    return _probe_bwrap(os.path.abspath(found), abi)


@functools.cache
def _probe_bwrap(bwrap: str, abi: int) -> Availability:
    """Run ``true`` confined the way :func:`command` confines steps; cached per bwrap path."""
    program = next((p for p in PROBE_PROGRAMS if os.access(p, os.X_OK)), None)
    if program is None:
        return Availability(
            ok=False,
            bwrap=bwrap,
            reason="cannot test bwrap: neither /usr/bin/true nor /bin/true exists",
            landlock=abi,
        )
    if abi < landlock.EXECUTE_ABI:
        return Availability(ok=False, bwrap=bwrap, reason=NO_LANDLOCK, landlock=abi)
    spec = Confinement(
        cwd="/", system_paths=PROBE_SYSTEM_PATHS, guard=guard(landlock.executables([program]))
    )
    argv = command(bwrap, [program], spec)
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            env={},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Availability(
            ok=False,
            bwrap=bwrap,
            reason=f"bwrap ({bwrap}) did not run a trivial confined command within {PROBE_TIMEOUT:g} s",
            landlock=abi,
        )
    except OSError as exc:
        return Availability(
            ok=False,
            bwrap=bwrap,
            reason=f"bwrap ({bwrap}) cannot be started: {exc.strerror}",
            landlock=abi,
        )
    if proc.returncode == 0:
        return Availability(ok=True, bwrap=bwrap, landlock=abi)
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = lines[0].strip() if lines else f"exit status {proc.returncode}"
    if detail.startswith("runtime-confine:"):
        reason = f"Landlock cannot be applied inside the sandbox: {detail[16:].strip()}"
    else:
        reason = f"bwrap cannot create namespaces here: {detail}; {NO_NAMESPACES_HINT}"
    return Availability(ok=False, bwrap=bwrap, reason=reason, landlock=abi)


def guard(
    executables: Sequence[str], bridges: Sequence[Bridge] = (), proxy: str | None = None
) -> Guard:
    """The guard that lets the program execute ``executables`` only (real paths)."""
    python, prefix = landlock.interpreter()
    return Guard(
        python=python,
        prefix=prefix,
        source=landlock.source(),
        executables=tuple(executables),
        bridges=tuple(bridges),
        proxy=proxy,
    )


def private_tmp(spec: Confinement) -> str:
    """The path of the step's private tmpfs inside; the caller sets ``TMPDIR`` to it.

    ``/tmp`` unless a visible path is ``/tmp`` itself or an ancestor of it (its
    bind would hide the tmpfs); then the next of :data:`TMP_CANDIDATES`.
    """
    visible = _normalized(
        [*spec.system_paths, *spec.read_paths, *spec.write_paths, *spec.extra_read_files]
    )
    for candidate in TMP_CANDIDATES:
        if not any(_within(candidate, path) for path in visible):
            return candidate
    raise ValueError(
        "no free place for the private temporary folder: roots cover " + ", ".join(TMP_CANDIDATES)
    )


def command(bwrap: str, argv: Sequence[str], spec: Confinement) -> list[str]:
    """The bwrap command line that runs ``argv`` confined as ``spec`` says (order: module docstring).

    Raises ValueError for a relative path or a path that would uncover the host's
    ``/proc`` or ``/dev``.
    """
    if not argv or not os.path.isabs(argv[0]):
        raise ValueError("the program must be named by an absolute path")
    _check(spec)
    tmp = private_tmp(spec)

    args = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]

    shown: list[str] = []  # destinations of binds, to know what is visible already

    def system(mounts: list[tuple[str, str | None]]) -> None:
        for dest, link in mounts:
            if link is not None:
                args.extend(["--symlink", link, dest])
            else:
                args.extend(["--ro-bind-try", dest, dest])
                shown.append(dest)

    mounts = _system_mounts(spec.system_paths)
    # a system folder below the private temporary folder (a virtual environment under
    # /tmp) is mounted after its tmpfs, which would hide it
    system([m for m in mounts if not _within(m[0], tmp)])
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", tmp]
    skeletons = _skeletons(spec, tmp)
    for folder in skeletons:
        args += ["--tmpfs", folder]
    system([m for m in mounts if _within(m[0], tmp)])
    for folder in spec.private_dirs:
        if not _within(os.path.normpath(folder), tmp) or os.path.normpath(folder) == tmp:
            raise ValueError(f"{folder} is not inside the private temporary folder {tmp}")
        args += ["--dir", folder]

    writable = set(_normalized(spec.write_paths))
    readable = [p for p in _normalized(spec.read_paths) if p not in writable]
    for path in _shallow_first(readable):
        args += ["--ro-bind-try", path, path]
    for path in _shallow_first(writable):
        args += ["--bind-try", path, path]
    shown += readable
    shown += writable

    for file in _normalized(spec.extra_read_files):
        # Re-binding a file already shown would only make it read-only under a write root.
        if not any(_within(file, root) for root in shown):
            args += ["--ro-bind-try", file, file]

    roots = readable + list(writable)
    protected = [os.path.realpath(p) for p in spec.protected_paths]
    guard = spec.guard
    if guard is not None:
        system_folders = [m[0] for m in mounts if m[1] is None]
        if not any(_within(guard.prefix, folder) for folder in system_folders):
            args += ["--ro-bind", guard.prefix, guard.prefix]
        if guard.proxy is not None:
            args += ["--ro-bind", guard.proxy, guard.proxy]
        # W^X: what the program may execute is never writable, even under a write root
        protected += [guard.prefix, *guard.executables]
    for path in _normalized(protected):
        if os.path.exists(path) and any(_within(path, root) for root in roots):
            args += ["--ro-bind", path, path]

    # Last of the mounts: bwrap's own root, where it made the folders leading to each
    # mount, and the skeletons below the private temporary folder become read-only, so
    # that a write outside the write roots and that folder fails (EROFS) where the
    # program can say so, instead of landing in a tmpfs that is gone with the step.
    for folder in skeletons:
        args += ["--remount-ro", folder]
    args += ["--remount-ro", "/"]

    program = guard.argv(argv) if guard is not None else list(argv)
    args += ["--chdir", spec.cwd, "--", *program]
    return args


def _destinations(spec: Confinement) -> list[str]:
    """Where :func:`command` binds something from the host (before protected paths)."""
    bound = [m[0] for m in _system_mounts(spec.system_paths) if m[1] is None]
    bound += [*spec.read_paths, *spec.write_paths, *spec.extra_read_files]
    if spec.guard is not None:
        bound.append(spec.guard.prefix)
        if spec.guard.proxy is not None:
            bound.append(spec.guard.proxy)
    return _normalized(bound)


def _skeletons(spec: Confinement, tmp: str) -> list[str]:
    """The folders just below the private temporary folder that lead to something bound
    deeper from the host (a root under ``/tmp``): each gets a tmpfs of its own, made
    read-only once the binds are made, so that the folders bwrap makes on the way (a
    root's parent) are not writable scratch space. A private folder's tree stays as it
    is (it must be writable), and so does one the host's tree is bound at."""
    bound = _destinations(spec)
    private = {os.path.normpath(f) for f in spec.private_dirs}
    found: set[str] = set()
    for dest in bound:
        if not _within(dest, tmp) or dest == tmp:
            continue
        parts = dest[len(tmp.rstrip("/")) + 1 :].split("/")
        if len(parts) > 1:
            found.add(f"{tmp.rstrip('/')}/{parts[0]}")
    return sorted(
        top
        for top in found
        if top not in bound and not any(_within(p, top) or _within(top, p) for p in private)
    )


def view(spec: Confinement, path: str) -> str:
    """What a program confined as ``spec`` finds at ``path`` (absolute, symlinks resolved),
    as :func:`command` mounts it:

    - ``write``: the host's, writable (a write root);
    - ``read``: the host's, read-only (a read root, a system folder, a protected path
      under a root, a single file bound in);
    - ``tmp``: the step's private temporary folder: its own, empty when it starts and
      gone when it ends, not the host's;
    - ``absent``: nothing of the host's; the sandbox is read-only there (at most the
      empty folders that lead to a root).
    """
    path = os.path.normpath(path)
    writable = _normalized(spec.write_paths)
    readable = _normalized(spec.read_paths)
    protected = [os.path.realpath(p) for p in spec.protected_paths]
    if any(_within(path, p) for p in protected) and any(
        _within(path, root) for root in [*readable, *writable]
    ):
        return "read"
    if any(_within(path, root) for root in writable):
        return "write"
    if any(_within(path, root) for root in _destinations(spec)):
        return "read"
    tmp = private_tmp(spec)
    if _within(path, tmp) and not any(_within(path, s) for s in _skeletons(spec, tmp)):
        return "tmp"
    return "absent"


def _check(spec: Confinement) -> None:
    named = [
        *spec.system_paths,
        *spec.read_paths,
        *spec.write_paths,
        *spec.extra_read_files,
        *spec.protected_paths,
        spec.cwd,
    ]
    for path in named:
        if not os.path.isabs(path):
            raise ValueError(f"not an absolute path: {path!r}")
    for path in [*spec.system_paths, *spec.read_paths, *spec.write_paths, *spec.extra_read_files]:
        norm = os.path.normpath(path)
        if any(_within(mount, norm) for mount in _PRIVATE_MOUNTS) or _within(norm, "/proc"):
            raise ValueError(f"{path} would expose the host's /proc or /dev inside the sandbox")


def _system_mounts(paths: Iterable[str]) -> list[tuple[str, str | None]]:
    """(destination, symlink target or None for a read-only bind), shallow first; missing skipped."""
    mounts: dict[str, str | None] = {}
    for path in _normalized(paths):
        if os.path.islink(path):
            try:
                mounts[path] = os.readlink(path)
            except OSError:
                continue
        elif os.path.exists(path):
            # Reached through a symlinked parent (/lib/x86_64-linux-gnu): bind the real folder.
            mounts.setdefault(os.path.realpath(path), None)
    return [(dest, mounts[dest]) for dest in _shallow_first(mounts)]


def _normalized(paths: Iterable[str]) -> list[str]:
    """Normalized, without duplicates, in the order given."""
    return list(dict.fromkeys(os.path.normpath(p) for p in paths))


def _shallow_first(paths: Iterable[str]) -> list[str]:
    return sorted(paths, key=lambda p: (len([part for part in p.split("/") if part]), p))


def _within(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies below it (both normalized, absolute)."""
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")
