"""Finding capabilities: exact paths, folders, and names through ordered sources."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from runtime.errors import NotFound
from runtime.reading import kind


class Target(NamedTuple):
    path: Path
    display: str
    explicit: bool  # named on the command line (not found inside a folder)
    name: str | None = None  # resolved through a source by this name


@dataclass
class Entry:
    name: str
    path: Path
    source: Path
    shadowed_by: Path | None = None


@dataclass
class Listing:
    entries: list[Entry] = field(default_factory=list)


def written_as_path(arg: str) -> bool:
    """Whether ``arg`` is written as a path: a Markdown file's name, or a path that starts
    with ``.``, ``/`` or ``~`` or ends with ``/`` (``./many``, ``many/``). Anything else is
    a name first (``many``, ``github/repo-health``), even where a folder of that name
    exists: a capability that makes ``many/`` is still run as ``many``."""
    return arg.endswith((".md", os.sep)) or arg.startswith((".", os.sep, "~"))


def project_folder(cwd: Path, environ: Mapping[str, str]) -> Path | None:
    """The folder whose ``capabilities/`` a name is looked up in: the working folder or the
    nearest folder above it that holds one, as git finds ``.git`` and just a justfile.

    The search stops at the first folder holding ``capabilities/``, at the top of a git
    repository (a folder holding ``.git``: a project's capabilities are never taken from
    the repository around it), and below ``HOME`` and the file system's root, which are
    looked in only when they are the working folder (a stray ``~/capabilities`` would
    otherwise stand in for every project under ``~``). ``None``: no such folder."""
    home = environ.get("HOME")
    # the working folder is a real path (getcwd); HOME may name one through a link
    ceiling = Path(os.path.realpath(home)) if home and os.path.isabs(home) else None
    folder = cwd
    while True:
        if (folder / "capabilities").is_dir():
            return folder
        parent = folder.parent
        if (
            os.path.lexists(folder / ".git")
            or folder == ceiling
            or parent == ceiling
            or parent.parent == parent  # the root: looked in only as the working folder
            or parent == folder
        ):
            return None
        folder = parent


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def markdown_files(folder: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        out.extend(Path(root) / f for f in sorted(files) if f.endswith(".md"))
    return out


def unusable(source: Path) -> str | None:
    """Why a capability source is skipped by every lookup; ``None`` when it is a folder."""
    if source.is_dir():
        return None
    return "is not a folder" if source.exists() else "does not exist"


def resolve_name(name: str, sources: list[Path]) -> Path | None:
    for source in sources:
        candidate = source / f"{name}.md"
        if candidate.is_file():
            return candidate
    return None


def resolve_one(arg: str, sources: list[Path], cwd: Path) -> Target:
    """One capability by exact path or by name. A name that is no capability's but is a
    file or a folder of the working folder is taken as that path, as before names came
    first (a folder is then refused, naming the capability it may have meant)."""
    if not written_as_path(arg):
        found = resolve_name(arg, sources)
        if found is not None:
            return Target(found, _display(found, cwd), True, arg)
        if not os.path.lexists(cwd / arg):
            where = ", ".join(f"{s} ({why})" if (why := unusable(s)) else str(s) for s in sources)
            raise NotFound(
                f"no capability named '{arg}'",
                hint=f"looked for {arg}.md in: {where}"
                + (
                    ", and found no capabilities/ folder above the working folder (the search "
                    "stops at a git repository's top and below HOME)"
                    if cwd / "capabilities" in sources and unusable(cwd / "capabilities")
                    else ""
                )
                + "; give a path, or add a folder to capability_sources in config.yaml",
            )
    path = Path(os.path.expanduser(arg))
    path = path if path.is_absolute() else cwd / path
    try:
        mode = path.stat().st_mode  # a stat: never waits, unlike opening a FIFO
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(
            f"no such file: {arg}", hint="check the path, or give a capability name"
        ) from None
    except OSError:
        # there, but not to be reached (a loop of symbolic links, a folder that may
        # not be searched): the loader says why, as validate does for the same file
        return Target(path, _display(path, cwd), True)
    if stat.S_ISDIR(mode):
        name = Path(arg).name  # "many" of ./many and many/; none of "." or "~"
        meant = resolve_name(name, sources) if name not in ("", "..", "~") else None
        hint = "use `runtime capability validate DIR` for folders"
        if meant is not None:
            hint = (
                f"did you mean the capability '{name}' ({_display(meant, cwd)})? Name it "
                f"without a path: `{name}`; " + hint
            )
        raise NotFound(f"{arg} is a folder; name one capability file", hint=hint)
    what = kind(mode)
    if what is not None:
        raise NotFound(
            f"{arg} is {what}, not a regular file",
            hint="name a capability's Markdown file",
        )
    return Target(path, _display(path, cwd), True)


def resolve_many(args: list[str], sources: list[Path], cwd: Path) -> list[Target]:
    """Paths, folders (recursively) and names, in the order given; a name first, as
    :func:`resolve_one` takes it, then a folder of that name."""
    out: list[Target] = []
    for arg in args:
        if not written_as_path(arg):
            found = resolve_name(arg, sources)
            if found is not None:
                out.append(Target(found, _display(found, cwd), True, arg))
                continue
        path = Path(os.path.expanduser(arg))
        path = path if path.is_absolute() else cwd / path
        if path.is_dir():
            out.extend(Target(p, _display(p, cwd), False) for p in markdown_files(path))
            continue
        out.append(resolve_one(arg, sources, cwd))
    return out


def list_sources(sources: list[Path]) -> Listing:
    listing = Listing()
    first: dict[str, Entry] = {}
    for source in sources:
        if not source.is_dir():
            continue
        for path in markdown_files(source):
            if not path.is_file():  # a named pipe, a socket: never opened (a FIFO would wait)
                continue
            name = path.relative_to(source).with_suffix("").as_posix()
            entry = Entry(name, path, source)
            if name in first:
                entry.shadowed_by = first[name].path
            else:
                first[name] = entry
            listing.entries.append(entry)
    return listing
