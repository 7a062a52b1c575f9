"""Finding capabilities: exact paths, folders, and names through ordered sources."""

from __future__ import annotations

import os
import stat
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


def looks_like_path(arg: str) -> bool:
    return (
        arg.endswith(".md")
        or arg.startswith((".", "/", "~"))
        or (os.sep in arg and Path(arg).exists())
        or Path(arg).exists()
    )


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
    """One capability by exact path or by name."""
    if looks_like_path(arg):
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
            raise NotFound(
                f"{arg} is a folder; name one capability file",
                hint="use `runtime capability validate DIR` for folders",
            )
        what = kind(mode)
        if what is not None:
            raise NotFound(
                f"{arg} is {what}, not a regular file",
                hint="name a capability's Markdown file",
            )
        return Target(path, _display(path, cwd), True)
    found = resolve_name(arg, sources)
    if found is None:
        where = ", ".join(f"{s} ({why})" if (why := unusable(s)) else str(s) for s in sources)
        raise NotFound(
            f"no capability named '{arg}'",
            hint=f"looked for {arg}.md in: {where}; give a path, or add a folder to capability_sources in config.yaml",
        )
    return Target(found, _display(found, cwd), True, arg)


def resolve_many(args: list[str], sources: list[Path], cwd: Path) -> list[Target]:
    """Paths, folders (recursively) and names, in the order given."""
    out: list[Target] = []
    for arg in args:
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
