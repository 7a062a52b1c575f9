"""Runtime Home: the per-user folder runtime keeps its state in.

Runtime-owned (rewritten to match the installed version): ``specs/``, the
``version`` file and ``manifest.json`` (sha256 of each runtime-owned file).
``temporaries.key`` is runtime's too: a random secret created once (0600)
that the files provider keys its temporary file names with
(:func:`home_key`), so that it only ever sweeps files it created, and so is
``agent-hook.json``, what the shell-hook guard keeps of the policy
(:mod:`runtime.agent.settings`). User-owned (never touched by a refresh):
``config.yaml``, ``policy.yaml``, ``contexts.json``, ``capabilities/``,
``audit/``. A refresh makes an empty ``capabilities/`` when there is none, as
Engineering Runtime's bootstrap does (its CI checks that the folder exists and
is empty), and never writes in it.

Engineering Runtime's names for the same places are aliases
(:data:`ALIASES`): ``ENGINEERING_RUNTIME_HOME`` for ``RUNTIME_HOME``, and
``RUNTIME_CAPABILITIES_DIR``, which stands in for Home's ``capabilities/`` in the
capability sources. runtime's own name wins when both are set.

Every file runtime replaces here goes through :func:`atomic_write`: a
temporary ``.NAME.PID.tmp`` beside it, fsynced and renamed over it. One left
by a killed process is removed by the next refresh that does work (every
``runtime bootstrap``): only that exact shape, only for the names runtime
writes, only in the folders it owns, and only when process PID is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runtime import __version__

RUNTIME_OWNED_DIRS = ("specs",)
MANIFEST = "manifest.json"
VERSION_FILE = "version"
TEMPORARIES_KEY = "temporaries.key"
# Files runtime writes at the top of Home with atomic_write ("contexts": the name an
# earlier version gave contexts.json's temporary; agent-hook.json: what the shell-hook
# guard keeps of the policy, runtime/agent/settings.py). Their temporaries may be swept.
_ROOT_WRITTEN = (
    MANIFEST,
    VERSION_FILE,
    "contexts.json",
    TEMPORARIES_KEY,
    "contexts",
    "agent-hook.json",
)
_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[1-9][0-9]{0,9})\.tmp$")
_KEY_BYTES = 32


# Engineering Runtime's environment names, and runtime's for the same thing (None: runtime
# has no variable of its own for it)
ALIASES: dict[str, str | None] = {
    "ENGINEERING_RUNTIME_HOME": "RUNTIME_HOME",
    "RUNTIME_CAPABILITIES_DIR": None,
}


def alias_notes(environ: Mapping[str, str]) -> list[str]:
    """What to say of the aliases set in ``environ``: one that loses to runtime's own name
    set to another value (so that a CI job that sets both learns which one is used)."""
    notes = []
    for alias, own in ALIASES.items():
        theirs, ours = environ.get(alias), environ.get(own) if own else None
        if own and theirs and ours and Path(theirs).expanduser() != Path(ours).expanduser():
            notes.append(
                f"{own} and {alias} are both set; {own} wins ({ours}), {alias} ({theirs}) "
                "is ignored"
            )
    return notes


def home_path(environ: Mapping[str, str]) -> Path:
    """``RUNTIME_HOME``, else Engineering Runtime's ``ENGINEERING_RUNTIME_HOME``, else the
    per-user data folder. An empty variable is an unset one (a CI job's ``VAR: ""``)."""
    explicit = environ.get("RUNTIME_HOME") or environ.get("ENGINEERING_RUNTIME_HOME")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    try:
        return Path(user_data_dir("runtime", appauthor=False))
    except (RuntimeError, KeyError):  # no HOME, and no home for this user in /etc/passwd
        from runtime.errors import UsageError

        raise UsageError(
            f"cannot tell where Runtime Home is: HOME is not set and user {os.getuid()} has "
            "no home folder in the password database (common in containers and cron)",
            hint="set RUNTIME_HOME to a folder (a missing one is created), or set HOME",
        ) from None


def capabilities_path(environ: Mapping[str, str], home: Home, cwd: Path) -> Path:
    """The folder that stands last in the capability sources: ``RUNTIME_CAPABILITIES_DIR``
    (Engineering Runtime's name for it; a relative one from the working folder ``cwd``),
    else Home's ``capabilities/``. An empty variable is an unset one."""
    named = environ.get("RUNTIME_CAPABILITIES_DIR")
    if named:
        return Path(os.path.normpath(cwd / Path(named).expanduser()))
    return home.capabilities_dir


@dataclass
class Home:
    root: Path

    @property
    def audit_dir(self) -> Path:
        return self.root / "audit"

    @property
    def audit_log(self) -> Path:
        return self.audit_dir / "audit.jsonl"

    @property
    def config_file(self) -> Path:
        return self.root / "config.yaml"

    @property
    def policy_file(self) -> Path:
        return self.root / "policy.yaml"

    @property
    def contexts_file(self) -> Path:
        return self.root / "contexts.json"

    @property
    def capabilities_dir(self) -> Path:
        return self.root / "capabilities"

    @property
    def specs_dir(self) -> Path:
        return self.root / "specs"


def in_the_way(root: Path) -> tuple[Path, str] | None:
    """What stops Home at ``root`` from being a folder: ``root``, or the nearest of its
    parents that exists, when that is not a folder, and what it is ("a file", "a named
    pipe"); None when nothing does (or it cannot be told)."""
    import stat

    from runtime.reading import kind

    for path in (root, *root.parents):
        try:
            mode = path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):  # missing, or below a file
            continue
        except OSError:
            return None
        if stat.S_ISDIR(mode):
            return None
        return path, kind(mode) or "a file"
    return None


@dataclass
class RefreshReport:
    home: Path
    version: str
    previous_version: str | None
    written: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    unchanged: int = 0
    # user-owned folders a refresh made because they were missing (``capabilities``)
    created: list[str] = field(default_factory=list)
    # temporaries of killed writers removed (.NAME.PID.tmp), relative to Home
    swept: list[str] = field(default_factory=list)


def _holds(path: Path, digest: str) -> bool:
    """Whether ``path`` is a file whose sha256 is ``digest``; a file that cannot be read
    does not (it is written again)."""
    try:
        return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except OSError:
        return False


def _shipped_files() -> dict[str, Path]:
    from runtime.home.resources import specs_dir

    root = specs_dir()
    files: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files["specs/" + path.relative_to(root).as_posix()] = path
    return files


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Home's writers take turns: a refresh, and a read-change-write of a file in Home
    (``contexts.json``), hold the exclusive lock on ``.lock`` while they work. Not
    reentrant: a holder must not take it again."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data``: ``.NAME.PID.tmp`` beside it, fsync, rename.

    ``mode`` is given to the temporary before any byte is written (``None``:
    0o666 less the umask). A temporary a killed process leaves is swept by
    :func:`sweep_temporaries`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # an existing file of that name keeps its mode otherwise
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        # the file that could not be replaced is what is at fault (a folder in its place),
        # not the temporary the rename started from
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def sweep_temporaries(root: Path, runtime_files: set[str]) -> list[str]:
    """Remove ``.NAME.PID.tmp`` temporaries of dead processes; return them relative to ``root``.

    Only for ``NAME`` a file runtime writes in that folder (``runtime_files``: paths
    relative to ``root``, plus :data:`_ROOT_WRITTEN` at the top), only regular files,
    never the temporary of a process that is alive (or of this one).
    """
    by_folder: dict[str, set[str]] = {"": set(_ROOT_WRITTEN)}
    for rel in runtime_files:
        parts = rel.split("/")
        if parts[0] not in RUNTIME_OWNED_DIRS or any(p in ("", ".", "..") for p in parts):
            continue  # a hand-edited manifest names no other folder
        folder, _, name = rel.rpartition("/")
        by_folder.setdefault(folder, set()).add(name)
    removed: list[str] = []
    for folder, names in sorted(by_folder.items()):
        where = root / folder if folder else root
        try:
            entries = [e.name for e in os.scandir(where)]
        except OSError:
            continue
        for entry in sorted(entries):
            match = _TEMP_NAME.match(entry)
            if match is None or match.group("name") not in names:
                continue
            pid = int(match.group("pid"))
            if pid == os.getpid() or _pid_alive(pid):
                continue
            target = where / entry
            try:
                if not target.is_file() or target.is_symlink():
                    continue
                target.unlink()
            except OSError:
                continue
            removed.append(f"{folder}/{entry}" if folder else entry)
    return removed


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    key = data.strip()
    return key if len(key) >= _KEY_BYTES else None


def home_key(root: Path, purpose: str) -> bytes | None:
    """Home's secret for ``purpose`` (``temporaries``: naming temporary files), read, or
    created once (0600, ``PURPOSE.key``) under the lock.

    ``None`` when Home cannot hold one (not writable): the caller then uses a key of its
    own for this process, and its temporaries are never recognised by a later sweep.
    """
    path = root / f"{purpose}.key"
    try:
        key = _read_key(path)
        if key is not None:
            return key
        with locked(root):
            key = _read_key(path)  # another process may have made it meanwhile
            if key is None:
                atomic_write(path, secrets.token_hex(_KEY_BYTES).encode() + b"\n", 0o600)
                key = _read_key(path)
    except OSError:
        return None
    return key


def is_current(home: Home) -> bool:
    """Cheap check used by every command: one small file read."""
    try:
        return (home.root / VERSION_FILE).read_text(encoding="utf-8").strip() == __version__ and (
            home.root / MANIFEST
        ).is_file()
    except OSError:
        return False


def refresh(home: Home, *, verify: bool = False) -> RefreshReport:
    """Make the runtime-owned part of Home match the installed version.

    Without ``verify`` the work is skipped when the version file already
    matches. With it (``runtime bootstrap``) each file's sha256 is checked
    and repaired. User-owned files are never touched.
    """
    if not verify and is_current(home):
        return RefreshReport(home.root, __version__, __version__)
    with locked(home.root):
        previous: str | None
        try:
            previous = (home.root / VERSION_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            previous = None
        if not verify and previous == __version__ and (home.root / MANIFEST).is_file():
            return RefreshReport(home.root, __version__, previous)  # another process won the race
        try:
            old_manifest: dict[str, str] = json.loads(
                (home.root / MANIFEST).read_text(encoding="utf-8")
            ).get("files", {})
        except (OSError, ValueError, AttributeError):
            old_manifest = {}
        report = RefreshReport(home.root, __version__, previous)
        manifest: dict[str, str] = {}
        for rel, source in _shipped_files().items():
            data = source.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            manifest[rel] = digest
            target = home.root / rel
            if _holds(target, digest):
                report.unchanged += 1
                continue
            if target.is_dir() and not target.is_symlink():
                # an empty folder in the place of a runtime file holds nothing of anyone's;
                # one with something in it is left, and the write below says so
                with contextlib.suppress(OSError):
                    target.rmdir()
            atomic_write(target, data)
            report.written.append(rel)
        for rel in sorted(set(old_manifest) - set(manifest)):
            if not rel.startswith(tuple(d + "/" for d in RUNTIME_OWNED_DIRS)):
                continue  # never prune outside runtime-owned folders
            target = home.root / rel
            if target.is_file():
                target.unlink()
                report.pruned.append(rel)
        report.swept = sweep_temporaries(home.root, set(old_manifest) | set(manifest))
        report.created = _make_user_folders(home)
        for folder in RUNTIME_OWNED_DIRS:
            _remove_empty_dirs(home.root / folder)
        atomic_write(
            home.root / MANIFEST,
            (
                json.dumps({"version": __version__, "files": manifest}, indent=2, sort_keys=True)
                + "\n"
            ).encode(),
        )
        atomic_write(home.root / VERSION_FILE, (__version__ + "\n").encode())
        return report


def _make_user_folders(home: Home) -> list[str]:
    """Home's ``capabilities/``, made empty when nothing is there; something else in its
    place (a file, a link) is the user's and stays as it is."""
    target = home.capabilities_dir
    if os.path.lexists(target):
        return []
    target.mkdir()
    return [target.name]


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for path in sorted(
        (p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        with contextlib.suppress(OSError):
            path.rmdir()
