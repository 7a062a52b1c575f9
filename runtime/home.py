"""Runtime Home: the per-user folder runtime keeps its state in.

Runtime-owned (rewritten to match the installed version): ``specs/``, the
``version`` file and ``manifest.json`` (sha256 of each runtime-owned file).
User-owned (never touched by a refresh): ``config.yaml``, ``policy.yaml``,
``contexts.json``, ``capabilities/``, ``audit/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runtime import __version__

RUNTIME_OWNED_DIRS = ("specs",)
MANIFEST = "manifest.json"
VERSION_FILE = "version"


def home_path(environ: Mapping[str, str]) -> Path:
    explicit = environ.get("RUNTIME_HOME")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("runtime", appauthor=False))


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


@dataclass
class RefreshReport:
    home: Path
    version: str
    previous_version: str | None
    written: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.written or self.pruned) or self.previous_version != self.version


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shipped_files() -> dict[str, Path]:
    from runtime.resources import specs_dir

    root = specs_dir()
    files: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files["specs/" + path.relative_to(root).as_posix()] = path
    return files


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
    with _locked(home.root):
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
            if target.is_file() and _sha256(target) == digest:
                report.unchanged += 1
                continue
            _atomic_write(target, data)
            report.written.append(rel)
        for rel in sorted(set(old_manifest) - set(manifest)):
            if not rel.startswith(tuple(d + "/" for d in RUNTIME_OWNED_DIRS)):
                continue  # never prune outside runtime-owned folders
            target = home.root / rel
            if target.is_file():
                target.unlink()
                report.pruned.append(rel)
        for folder in RUNTIME_OWNED_DIRS:
            _remove_empty_dirs(home.root / folder)
        _atomic_write(
            home.root / MANIFEST,
            (
                json.dumps({"version": __version__, "files": manifest}, indent=2, sort_keys=True)
                + "\n"
            ).encode(),
        )
        _atomic_write(home.root / VERSION_FILE, (__version__ + "\n").encode())
        return report


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for path in sorted(
        (p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        with contextlib.suppress(OSError):
            path.rmdir()
