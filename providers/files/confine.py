"""Path confinement for the files provider.

Two layers keep every file operation inside the policy's roots:

1. :func:`confine` resolves the path as given (relative to the working
   directory, ``..`` and symbolic links resolved like ``os.path.realpath``)
   and refuses it unless the real path lies inside one of the real roots.
   This check has no side effects, so planning can use it. A path the
   system cannot take (too long, or not a name at all) is
   :class:`UnusablePath` instead (:func:`unusable`): an invalid argument,
   which no policy decided.
2. :func:`open_parent` then walks from the root to the target's parent one
   component at a time with ``O_NOFOLLOW | O_DIRECTORY`` and returns a
   directory descriptor. Every later operation uses that descriptor and the
   final name (``dir_fd=...``, no symlink following), so a component swapped
   for a symbolic link between the check and the use makes the walk fail
   instead of escaping the root.

Because the components come from the *resolved* path, a symbolic link in the
path as given (a final one included) has already been replaced by its real
target, which the first layer proved to be inside a root.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.provider import PolicyRefusal, StepError
from runtime.provider.run import ProtectedPaths

DEFAULT_PATH_MAX = 4096
DEFAULT_NAME_MAX = 255

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Confined:
    """A path proven to be inside a root, split for a descriptor-relative walk."""

    given: str  # the path as the user wrote it
    resolved: Path  # its real path
    root: Path  # the real root that contains it
    parts: tuple[str, ...]  # components from the root to the target's parent
    name: str  # the final component; "" when the target is the root itself
    access: str  # "read" or "write"
    roots: tuple[Path, ...]  # every root of that access (for messages)
    # the path as given ends in a symbolic link (its target is ``resolved``)
    link: bool = False

    @property
    def is_root(self) -> bool:
        return self.name == ""

    @property
    def parent(self) -> Path:
        return self.root.joinpath(*self.parts)


class UnusablePath(StepError):
    """A path the system cannot take: a name (a component) over NAME_MAX bytes, the whole
    over PATH_MAX (``code`` path-too-long), or a lone surrogate that stands for no byte
    (path-not-a-name). It is not the policy's to refuse: no file operation could use the
    path wherever it pointed, so plan and validate report it as an invalid argument
    (exit 2) before anything runs. ``what`` says of the path what is wrong (``has a name
    of 300 bytes...``) for a message that names it as its caller does.
    """

    def __init__(self, path: str, what: str, *, hint: str, code: str) -> None:
        super().__init__(f"the path {_short(path)!r} {what}", hint=hint)
        self.what = what
        self.code = code


class ParentMissing(StepError):
    """A folder on the way to the target does not exist."""

    def __init__(self, message: str, *, folder: str) -> None:
        super().__init__(message, hint="create it first with `files mkdir`")
        self.folder = folder


def policy_key(access: str) -> str:
    return "read_roots" if access == "read" else "write_roots"


def describe_roots(access: str, roots: Sequence[Path]) -> str:
    """``the write root /a`` / ``the write roots /a, /b`` / ``no write roots``."""
    if not roots:
        return f"no {access} roots (none are configured)"
    if len(roots) == 1:
        return f"the {access} root {roots[0]}"
    return f"the {access} roots " + ", ".join(str(r) for r in roots)


def refusal_hint(access: str) -> str:
    key = policy_key(access)
    return (
        f"to allow it, add the folder to `{key}` in a user policy "
        "($RUNTIME_POLICY_FILE, else policy.yaml in Runtime Home)"
    )


def _refuse(message: str, access: str) -> PolicyRefusal:
    return PolicyRefusal(message, hint=refusal_hint(access))


@functools.lru_cache(maxsize=64)
def _limits(roots: tuple[Path, ...]) -> tuple[int, int]:
    """(PATH_MAX, NAME_MAX) of the roots' file systems; asked once per process."""
    return (
        _limit("PC_PATH_MAX", roots, DEFAULT_PATH_MAX),
        _limit("PC_NAME_MAX", roots, DEFAULT_NAME_MAX),
    )


def _limit(name: str, where: Sequence[Path], default: int) -> int:
    for path in [*where, Path("/")]:
        try:
            value = os.pathconf(path, name)
        except (OSError, ValueError):
            continue
        if value > 0:
            return value
    return default


def _size(text: str) -> int:
    """``text``'s length in bytes, as the system takes it (a byte that was not UTF-8 is
    one byte again)."""
    return len(os.fsencode(text))


def _too_long_component(path: str, name_max: int) -> str | None:
    if len(path) * 4 <= name_max:  # no character encodes to more than 4 bytes
        return None
    for part in path.split(os.sep):
        if _size(part) > name_max:
            return part
    return None


def system_limits(where: Sequence[Path] = ()) -> tuple[int, int]:
    """(PATH_MAX, NAME_MAX) of the file system of ``where`` (the first that answers), else
    of ``/``, else the usual 4096 and 255."""
    return _limits(tuple(where))


def unusable(path: str, limits: tuple[int, int], cwd: str | None = None) -> UnusablePath | None:
    """Why the system cannot take ``path``, or None: a lone surrogate that is no byte (a
    YAML "\\ud800" makes one; a byte that is not UTF-8 is "\\udc80" to "\\udcff" and
    is that byte again), a name over NAME_MAX bytes, or the path, as given or (with
    ``cwd``) taken from ``cwd``, of PATH_MAX bytes or more (PATH_MAX counts the NUL that
    ends a path)."""
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        return UnusablePath(
            path,
            f"holds {path[exc.start]!r}, a lone surrogate: half of a UTF-16 pair, which no "
            "name can hold",
            hint="write the character itself (in YAML, \\U0001F600 for one beyond \\uFFFF, "
            "not two \\u escapes)",
            code="path-not-a-name",
        )
    path_max, name_max = limits
    long_part = _too_long_component(path, name_max)
    if long_part is not None:
        which = "" if long_part == path else f" ({_short(long_part, 40)!r})"
        return UnusablePath(
            path,
            f"has a name of {_size(long_part)} bytes{which}, over the {name_max} bytes the "
            "file system takes for one name (NAME_MAX)",
            hint=f"shorten that name to at most {name_max} bytes (a character outside ASCII "
            "takes 2 to 4 of them)",
            code="path-too-long",
        )
    if len(path) * 4 >= path_max and _size(path) >= path_max:
        return UnusablePath(
            path,
            f"is {_size(path)} bytes long, over the {path_max - 1} bytes the system takes "
            f"for a path (PATH_MAX)",
            hint="use a shorter path: fewer or shorter folder names, or a relative path from "
            "a folder nearer the file",
            code="path-too-long",
        )
    if cwd is not None and not path.startswith(os.sep):
        absolute = os.path.join(cwd, path)
        if len(absolute) * 4 >= path_max and _size(absolute) >= path_max:
            return UnusablePath(
                path,
                f"is {_size(absolute)} bytes long taken from the working directory "
                f"({_short(cwd)}), over the {path_max - 1} bytes the system takes for a "
                "path (PATH_MAX)",
                hint="run from a folder nearer the file, or use a shorter path",
                code="path-too-long",
            )
    return None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# What strict resolution meets on a path that is as it was when it was looked at: a
# component not there (a file to be written), under a file, a loop, a folder that may not
# be read, a link naming too long a path. The lenient answer is the one wanted for these.
_ORDINARY = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES, errno.ENAMETOOLONG))


def _resolve(absolute: str) -> str:
    """``os.path.realpath(absolute)``, except that a link that stops being one while it is
    read (lstat saw a link, readlink finds none) raises OSError on every Python.

    Up to 3.12 lenient ``realpath`` let readlink's error through; from 3.13 it takes
    the name for a plain one and resolves on, so a path swapped while it was checked
    would pass as an ordinary one. Strict resolution still raises it; any other error
    it raises is one the lenient answer handles (a file to be written does not exist
    yet; a loop is found by :func:`_remaining_link`).
    """
    try:
        return os.path.realpath(absolute, strict=True)
    except OSError as exc:
        if exc.errno not in _ORDINARY:
            raise
    return os.path.realpath(absolute)


def _remaining_link(resolved: str) -> str | None:
    """The first prefix of a realpath result that is still a symbolic link.

    Non-strict ``realpath`` leaves a link in place when it meets a loop; a
    link found here means the path cannot be resolved.
    """
    # One lstat answers the usual case: a path without links lstats as a non-link
    # or fails as missing; a loop left in the middle fails with ELOOP.
    try:
        if not stat.S_ISLNK(os.lstat(resolved).st_mode):
            return None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            return None
    current = os.sep
    for part in Path(resolved).parts[1:]:
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return current
    return None


def confine(
    path: str,
    roots: Sequence[Path],
    cwd: Path,
    access: str,
) -> Confined:
    """Resolve ``path`` and prove it is inside one of ``roots``; raise PolicyRefusal if not,
    and :class:`UnusablePath` if the system could not take it.

    ``roots`` are real paths (``Policy.roots`` returns them so); relative
    paths are taken from ``cwd``. No file is opened or created.
    """
    real_roots = tuple(roots)

    def where() -> str:  # for the messages: formatted only when one is raised
        return describe_roots(access, real_roots)

    if path == "":
        raise _refuse(f"refused: the path is empty; name something under {where()}", access)
    if "\0" in path:
        raise _refuse(
            f"refused: the path {_short(path)!r} contains a NUL byte; it is never valid "
            f"(paths must stay under {where()})",
            access,
        )
    limits = _limits(real_roots)
    # checked before anything is resolved: the system could not take the path at all
    found = unusable(path, limits, os.fspath(cwd))
    if found is not None:
        raise found
    absolute = os.path.join(os.fspath(cwd), path)

    try:
        resolved = _resolve(absolute)
    except OSError:  # a link swapped for something else while it was read
        raise _refuse(
            f"refused: {path!r} changed while it was checked; the path must resolve under {where()}",
            access,
        ) from None
    root = _containing_root(resolved, real_roots)
    if root is None:
        raise _refuse(f"refused: {path!r} resolves to {resolved}, outside {where()}", access)
    link = _remaining_link(resolved)
    if link is not None:
        raise _refuse(
            f"refused: {path!r} cannot be resolved: {link} is part of a symbolic link loop "
            f"(or changed while it was checked); the path must resolve under {where()}",
            access,
        )
    beyond = unusable(resolved, limits)
    if beyond is not None:  # a symbolic link on the way names a longer path
        raise UnusablePath(
            path,
            f"resolves to {_short(resolved)}, which {beyond.what}",
            hint="a symbolic link on the way names that path: name the file by one that "
            "the system can take",
            code=beyond.code,
        )
    below = resolved[len(os.fspath(root)) :].strip(os.sep)
    relative = below.split(os.sep) if below else []
    parts, name = (relative[:-1], relative[-1]) if relative else ([], "")
    linked = os.path.islink(absolute)
    return Confined(path, Path(resolved), root, tuple(parts), name, access, real_roots, linked)


def _containing_root(resolved: str, roots: Sequence[Path]) -> Path | None:
    """The deepest root that ``resolved`` is inside (both are normalised real paths)."""
    best: Path | None = None
    best_length = -1
    for root in roots:
        text = os.fspath(root)
        inside = resolved == text or resolved.startswith(text.rstrip(os.sep) + os.sep)
        if inside and len(text) > best_length:
            best, best_length = root, len(text)
    return best


def open_parent(confined: Confined) -> int:
    """A directory descriptor of the target's parent, reached without following links.

    The root is opened by its real path, then each component with
    ``O_NOFOLLOW | O_DIRECTORY`` relative to the previous descriptor. The
    caller closes the descriptor. For a target that is the root itself the
    root's descriptor is returned.
    """
    where = describe_roots(confined.access, [confined.root])
    try:
        fd = os.open(confined.root, _DIR_FLAGS)
    except FileNotFoundError:
        raise StepError(
            f"{where} does not exist",
            hint=f"create it, or change `{policy_key(confined.access)}` in a user policy",
        ) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(
                f"refused: {confined.given!r}: {where} is no longer a folder "
                "(it changed after it was checked)",
                confined.access,
            ) from None
        raise StepError(f"cannot open {where}: {exc.strerror}") from None
    walked: list[str] = []
    try:
        for part in confined.parts:
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _walk_error(confined, fd, part, walked, exc) from None
            os.close(fd)
            fd = next_fd
            walked.append(part)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _walk_error(
    confined: Confined, fd: int, part: str, walked: list[str], exc: OSError
) -> StepError | PolicyRefusal:
    folder = os.path.join(confined.root, *walked, part)
    where = describe_roots(confined.access, [confined.root])
    if exc.errno == errno.ENOENT:
        return ParentMissing(
            f"parent folder {folder} does not exist (needed for {confined.given!r})",
            folder=folder,
        )
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            st = os.stat(part, dir_fd=fd, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and not stat.S_ISLNK(st.st_mode):
            return StepError(f"{folder} is not a folder (needed for {confined.given!r})")
        return _refuse(
            f"refused: {confined.given!r}: {folder} became a symbolic link after the path "
            f"was checked; it is not followed, so the operation stays inside {where}",
            confined.access,
        )
    if exc.errno == errno.EACCES:
        return StepError(f"permission denied opening the folder {folder}")
    return StepError(f"cannot open the folder {folder}: {exc.strerror}")


# -- protected paths ----------------------------------------------------------------------

PROTECTED_HOME = "protected path: Runtime Home"
PROTECTED_GIT = "protected path: .git"
PROTECTED_REPOSITORY = "protected path: git repository"
PROTECTED_POLICY = "protected path: policy file"

# Code points HFS+ ignores in names (git's is_hfs_dotgit skips them too): ".g\u200cit" is ".git".
_HFS_IGNORABLE = dict.fromkeys(
    (*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF)
)


def is_dotgit(name: str) -> bool:
    """Whether git may take the name ``name`` for ``.git``.

    Case-insensitively (a case-insensitive file system makes ``.GIT`` the
    repository's metadata), ignoring the code points HFS+ ignores and the
    trailing dots and spaces NTFS drops, and NTFS's short name ``git~1``.
    """
    folded = name.translate(_HFS_IGNORABLE).casefold().rstrip(" .")
    return folded in (".git", "git~1")


def protected_refusal(
    confined: Confined, protected: ProtectedPaths
) -> tuple[str, PolicyRefusal] | None:
    """The rule and refusal when a write would touch a protected path, else ``None``.

    Refused: anything at or inside Runtime Home, the user policy file,
    anything at or inside a path component named ``.git`` (a folder, or a
    gitfile ``gitdir: ...``) in the real path or in the path as given (a
    symbolic link named ``.git`` is taken for one by git), and anything at or
    inside a folder that git takes for a repository's metadata whatever its
    name (:func:`git_directory`: a bare repository, the folder a gitfile or
    a worktree points to), or that the write would make one. That is looked
    up on the file system when asked, so a repository an earlier step of the
    run created (``git init --bare far``) is one when the files step runs.
    """
    given = confined.given
    resolved = os.fspath(confined.resolved)
    home = protected.home
    if (
        resolved == home
        or resolved.startswith(home.rstrip(os.sep) + os.sep)
        or _reaches(resolved, protected.home_id)
    ):
        relation = "is" if resolved == home else "is inside"
        return PROTECTED_HOME, PolicyRefusal(
            f"refused: {given!r} {relation} Runtime Home ({home}), which capabilities never "
            "write: it holds the audit log, the policy, contexts and configuration",
            hint="write somewhere outside Runtime Home, and change runtime's own files yourself; "
            "run capabilities from a project folder rather than the folder that contains Home",
        )
    if protected.policy_file is not None and (
        resolved == protected.policy_file or _is_policy(resolved, protected.policy_at)
    ):
        return PROTECTED_POLICY, PolicyRefusal(
            f"refused: {given!r} is the user policy file ({protected.policy_file}), which "
            "capabilities never write: it decides what they may do",
            hint="edit the policy yourself, outside a capability; write the data to another file",
        )
    where = _dotgit_prefix(resolved.split(os.sep))
    if where is None:
        where = _dotgit_prefix(given.split(os.sep))
    if where is not None:
        path, last = where
        relation = "is" if last else "is inside"
        return PROTECTED_GIT, PolicyRefusal(
            f"refused: {given!r} {relation} {path!r}, a git repository's metadata (.git), which "
            "capabilities never write: its config and hooks name programs git runs",
            hint="change a repository with `git` steps; write files in its working tree, "
            "not under .git",
        )
    found = _repository_around(resolved)
    if found is not None:
        folder, relation = found
        if relation == "would make":
            said = f"would make {folder!r} a git repository (HEAD, objects and refs together)"
        else:
            said = f"{relation} {folder!r}, a git repository (it holds HEAD, objects and refs)"
        return PROTECTED_REPOSITORY, PolicyRefusal(
            f"refused: {given!r} {said}, which capabilities never write: its config and "
            "hooks name programs git runs, even for a push from another repository",
            hint="change a repository with `git` steps; write files outside it",
        )
    return None


# What makes a folder a repository's metadata to git (setup.c, is_git_directory): HEAD,
# and objects/ and refs/ folders -- or a commondir file naming where those are (a
# worktree's metadata).
_HEAD, _OBJECTS, _REFS, _COMMONDIR = "HEAD", "objects", "refs", "commondir"
_MARKS = tuple(name.casefold() for name in (_HEAD, _OBJECTS, _REFS, _COMMONDIR))


def git_directory(folder: str, adding: str | None = None) -> bool:
    """Whether git takes ``folder`` for a repository's metadata (``.git``, or a bare
    repository), as ``is_git_directory`` does: it holds ``HEAD`` and either ``objects``
    and ``refs`` folders or a ``commondir`` file. With ``adding``, whether it would once
    an entry of that name is made in it (compared case-insensitively: a case-insensitive
    file system takes ``head`` for ``HEAD``). ``HEAD`` is not read: any entry counts."""
    added = adding.casefold() if adding is not None else None

    def has(name: str, check: Callable[[str], bool]) -> bool:
        return added == name.casefold() or check(os.path.join(folder, name))

    if not has(_HEAD, os.path.lexists):
        return False
    if has(_COMMONDIR, os.path.isfile):
        return True
    return has(_OBJECTS, os.path.isdir) and has(_REFS, os.path.isdir)


def _repository_around(resolved: str) -> tuple[str, str] | None:
    """The repository folder ``resolved`` is (``"is"``) or is inside (``"is inside"``),
    the nearest first, or the one writing ``resolved`` would make of its parent
    (``"would make"``); None when there is none. Every folder up to ``/`` is looked at:
    a root may itself lie inside a repository."""
    path, relation = resolved, "is"
    while True:
        if git_directory(path):
            return path, relation
        up = os.path.dirname(path)
        if up == path:
            break
        path, relation = up, "is inside"
    parent, name = os.path.split(resolved)
    if name.casefold() in _MARKS and git_directory(parent, adding=name):
        return parent, "would make"
    return None


def _reaches(resolved: str, folder: tuple[int, int] | None) -> bool:
    """Whether ``resolved`` is the folder whose (device, inode) is ``folder``, or inside
    it, by whatever path (a bind mount gives a folder a second real path)."""
    if folder is None:
        return False
    path = resolved
    while True:
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == folder:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def _is_policy(resolved: str, policy_at: tuple[int, int, str] | None) -> bool:
    """Whether ``resolved`` names the policy file through another path to its folder."""
    if policy_at is None or os.path.basename(resolved) != policy_at[2]:
        return False
    try:
        st = os.stat(os.path.dirname(resolved))
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == policy_at[:2]


def _dotgit_prefix(parts: list[str]) -> tuple[str, bool] | None:
    """The path up to the first ``.git`` component, and whether that is the last one."""
    for index, part in enumerate(parts):
        if part and is_dotgit(part):
            rest = [p for p in parts[index + 1 :] if p]
            return os.sep.join(parts[: index + 1]) or os.sep, not rest
    return None
