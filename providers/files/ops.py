"""The files provider's operations: read, write, append, list, mkdir, delete.

Every path goes through :func:`providers.files.confine.confine` (the real
path must be inside a policy root) and then through a descriptor walk
(:func:`providers.files.confine.open_parent`), so each file operation is
relative to a directory descriptor and never follows a symbolic link.

Writes never touch a protected path, whatever the roots say
(:func:`providers.files.confine.protected_refusal`: Runtime Home, the user
policy file, ``.git`` and any other git repository, bare ones included); it
is checked at plan time and again when the step runs, on the file system as
it is then (an earlier step may have made a repository).

Writes are atomic and writers of one folder serialize on an ``flock`` of
the folder's descriptor: the temporary file, its name, the rename and the
sweep of stale temporaries are :mod:`providers.files.atomic`.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from providers.files.atomic import TempNames, in_run, replace, sweep_stale
from providers.files.confine import (
    Confined,
    ParentMissing,
    UnusablePath,
    confine,
    describe_roots,
    open_parent,
    policy_key,
    protected_refusal,
    refusal_hint,
    system_limits,
    unusable,
)
from runtime.provider import (
    BoundCall,
    Decision,
    Inspection,
    Operation,
    PolicyRefusal,
    Positional,
    RunContext,
    StepEnvironment,
    StepError,
    StepOutcome,
)
from runtime.provider.operations import Access, BindingProblem
from runtime.provider.text import file_kind, table

MAX_READ_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024


# -- entry points ---------------------------------------------------------------


@dataclass
class _Run:
    """What the files provider keeps for one run (``RunContext.state``).

    The plan resolves every path (and shows the result); execution reuses that
    resolution. This is safe because execution walks the resolved components
    from the root without following links (:func:`open_parent`): a link
    created or swapped since the plan fails the walk, it is never followed.
    """

    confined: dict[tuple[str, str], Confined] = field(default_factory=dict)
    roots: dict[str, list[Path]] = field(default_factory=dict)
    # folders (device, inode) swept for stale temporaries in this run: once each
    swept: set[tuple[int, int]] = field(default_factory=set)
    names: TempNames | None = None


def _target(operation: Operation) -> Positional | None:
    """The positional naming the path the operation touches (it declares the access)."""
    return next((p for p in operation.positionals if p.access is not None), None)


def execute(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    """Confine the declared path for its declared access, then run the declared handler
    (``handler(confined, call)``)."""
    target = _target(operation)
    if target is None or target.access is None or operation.handler is None:
        raise StepError(f"the files provider has no operation '{operation.name}'")
    handler: Callable[[Confined, BoundCall], StepOutcome] = operation.implementation
    access = target.access
    path = _positional(call, target.name, operation)
    run = env.run
    state = run.state(_Run)
    confined = _confine(path, access, run, state)
    if access == "write":
        # Checked again at use, with Home and the policy file resolved afresh: an
        # earlier step may have moved them (or put a link in their place) since the plan.
        found = protected_refusal(confined, run.protected_paths())
        if found is not None:
            raise found[1]
    if state.names is None:
        state.names = TempNames(lambda: run.home_key("temporaries"))
    try:
        with in_run(state.names, state.swept):
            return handler(confined, call)
    except (StepError, PolicyRefusal):
        raise
    except OSError as exc:  # anything not handled where it happened
        raise StepError(f"files {operation.name} {path!r}: {exc.strerror or exc}") from None


def inspect(operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
    """The paths a call will touch, or a refusal; looks only (no file is opened)."""
    target = _target(operation)
    if target is None or target.access is None:
        return Inspection()
    access = target.access
    path = call.positionals.get(target.name)
    if path is None:
        return Inspection()
    try:
        confined = _confine(path, access, run, run.state(_Run))
    except UnusablePath as exc:
        # the policy did not refuse it: no operation could take the path (exit 2)
        index = call.binding.positionals.get(target.name, -1) if call.binding else -1
        pieces = call.pieces[index] if 0 <= index < len(call.pieces) else ()
        inputs = [p.input for p in pieces if p.input is not None]
        return Inspection(problems=[_unusable_problem(operation, target, index, path, inputs, exc)])
    except PolicyRefusal as refusal:
        rule = f"{policy_key(access)} ({run.roots(access).source})"
        return Inspection(decision=Decision(False, rule, refusal.message))
    if access == "write":
        found = protected_refusal(confined, run.protected_paths())
        if found is not None:
            rule, protected = found
            return Inspection(
                decision=Decision(False, rule, protected.message, protected.hint or "")
            )
    return Inspection(paths=[(str(confined.resolved), access)])


def check(operation: Operation, call: BoundCall) -> list[BindingProblem]:
    """Validation: a literal path the system could not take whatever the inputs are (a
    name over NAME_MAX bytes, the path over PATH_MAX, a lone surrogate), at its
    FILE:LINE:COL. A path with a ${reference} is checked at plan time, with its value; so
    is a path that is too long only once taken from the working directory, or under other
    roots."""
    target = _target(operation)
    if target is None:
        return []
    index = call.binding.positionals.get(target.name) if call.binding else None
    args = call.args
    if index is None or "${" in args[index]:
        return []
    found = unusable(args[index], system_limits((Path("."),)))
    if found is None:
        return []
    return [_unusable_problem(operation, target, index, args[index], (), found)]


def _unusable_problem(
    operation: Operation,
    target: Positional,
    index: int,
    path: str,
    inputs: Iterable[str],
    exc: UnusablePath,
) -> BindingProblem:
    """A path the system cannot take, as the problem of its arg (``index``): it names the
    operation, what is wrong (the limit) and the inputs the path came from."""
    named = ", ".join(repr(i) for i in dict.fromkeys(inputs))
    source = f" (from input {named})" if named else ""
    shown = path if len(path) <= 60 else path[:57] + "..."
    return BindingProblem(
        index,
        f"files {operation.name} cannot take {target.name} {shown!r}{source}: it {exc.what}",
        exc.hint,
        code=exc.code,
    )


def _confine(path: str, access: Access, run: RunContext, state: _Run) -> Confined:
    """The path resolved and proven inside the roots, once per run (and the roots once)."""
    key = (access, path)
    found = state.confined.get(key)
    if found is None:
        roots = state.roots.get(access)
        if roots is None:
            roots = state.roots[access] = run.roots(access).paths
        found = state.confined[key] = confine(path, roots, run.cwd, access)
    return found


def _positional(call: BoundCall, name: str, operation: Operation) -> str:
    value = call.positionals.get(name)
    if value is None:
        raise StepError(
            f"'files {operation.name}' is missing its {name} argument",
            hint=f"the form is: files {operation.form()}",
        )
    return value


# -- helpers ----------------------------------------------------------------------


@contextmanager
def _parent(confined: Confined, *, lock: bool = False) -> Iterator[int]:
    """The parent folder's descriptor, optionally with an exclusive writer lock."""
    fd = open_parent(confined)
    try:
        if lock:
            # Held until the descriptor is closed: the whole read-copy-rename of
            # one writer never interleaves with another runtime writer's.
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _lstat(fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _changed(confined: Confined) -> PolicyRefusal:
    where = describe_roots(confined.access, [confined.root])
    return PolicyRefusal(
        f"refused: {confined.given!r} became a symbolic link after it was checked; "
        f"it is not followed, so the operation stays inside {where}",
        hint=refusal_hint(confined.access),
    )


def _hard_link_refusal(confined: Confined, links: int, verb: str) -> PolicyRefusal:
    where = describe_roots(confined.access, [confined.root])
    return PolicyRefusal(
        f"refused: {confined.given!r} is a file with {links} hard links; one may be outside "
        f"{where}, so it is not {verb}",
        hint="`files write` replaces the file (detaching it from its other links); "
        "or copy it to a file of its own first",
    )


def _shown(path: str) -> str:
    """A path in a step's output line: as written, or quoted with escapes when it holds a
    newline or another character a terminal would act on (the line stays one line)."""
    return path if path.isprintable() else repr(path)


def _regular_name(confined: Confined) -> str:
    """The final name for a file operation; the root itself is a folder, and so is a path
    that ends with '/' (as for the shell: `echo x > a.txt/` is "Not a directory")."""
    if confined.is_root:
        raise StepError(f"{confined.given!r} is a folder ({confined.resolved}), not a file")
    if confined.given.endswith(("/", "/.")):
        raise StepError(
            f"{confined.given!r} ends with '/', which names a folder, not a file",
            hint=f"name the file without the '/' ({confined.given.rstrip('/.') or '/'})",
        )
    return confined.name


def _writable(confined: Confined, fd: int, name: str) -> None:
    """Refuse to replace a file this user could not write in place (mode 0444, another
    user's file): the rename needs only the folder's permission, ``>`` needs the file's."""
    # asked of the kernel as an open for writing would be (effective ids and capabilities),
    # without opening it: a watcher would take an open for writing for a change
    if not os.access(name, os.W_OK, dir_fd=fd, effective_ids=True, follow_symlinks=False):
        raise StepError(
            f"{confined.given!r} is not writable ({confined.resolved}); it was left as it is",
            hint=f"make it writable first (chmod u+w {confined.given}) if it is meant to change",
        )


def _existing_file(confined: Confined, fd: int, name: str) -> os.stat_result | None:
    st = _lstat(fd, name)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise _changed(confined)
    if stat.S_ISDIR(st.st_mode):
        raise StepError(f"{confined.given!r} is a folder ({confined.resolved}), not a file")
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(confined, st.st_mode)
    return st


def _not_regular(confined: Confined, mode: int) -> StepError:
    return StepError(
        f"{confined.given!r} is {file_kind(mode)}, not a regular file ({confined.resolved})"
    )


def _open_regular(confined: Confined, fd: int, name: str, verb: str) -> tuple[int, os.stat_result]:
    """Open an existing file for reading without following links or blocking on FIFOs."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        ffd = os.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        raise StepError(f"no such file: {confined.given!r} ({confined.resolved})") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _changed(confined) from None
        if exc.errno == errno.EACCES:
            raise StepError(f"permission denied reading {confined.given!r}") from None
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            st = _lstat(fd, name)
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise _not_regular(confined, st.st_mode) from None
        raise StepError(f"cannot open {confined.given!r}: {exc.strerror}") from None
    try:
        st = os.fstat(ffd)
        if stat.S_ISDIR(st.st_mode):
            raise StepError(
                f"{confined.given!r} is a folder ({confined.resolved}), not a file",
                hint="use `files list` to see a folder's entries",
            )
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(confined, st.st_mode)
        if st.st_nlink > 1:
            raise _hard_link_refusal(confined, st.st_nlink, verb)
    except BaseException:
        os.close(ffd)
        raise
    return ffd, st


def _missing_parent(confined: Confined, exc: ParentMissing) -> StepError:
    return StepError(
        f"parent folder {exc.folder} does not exist (needed for {confined.given!r})",
        hint="create it first with `files mkdir`",
    )


def _content(call: BoundCall) -> str:
    """CONTENT as ``write`` and ``append`` store it: as text lines, ending with a newline
    (one is added unless it is empty or has one already), as ``echo`` would leave it."""
    value = call.positionals.get("CONTENT")
    if value is None:
        raise StepError("the CONTENT argument is missing")
    return value if not value or value.endswith("\n") else value + "\n"


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StepError(
            f"CONTENT is not valid text (it cannot be encoded as UTF-8 at character {exc.start + 1})"
        ) from None


def _human(size: int) -> str:
    """``512 bytes`` / ``16.0 MiB (16777216 bytes)``."""
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    units = ["KiB", "MiB", "GiB", "TiB"]
    while value >= 1024 and len(units) > 1:
        value /= 1024
        units.pop(0)
    return f"{value:.1f} {units[0]} ({size} bytes)"


# -- operations -------------------------------------------------------------------


def read_file(confined: Confined, call: BoundCall) -> StepOutcome:
    name = _regular_name(confined)
    limit = MAX_READ_BYTES
    try:
        with _parent(confined) as fd:
            ffd, st = _open_regular(confined, fd, name, "read")
            try:
                if st.st_size > limit:
                    raise StepError(
                        f"{confined.given!r} is {_human(st.st_size)}, over the read limit of "
                        f"{_human(limit)}",
                        hint="read only prints text files up to that size",
                    )
                raw = _read_all(ffd, limit + 1)
            finally:
                os.close(ffd)
    except ParentMissing:
        raise StepError(f"no such file: {confined.given!r} ({confined.resolved})") from None
    if len(raw) > limit:
        raise StepError(f"{confined.given!r} is over the read limit of {_human(limit)}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StepError(
            f"{confined.given!r} is not UTF-8 text ({_human(len(raw))}; invalid byte "
            f"at offset {exc.start}); `files read` prints text only",
        ) from None
    return StepOutcome(
        ok=True,
        output=text,
        data={"path": confined.given, "content": text, "bytes": len(raw)},
    )


def _read_all(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(_CHUNK, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def write_file(confined: Confined, call: BoundCall) -> StepOutcome:
    data = _encode(_content(call))
    name = _regular_name(confined)
    try:
        with _parent(confined, lock=True) as fd:
            sweep_stale(fd, name)
            st = _existing_file(confined, fd, name)
            if st is not None:
                _writable(confined, fd, name)
            # The rename replaces the directory entry: if the old file had other
            # hard links, they keep the old content; no other link is modified.
            written = replace(fd, name, [data], st)
    except ParentMissing as exc:
        raise _missing_parent(confined, exc) from None
    return StepOutcome(
        ok=True,
        output=f"wrote {written} bytes to {_shown(confined.given)}",
        data={"path": confined.given, "bytes": written},
    )


def append_file(confined: Confined, call: BoundCall) -> StepOutcome:
    addition = _encode(_content(call))
    name = _regular_name(confined)
    try:
        with _parent(confined, lock=True) as fd:
            sweep_stale(fd, name)
            st = _existing_file(confined, fd, name)
            if st is None:
                total = replace(fd, name, [addition], None)
                created = True
            else:
                _writable(confined, fd, name)
                ffd, st = _open_regular(confined, fd, name, "appended to")
                try:
                    # Copy the old content and the addition into a new file and
                    # rename it over the old one: a crash at any moment leaves
                    # either the old or the new content, never a mix.
                    total = replace(fd, name, itertools.chain(_chunks(ffd), [addition]), st)
                finally:
                    os.close(ffd)
                created = False
    except ParentMissing as exc:
        raise _missing_parent(confined, exc) from None
    return StepOutcome(
        ok=True,
        output=f"appended {len(addition)} bytes to {_shown(confined.given)}"
        + (" (created it)" if created else ""),
        data={"path": confined.given, "bytes": len(addition), "size": total, "created": created},
    )


def _chunks(fd: int) -> Iterator[bytes]:
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return
        yield chunk


def _entry_type(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


def list_folder(confined: Confined, call: BoundCall) -> StepOutcome:
    try:
        with _parent(confined) as fd:
            target = fd
            if not confined.is_root:
                try:
                    target = os.open(
                        confined.name,
                        os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                        dir_fd=fd,
                    )
                except FileNotFoundError:
                    raise StepError(
                        f"no such folder: {confined.given!r} ({confined.resolved})"
                    ) from None
                except OSError as exc:
                    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                        st = _lstat(fd, confined.name)
                        if st is not None and stat.S_ISLNK(st.st_mode):
                            raise _changed(confined) from None
                        raise StepError(
                            f"{confined.given!r} is not a folder ({confined.resolved})",
                            hint="use `files read` for a file",
                        ) from None
                    raise StepError(
                        f"cannot open the folder {confined.given!r}: {exc.strerror}"
                    ) from None
            try:
                entries = _scan(target)
            finally:
                if target != fd:
                    os.close(target)
    except ParentMissing:
        raise StepError(f"no such folder: {confined.given!r} ({confined.resolved})") from None
    return StepOutcome(
        ok=True,
        output=_table(confined.given, entries),
        data={"path": confined.given, "entries": entries},
    )


def _scan(fd: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    with os.scandir(fd) as found:
        for entry in found:
            kind = _entry_type(entry)
            try:
                size: int | None = entry.stat(follow_symlinks=False).st_size
            except OSError:
                size = None
            entries.append(
                {"name": entry.name, "type": kind, "size": None if kind == "dir" else size}
            )
    entries.sort(key=lambda e: e["name"])
    return entries


def _table(path: str, entries: list[dict[str, Any]]) -> str:
    if not entries:
        return f"{path} is empty"
    rows = [(e["type"], "-" if e["size"] is None else e["size"], e["name"]) for e in entries]
    return "\n".join(table(rows, ("TYPE", "SIZE", "NAME"), right=(1,)))


def make_folder(confined: Confined, call: BoundCall) -> StepOutcome:
    given = confined.given
    if confined.is_root:
        return _exists_outcome(given)
    try:
        with _parent(confined) as fd:
            try:
                os.mkdir(confined.name, 0o777, dir_fd=fd)
            except FileExistsError:
                st = _lstat(fd, confined.name)
                if st is not None and stat.S_ISDIR(st.st_mode):
                    return _exists_outcome(given)
                if st is not None and stat.S_ISLNK(st.st_mode):
                    raise _changed(confined) from None
                raise StepError(
                    f"{given!r} already exists and is not a folder ({confined.resolved})"
                ) from None
            os.fsync(fd)
    except ParentMissing as exc:
        raise _missing_parent(confined, exc) from None
    return StepOutcome(
        ok=True,
        output=f"created {_shown(given)}",
        data={"path": given, "created": True},
    )


def _exists_outcome(given: str) -> StepOutcome:
    return StepOutcome(
        ok=True,
        output=f"{_shown(given)} already exists",
        data={"path": given, "created": False},
    )


def delete_file(confined: Confined, call: BoundCall) -> StepOutcome:
    name = _regular_name(confined)
    if confined.link:
        # the file it names is the link's target: deleting that would leave the link and
        # lose the file the author may not have meant
        raise StepError(
            f"{confined.given!r} is a symbolic link (to {confined.resolved}); `files delete` "
            "removes files, not links, and leaves both as they are",
            hint=f"name the file itself ({confined.resolved}) to delete it; remove the link "
            "outside the capability",
        )
    try:
        with _parent(confined, lock=True) as fd:
            st = _lstat(fd, name)
            if st is None:
                raise StepError(f"no such file: {confined.given!r} ({confined.resolved})")
            if stat.S_ISDIR(st.st_mode):
                raise StepError(
                    f"{confined.given!r} is a folder ({confined.resolved}); "
                    "`files delete` removes files only"
                )
            if stat.S_ISLNK(st.st_mode):
                raise _changed(confined)
            os.unlink(name, dir_fd=fd)
            os.fsync(fd)
    except ParentMissing:
        raise StepError(f"no such file: {confined.given!r} ({confined.resolved})") from None
    return StepOutcome(
        ok=True,
        output=f"deleted {_shown(confined.given)}",
        data={"path": confined.given, "deleted": True},
    )
