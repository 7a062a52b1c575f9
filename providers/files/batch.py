"""A structured edit's batch: the files it finds, what it would make of each, its checks.

An edit (``files yaml set``, ``files terraform set-attribute``...) looks under a folder
(``--dir``) for files by name (``--filename``) or glob (``--include``), hands each
file's text to the format's :class:`Editor`, and gets back the new text and the number
of matches. The whole batch is worked out and checked before the first write: every
file found, read and edited, each file with a match holding the count expected of it
(``--expected-per-file``), and the policy's bounds (``file_edits``: files changed, bytes
read, matches, diff bytes, seconds) kept. Only then is a file written, each atomically
(:func:`providers.files.atomic.replace`). A check that fails writes nothing.

The walk never follows a symbolic link (a link is skipped and said so) and never enters
a repository's metadata (``.git``, or a folder git takes for one); each file is read
through descriptors from the folder's, as the other operations read theirs
(:mod:`providers.files.confine`). Every file it would write is checked against the
protected paths.

The plan works the batch out too (its preview: counts and diffs). The run keeps what it
worked out, by each file's content: when the step runs, a file whose bytes are still
those is not edited again, and one that changed since (an earlier step wrote it) is.
"""

from __future__ import annotations

import difflib
import errno
import fnmatch
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from providers.files.atomic import TempNames
from providers.files.confine import (
    Confined,
    ParentMissing,
    git_directory,
    is_dotgit,
    open_parent,
    protected_refusal,
)
from runtime.provider import PolicyRefusal, Preview, PreviewFile, StepError
from runtime.provider.run import EditLimits, ProtectedPaths

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class EditFailure(Exception):
    """What keeps an editor from editing one file (its text is not valid YAML; the value
    at a path is a mapping): the batch names the file, and the line and column when
    given (1-based)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class ArgumentProblem(Exception):
    """An edit's argument it cannot take (a path that is no path, a value that is no HCL
    expression): an invalid argument, refused before anything runs (exit 2) at the arg
    of the option ``key``."""

    def __init__(self, key: str, message: str, hint: str | None = None):
        super().__init__(message)
        self.key = key
        self.message = message
        self.hint = hint


class Refused(PolicyRefusal):
    """A refusal of the batch with the rule that decided it (``file_edits.max_files``,
    ``protected path: .git``), for the plan's verdict."""

    def __init__(self, rule: str, message: str, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.rule = rule


class Editor(Protocol):
    """One edit, its arguments read: what it makes of one file's text."""

    def edit(self, text: str) -> tuple[str, int]:
        """The new text and the number of matches (a match may leave the text as it is:
        the value was already the one asked for). Raises :class:`EditFailure`."""
        ...


@dataclass(frozen=True)
class Selection:
    """Where an edit looks: the folder and the files' name or glob, and what it expects."""

    folder: Confined
    filename: str | None
    include: str | None
    expected: int | None

    def wants(self, name: str, relative: str) -> bool:
        if self.filename is not None and name == self.filename:
            return True
        if self.include is None:
            return False
        return fnmatch.fnmatchcase(relative if "/" in self.include else name, self.include)

    def describe(self) -> str:
        """``named build.yaml``, ``matching '*.tf'``."""
        parts = []
        if self.filename is not None:
            parts.append(f"named {self.filename}")
        if self.include is not None:
            parts.append(f"matching {self.include!r}")
        return " or ".join(parts)


@dataclass
class FileEdit:
    """One file of the batch, as read and as the edit leaves it."""

    parts: tuple[str, ...]  # folders from the search folder to the file's
    name: str
    shown: str  # its path as the step names it (the --dir given, then the rest)
    before: bytes
    after: bytes
    matches: int
    diff: str = ""
    before_sha256: str = ""
    after_sha256: str = ""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def outcome(self) -> str:
        if not self.matches:
            return "no-match"
        return "changed" if self.changed else "unchanged"


@dataclass
class Batch:
    selection: Selection
    files: list[FileEdit]  # every file found, in the order of the walk (sorted)
    skipped: list[str] = field(default_factory=list)  # links, not followed

    @property
    def matched(self) -> list[FileEdit]:
        return [f for f in self.files if f.matches]

    @property
    def changed(self) -> list[FileEdit]:
        return [f for f in self.files if f.changed]

    @property
    def matches(self) -> int:
        return sum(f.matches for f in self.files)

    def summary(self) -> str:
        changed, matched = len(self.changed), len(self.matched)
        line = (
            f"{_count(changed, 'file')} of {len(self.files)} would change, "
            f"{_count(self.matches, 'match')}"
        )
        if matched > changed:
            line += f" ({_count(matched - changed, 'file')} already as asked)"
        return line

    def preview(self) -> Preview:
        return Preview(
            summary=self.summary(),
            files=tuple(
                PreviewFile(f.shown, f.matches, f.before_sha256, f.after_sha256, f.diff)
                for f in self.matched
            ),
        )


def _count(n: int, word: str) -> str:
    plural = "es" if word.endswith("ch") else "s"
    return f"{n} {word}{'' if n == 1 else plural}"


@dataclass
class Memory:
    """What the run worked out, file by file: ``(call, path)`` to the sha256 of the content
    it was worked out on and the result; and the content the plan's earlier edits leave
    (the plan previews each edit on what the edits before it would leave)."""

    results: dict[tuple[tuple[str, ...], str], tuple[str, bytes, int]] = field(default_factory=dict)
    planned: dict[str, bytes] = field(default_factory=dict)  # real path -> content
    # the atomic writes' temporary names, and the folders swept of stale ones, this run
    names: TempNames | None = None
    swept: set[tuple[int, int]] = field(default_factory=set)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def limit_refusal(limits: EditLimits, key: str, what: str, shown: str) -> Refused:
    source = limits.sources.get(key, "default")
    where = "the default policy" if source == "default" else source
    return Refused(
        f"file_edits.{key} ({source})",
        f"refused: the edit {what}, over file_edits.{key} ({shown}, from {where}); "
        "nothing was written",
        hint="narrow --dir, --filename or --include, or split the edit into steps; "
        "a user policy may lower these bounds, never raise them",
    )


def work_out(
    selection: Selection,
    editor: Editor,
    *,
    call_key: tuple[str, ...],
    limits: EditLimits,
    protected: ProtectedPaths,
    memory: Memory,
    deadline: float | None,
    planning: bool,
) -> Batch:
    """The batch: every file found, read and edited, and every check before a write.
    Raises :class:`StepError` (a file's problem, a count not met: exit 1) or
    :class:`PolicyRefusal` (a bound passed, a protected path: exit 3).

    ``planning``: the plan's preview, which works on what the plan's earlier edits
    would leave and records what this one leaves for the edits after it. ``deadline``:
    the step's (``time.monotonic()``), if it comes before the policy's bound."""
    started = time.monotonic()
    bound = started + limits.seconds
    step_first = deadline is not None and deadline < bound
    deadline = min(deadline, bound) if deadline is not None else bound
    files: list[FileEdit] = []
    skipped: list[str] = []
    total = 0
    folder = selection.folder
    given = folder.given.rstrip("/") or "/"
    for parts, name, data in _read_files(selection, skipped, limits):
        total += len(data)
        if total > limits.bytes:
            raise limit_refusal(
                limits, "max_bytes", f"reads at least {_bytes(total)}", _bytes(limits.bytes)
            )
        shown = "/".join((given, *parts, name)) if given != "." else "/".join((*parts, name))
        real = os.path.join(folder.resolved, *parts, name)
        if planning:
            data = memory.planned.get(real, data)
        files.append(_edit_one(editor, call_key, real, shown, parts, name, data, memory))
        if time.monotonic() > deadline:
            raise _late(limits, step_first)
    batch = Batch(selection, files, skipped)
    _check(batch, limits, protected)
    if planning:
        for f in batch.changed:
            memory.planned[os.path.join(folder.resolved, *f.parts, f.name)] = f.after
    return batch


def _late(limits: EditLimits, step_first: bool) -> PolicyRefusal:
    if step_first:  # the step's own time limit came first
        return Refused(
            "timeout_seconds",
            "refused: the edit did not finish within the step's time limit; nothing was written",
            hint="raise the limit with --timeout SECONDS, or narrow the edit",
        )
    return limit_refusal(limits, "max_seconds", "takes longer than that", f"{limits.seconds:g} s")


def _edit_one(
    editor: Editor,
    call_key: tuple[str, ...],
    real: str,
    shown: str,
    parts: tuple[str, ...],
    name: str,
    data: bytes,
    memory: Memory,
) -> FileEdit:
    digest = _sha256(data)
    known = memory.results.get((call_key, real))
    if known is not None and known[0] == digest:
        after, matches = known[1], known[2]
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StepError(
                f"{shown} is not UTF-8 text (invalid byte at offset {exc.start}); nothing was "
                "written",
                hint="an edit reads text files only: convert it (iconv -t UTF-8) or leave it "
                "out of --filename / --include",
            ) from None
        try:
            new, matches = editor.edit(text)
        except EditFailure as exc:
            at = f":{exc.line}:{exc.column}" if exc.line is not None else ""
            raise StepError(
                f"{shown}{at}: {exc.message}; nothing was written",
                hint="fix the file, or leave it out of --filename / --include",
            ) from None
        after = new.encode("utf-8")
        memory.results[(call_key, real)] = (digest, after, matches)
    found = FileEdit(parts, name, shown, data, after, matches, before_sha256=digest)
    found.after_sha256 = digest if after == data else _sha256(after)
    if found.changed:
        found.diff = unified_diff(shown, data.decode("utf-8"), after.decode("utf-8"))
    return found


def unified_diff(shown: str, before: str, after: str) -> str:
    """The unified diff of a file's two texts, each line with its own line ending (a
    last line without one marked as diff marks it)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def _check(batch: Batch, limits: EditLimits, protected: ProtectedPaths) -> None:
    """Every check before a write: a file found, a match, the counts, the bounds, and no
    file written that is protected or not writable."""
    selection = batch.selection
    where = selection.folder.given
    if not batch.files:
        raise StepError(
            f"no file {selection.describe()} under {where}; nothing was written",
            hint="check --dir and --filename / --include (the search does not follow "
            "symbolic links, nor enter .git)",
        )
    if not batch.matched:
        raise StepError(
            f"no match in the {_count(len(batch.files), 'file')} {selection.describe()} "
            f"under {where}; nothing was written",
            hint="check the value or path the edit looks for; --output json lists the files "
            "looked at",
        )
    expected = selection.expected
    if expected is not None:
        wrong = [f for f in batch.matched if f.matches != expected]
        if wrong:
            named = ", ".join(f"{f.shown} has {_count(f.matches, 'match')}" for f in wrong[:5])
            more = f" and {len(wrong) - 5} more files" if len(wrong) > 5 else ""
            raise StepError(
                f"{named}{more}: {expected} expected per file (--expected-per-file "
                f"{expected}); nothing was written",
                hint="a file with a match must hold the count expected; narrow the path "
                "or value, or change --expected-per-file",
            )
    changed = batch.changed
    if len(changed) > limits.files:
        raise limit_refusal(
            limits, "max_files", f"would change {len(changed)} files", str(limits.files)
        )
    if batch.matches > limits.matches:
        raise limit_refusal(
            limits, "max_matches", f"makes {batch.matches} matches", str(limits.matches)
        )
    diff_bytes = sum(len(f.diff.encode("utf-8")) for f in changed)
    if diff_bytes > limits.diff_bytes:
        raise limit_refusal(
            limits,
            "max_diff_bytes",
            f"has a diff of {_bytes(diff_bytes)}",
            _bytes(limits.diff_bytes),
        )
    folder = selection.folder
    for f in changed:
        confined = _confined(folder, f)
        found = protected_refusal(confined, protected)
        if found is not None:
            rule, refusal = found
            raise Refused(rule, refusal.message, refusal.hint)
        if not os.access(confined.resolved, os.W_OK, effective_ids=True, follow_symlinks=False):
            raise StepError(
                f"{f.shown} is not writable; nothing was written",
                hint=f"make it writable first (chmod u+w {f.shown}) if it is meant to change",
            )


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:g} KiB"
    return f"{n / 1024 / 1024:g} MiB"


def _confined(folder: Confined, f: FileEdit) -> Confined:
    """A file of the batch as :func:`providers.files.confine.confine` would give it: the
    walk followed no link, so its real path is the folder's and the names walked."""
    inner = () if folder.is_root else (folder.name,)
    return Confined(
        f.shown,
        Path(folder.resolved, *f.parts, f.name),
        folder.root,
        (*folder.parts, *inner, *f.parts),
        f.name,
        "write",
        folder.roots,
    )


# -- the walk ------------------------------------------------------------------------------


def open_folder(folder: Confined) -> int:
    """A descriptor of the search folder, reached without following links."""
    try:
        fd = open_parent(folder)
    except ParentMissing:
        raise _no_folder(folder) from None
    if folder.is_root:
        return fd
    try:
        return os.open(folder.name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        raise _no_folder(folder) from None
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            raise StepError(
                f"--dir {folder.given!r} is not a folder ({folder.resolved})",
                hint="--dir names the folder searched; --filename or --include the files",
            ) from None
        raise StepError(f"cannot open the folder {folder.given!r}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _no_folder(folder: Confined) -> StepError:
    return StepError(f"no such folder: --dir {folder.given!r} ({folder.resolved})")


def _read_files(
    selection: Selection, skipped: list[str], limits: EditLimits
) -> Iterator[tuple[tuple[str, ...], str, bytes]]:
    """Each file the selection wants under its folder, sorted by path: (folders, name,
    content). Links are not followed (each is added to ``skipped``); ``.git`` and folders
    git takes for a repository's metadata are not entered."""
    root = open_folder(selection.folder)
    try:
        yield from _walk(root, (), str(selection.folder.resolved), selection, skipped, limits)
    finally:
        os.close(root)


def _walk(
    fd: int,
    parts: tuple[str, ...],
    real: str,
    selection: Selection,
    skipped: list[str],
    limits: EditLimits,
) -> Iterator[tuple[tuple[str, ...], str, bytes]]:
    with os.scandir(fd) as found:
        entries = sorted(found, key=lambda e: e.name)
    for entry in entries:
        name = entry.name
        relative = "/".join((*parts, name))
        if entry.is_symlink():
            if selection.wants(name, relative):
                skipped.append(relative)
            continue
        if entry.is_dir(follow_symlinks=False):
            if is_dotgit(name):
                continue
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # gone, or not ours to read: nothing to edit there
            inner = os.path.join(real, name)
            try:
                if git_directory(inner):
                    continue  # a bare repository's (or a worktree's) metadata
                yield from _walk(sub, (*parts, name), inner, selection, skipped, limits)
            finally:
                os.close(sub)
            continue
        if is_dotgit(name) or not selection.wants(name, relative):
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        yield parts, name, _read(fd, name, relative, limits)


def _read(fd: int, name: str, relative: str, limits: EditLimits) -> bytes:
    try:
        ffd = os.open(name, _FILE_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise StepError(f"cannot open {relative}: {exc.strerror}; nothing was written") from None
    try:
        st = os.fstat(ffd)
        if not stat.S_ISREG(st.st_mode):
            raise StepError(f"{relative} is not a regular file; nothing was written")
        if st.st_nlink > 1:
            raise Refused(
                "hard link",
                f"refused: {relative} is a file with {st.st_nlink} hard links; one may be "
                "outside the roots, so it is not edited; nothing was written",
                hint="copy it to a file of its own first, or leave it out of the edit",
            )
        if st.st_size > limits.bytes:
            raise limit_refusal(
                limits,
                "max_bytes",
                f"reads {relative} ({_bytes(st.st_size)})",
                _bytes(limits.bytes),
            )
        return _read_all(ffd)
    finally:
        os.close(ffd)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# -- writing -----------------------------------------------------------------------------


def write(batch: Batch) -> list[FileEdit]:
    """Write each file the batch changes, atomically, under its folder's writer lock; the
    content must still be what was read (another program may have written it since).
    Returns the files written; a failure names the ones written before it."""
    import fcntl

    from providers.files.atomic import replace, sweep_stale

    written: list[FileEdit] = []
    folder = batch.selection.folder
    for f in batch.changed:
        confined = _confined(folder, f)
        try:
            fd = open_parent(confined)
        except StepError as exc:
            raise _stopped(exc.message, written) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            sweep_stale(fd, f.name)
            try:
                ffd = os.open(f.name, _FILE_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _stopped(f"cannot open {f.shown}: {exc.strerror}", written) from None
            try:
                st = os.fstat(ffd)
                now = _read_all(ffd)
            finally:
                os.close(ffd)
            if now != f.before or st.st_nlink > 1 or not stat.S_ISREG(st.st_mode):
                raise _stopped(f"{f.shown} changed after it was checked", written)
            replace(fd, f.name, [f.after], st)
        finally:
            os.close(fd)
        written.append(f)
    return written


def _stopped(why: str, written: list[FileEdit]) -> StepError:
    done = ", ".join(f.shown for f in written) if written else "none"
    return StepError(
        f"{why}: the edit stopped there; written before it: {done}",
        hint="run the step again: files already edited have no match left, or the same "
        "result (see --expected-per-file)",
    )
