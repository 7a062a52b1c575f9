"""Path confinement campaign: escape attempts against the files provider, through the real CLI.

Two layouts, each attacked with every operation (``read``, ``write``,
``append``, ``list``, ``mkdir``, ``delete``):

* the default policy: the working directory is the only root;
* a user policy (``RUNTIME_POLICY_FILE``) with explicit ``read_roots`` and
  ``write_roots``, run from a folder that is neither.

The corpus: ``..`` in every position, absolute paths, symbolic links (to a
folder or a file outside, chains, loops, dangling), hard links to files
outside, ``/proc/self/root`` and ``/proc/self/cwd`` tricks, over-long paths
and components, Unicode look-alikes of ``.`` and ``/`` and both
normalization forms of one name. Every escaping path is tried with every
operation as capability steps (one capability per operation, one step per
path: every step must be refused before anything runs); the paths that are
no plain refusal (look-alikes, paths that really are inside, hard links) and
every escaping path go through ``runtime files OP PATH`` too (one operation
each, round robin). Then two races: a separate process keeps
exchanging a folder (and a file) with a symbolic link to outside while the
CLI works on it in a loop. More tests below make those races deterministic,
and check that the refusal of ``files delete`` (a destroy) cannot be lifted but
deliberately, by a policy the user owns.

An *escape* is any of: the outside trees are not byte-for-byte what they
were (content, mode, mtime, entries, link targets), a file appears where a
refused write aimed, or an output shows outside content. Every refusal must
name the root it protects; a path over the system's length limits is no
refusal but an invalid argument (exit 2) naming the operation and the limit;
no attempt may end in an internal error (exit 70).
``RUNTIME_FULL_CAMPAIGNS=1`` runs every path with every operation, directly
and as a one-step capability, and races ten times longer.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import Result, capability, write

FULL = os.environ.get("RUNTIME_FULL_CAMPAIGNS") == "1"
OPS = ("read", "write", "append", "list", "mkdir", "delete")
ACCESS = {
    "read": "read",
    "list": "read",
    "write": "write",
    "append": "write",
    "mkdir": "write",
    "delete": "write",
}
WRITING = ("write", "append", "mkdir")
# what a capability of many steps tries at once: every step refused, or every one too long
BATCHED = ("refuse", "too-long")
TAG = secrets.token_hex(4)
SECRET = f"OUTSIDE-SECRET-{TAG}"  # content of every file outside the roots
CANARY = f"canary-{TAG}.txt"  # a name outside that no attempt names: a listing must not show it
PWNED = f"PWNED-{TAG}"
# a system file's content that must never be printed either
FOREIGN = ("root:x:0:0",)

NFC_CAFE = unicodedata.normalize("NFC", "café")
NFD_CAFE = unicodedata.normalize("NFD", "café")
NFC_NAIVE = unicodedata.normalize("NFC", "naïve")
NFD_NAIVE = unicodedata.normalize("NFD", "naïve")
assert NFC_CAFE != NFD_CAFE and NFC_NAIVE != NFD_NAIVE

# Exchanges two directory entries as fast as it can (renameat2 RENAME_EXCHANGE, atomic;
# a three-rename dance where the kernel or libc lacks it) until it is killed.
SWAPPER = r"""
import ctypes, os, sys
a, b = (os.fsencode(p) for p in sys.argv[1:3])
libc = ctypes.CDLL(None, use_errno=True)
exchange = getattr(libc, "renameat2", None)
if exchange is not None and exchange(-100, a, -100, b, 2) != 0:
    exchange = None
print("atomic" if exchange is not None else "renames", flush=True)
while True:
    if exchange is not None:
        exchange(-100, a, -100, b, 2)
        continue
    tmp = a + b".swap"
    try:
        os.rename(a, tmp)
        os.rename(b, a)
        os.rename(tmp, b)
    except OSError:
        pass
"""


# -- what "unchanged" means -------------------------------------------------------------


def snapshot(roots: Iterable[Path]) -> dict[str, tuple[object, ...]]:
    """Every entry under ``roots`` (not following links): type, mode, mtime, content, target."""
    found: dict[str, tuple[object, ...]] = {}
    for root in roots:
        st = os.lstat(root)
        found[str(root)] = ("root", st.st_mode, st.st_mtime_ns)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            for name in sorted(dirnames + filenames):
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    found[path] = ("link", os.readlink(path))
                elif stat.S_ISDIR(st.st_mode):
                    found[path] = ("dir", st.st_mode, st.st_mtime_ns)
                else:
                    with open(path, "rb") as fh:
                        digest = hashlib.sha256(fh.read()).hexdigest()
                    found[path] = ("file", st.st_mode, st.st_mtime_ns, st.st_size, digest)
    return found


def diff(before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]]) -> list[str]:
    changes = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            changes.append(f"{key}: {before.get(key)} -> {after.get(key)}")
    return changes


def needle(access: str, roots: Sequence[Path]) -> str:
    """How a refusal names the roots (``the write root /a`` / ``the write roots /a, /b``)."""
    if len(roots) == 1:
        return f"{access} root {roots[0]}"
    return f"{access} roots " + ", ".join(str(r) for r in roots)


def names_root(text: str, access: str, roots: Sequence[Path]) -> bool:
    """The refusal names every root of that access, or the one root the path was checked against."""
    return needle(access, roots) in text or any(f"{access} root {r}" in text for r in roots)


def too_long_said(text: str, op: str) -> bool:
    """An invalid argument over the system's length limits, naming the operation and the
    limit."""
    return f"files {op} cannot take " in text and ("(NAME_MAX)" in text or "(PATH_MAX)" in text)


def lexical_inside(path: str, roots: Sequence[Path]) -> bool:
    return any(path == str(r) or path.startswith(str(r) + os.sep) for r in roots)


# -- the campaign -----------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One path of the corpus: which operations to try and what must happen."""

    path: str
    ops: tuple[str, ...] = OPS
    # "refuse": exit 3 naming the root; "too-long": exit 2 naming the operation and the
    # limit (no policy refused it: the system could not take the path); "free": any
    # ordinary outcome (look-alikes, paths that really are inside), but never an escape;
    # or a map op -> (code, text in output)
    expect: str | dict[str, tuple[int, str]] = "refuse"


@dataclass
class Scenario:
    name: str
    cwd: Path
    env: dict[str, str]
    read_roots: list[Path]
    write_roots: list[Path]
    protected: list[Path]  # trees that must stay byte-for-byte unchanged
    caps: Path  # folder for the capability files of this scenario

    def roots(self, op: str) -> list[Path]:
        return self.read_roots if ACCESS[op] == "read" else self.write_roots


@dataclass
class Campaign:
    cli: Callable[..., Result]
    attempts: int = 0
    escapes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)  # refused write targets that must not appear

    # -- one attempt --------------------------------------------------------------------
    def _leaks(self, label: str, text: str) -> None:
        for marker in (SECRET, CANARY, *FOREIGN):
            if marker in text:
                self.escapes.append(f"{label}: the output shows outside content ({marker!r})")

    def _common(self, label: str, result: Result) -> str:
        text = result.stdout + result.stderr
        self._leaks(label, text)
        if result.code == 70 or "Traceback" in text:
            self.problems.append(f"{label}: internal error (exit {result.code}): {text[-400:]}")
        return text

    def direct(self, sc: Scenario, op: str, entry: Entry) -> None:
        self.attempts += 1
        args = [op, entry.path] + ([f"{PWNED} {op}"] if op in ("write", "append") else [])
        result = self.cli("files", *args, cwd=sc.cwd, extra_env=sc.env)
        label = f"[{sc.name}] files {op} {entry.path[:120]!r}"
        text = self._common(label, result)
        self._judge(sc, op, entry, label, result.code, text)

    def _judge(self, sc: Scenario, op: str, entry: Entry, label: str, code: int, text: str) -> None:
        if isinstance(entry.expect, dict):
            want_code, want_text = entry.expect[op]
            if code != want_code or want_text not in text:
                self.problems.append(
                    f"{label}: expected exit {want_code} with {want_text!r}, got {code}: {text[:300]}"
                )
        elif entry.expect == "too-long":
            if code != 2 or not too_long_said(text, op):
                self.problems.append(
                    f"{label}: expected an invalid argument naming files {op} and the limit "
                    f"(exit 2), got {code}: {text[:300]}"
                )
            if op in WRITING:
                target = os.path.normpath(os.path.join(sc.cwd, entry.path))
                if not lexical_inside(target, sc.write_roots) and not os.path.lexists(target):
                    self.forbidden.add(target)
        elif entry.expect == "refuse":
            if code != 3:
                self.problems.append(
                    f"{label}: expected a refusal (exit 3), got {code}: {text[:300]}"
                )
            if op in WRITING:
                target = os.path.normpath(os.path.join(sc.cwd, entry.path))
                if not lexical_inside(target, sc.write_roots) and not os.path.lexists(target):
                    self.forbidden.add(target)
        elif code not in (0, 1, 2, 3, 70):  # 70 is reported by _common
            self.problems.append(f"{label}: unexpected exit {code}: {text[:300]}")
        if code == 3:
            if op == "delete":
                if "effect destroy (allowed_destructive)" not in text:
                    self.problems.append(
                        f"{label}: a delete refusal without its rule: {text[:300]}"
                    )
            elif not names_root(text, ACCESS[op], sc.roots(op)):
                self.problems.append(
                    f"{label}: the refusal does not name {needle(ACCESS[op], sc.roots(op))!r}: "
                    f"{text[:400]}"
                )

    def batch(self, sc: Scenario, op: str, entries: Sequence[Entry], expect: str) -> None:
        """One capability, one step per path: every step must be refused (``expect``
        "refuse") or found too long ("too-long"), and nothing may run."""
        entries = [e for e in entries if "\0" not in e.path and not e.path.startswith("@")]
        if not entries:
            return
        content = ', "${c}"' if op in ("write", "append") else ""
        steps = "".join(
            f'  - provider: files\n    args: [{op}, "${{p{i}}}"{content}]\n'
            for i in range(len(entries))
        )
        inputs = "".join(f"  p{i}:\n    required: true\n" for i in range(len(entries)))
        if content:
            inputs += "  c:\n    required: true\n"
        cap = write(
            sc.caps / f"{expect}-{op}.md",
            capability(f"version: v1\ninputs:\n{inputs}workflow:\n{steps}"),
        )
        args = ["capability", "execute", str(cap)]
        for i, entry in enumerate(entries):
            args += ["--input", f"p{i}={entry.path}"]
        if content:
            args += ["--input", f"c={PWNED} {op} (capability)"]
        self.attempts += len(entries)
        result = self.cli(*args, cwd=sc.cwd, extra_env=sc.env)
        label = f"[{sc.name}] capability of {len(entries)} {op} steps ({expect})"
        text = self._common(label, result)
        want_code = 2 if expect == "too-long" else 3
        if result.code != want_code or "nothing ran" not in text:
            self.problems.append(
                f"{label}: expected exit {want_code} and nothing run, got {result.code}"
            )
        for i, entry in enumerate(entries, start=1):
            if f"step {i} (files {op}" not in text:
                self.problems.append(f"{label}: step {i} ({entry.path[:80]!r}) was not refused")
        if expect == "too-long":
            said = [line for line in text.splitlines() if too_long_said(line, op)]
            if len(said) < len(entries):
                self.problems.append(
                    f"{label}: {len(said)} of {len(entries)} steps found too long: {text[:400]}"
                )
            return
        # every step's refusal names its rule, and (but for delete) the roots it protects
        wants = ["effect destroy (allowed_destructive)"]
        if op != "delete":
            wants = [f"refused by {ACCESS[op]}_roots", needle(ACCESS[op], sc.roots(op))]
        for want in wants:
            if text.count(want) < len(entries):
                self.problems.append(
                    f"{label}: {text.count(want)} of {len(entries)} refusals name {want!r}"
                )

    def single_step(self, sc: Scenario, op: str, entry: Entry) -> None:
        """A one-step capability (for paths whose outcome is not a plain refusal)."""
        content = ', "${c}"' if op in ("write", "append") else ""
        inputs = "  p:\n    required: true\n" + ("  c:\n    required: true\n" if content else "")
        cap = write(
            sc.caps / f"one-{op}.md",
            capability(
                f'version: v1\ninputs:\n{inputs}workflow:\n  - provider: files\n    args: [{op}, "${{p}}"{content}]\n'
            ),
        )
        args = ["capability", "execute", str(cap), "--input", f"p={entry.path}"]
        if content:
            args += ["--input", f"c={PWNED} {op} (capability)"]
        self.attempts += 1
        result = self.cli(*args, cwd=sc.cwd, extra_env=sc.env)
        label = f"[{sc.name}] capability step {op} {entry.path[:120]!r}"
        text = self._common(label, result)
        if result.code == 5 and "missing capability: path:" in text and "nothing ran" in text:
            return  # execute's preflight found the path missing: nothing ran, nothing to judge
        self._judge(sc, op, entry, label, result.code, text)

    # -- a whole scenario ---------------------------------------------------------------
    def run(self, sc: Scenario, corpus: Sequence[Entry]) -> None:
        before = snapshot(sc.protected)
        for index, entry in enumerate(corpus):
            # Reduced size: every escaping path is tried with every operation in the capability
            # batches below, and directly with one operation (round robin).
            ops = entry.ops if FULL else (entry.ops[index % len(entry.ops)],)
            for op in ops:
                self.direct(sc, op, entry)
                if FULL and entry.expect not in BATCHED and "\0" not in entry.path:
                    self.single_step(sc, op, entry)
        for expect in BATCHED:
            batched = [e for e in corpus if e.expect == expect]
            for op in OPS:
                self.batch(sc, op, [e for e in batched if op in e.ops], expect)
        for change in diff(before, snapshot(sc.protected)):
            self.escapes.append(f"[{sc.name}] outside tree changed: {change}")
        for target in sorted(self.forbidden):
            if os.path.lexists(target):
                self.escapes.append(f"[{sc.name}] a refused write created {target}")
        self.forbidden.clear()


# -- layouts ----------------------------------------------------------------------------


def make_outside(outside: Path) -> None:
    write(outside / "secret.txt", SECRET + "\n")
    write(outside / "dir" / "inner.txt", SECRET + " inner\n")
    write(outside / "dir" / CANARY, SECRET + " canary\n")
    (outside / "dir" / "sub").mkdir()
    write(outside / CANARY, SECRET + " canary\n")
    write(outside / NFC_CAFE / "secret.txt", SECRET + " nfc\n")
    write(outside / NFD_CAFE / "secret.txt", SECRET + " nfd\n")


def default_corpus(work: Path, outside: Path, tmp: Path) -> list[Entry]:
    w, o, t = str(work), str(outside), str(tmp)
    new = f"new-{TAG}.txt"
    refuse = [
        # .. at the start, in the middle, at the end, repeated, with a trailing slash
        "..",
        "../",
        "../..",
        "../../",
        "../" * 12,
        "../outside",
        "../outside/",
        "../outside/secret.txt",
        f"../outside/{new}",
        "../outside/dir/",
        "../outside/dir/inner.txt",
        "./../outside/secret.txt",
        "real/../../outside/secret.txt",
        f"ghost/../../outside/{new}",
        "real/deep/../../../outside/secret.txt",
        f"a/b/c/../../../../outside/{new}",
        "../outside/dir/..",
        "../outside/dir/../",
        "..//outside//secret.txt",
        "../outside/./secret.txt",
        "../work/../outside/secret.txt",
        "real/deep/../../out_dir/secret.txt",
        # absolute paths outside
        f"{o}/secret.txt",
        f"{o}/{new}",
        f"{o}/dir/",
        f"{w}/../outside/secret.txt",
        f"//{o}/secret.txt",
        t,
        "/",
        "/etc/passwd",
        "/etc",
        f"/tmp/escape-{TAG}.txt",
        # /proc magic links
        f"/proc/self/root{o}/secret.txt",
        f"/proc/self/root{o}/{new}",
        "/proc/self/cwd/..",
        "/proc/self/cwd/../..",
        "/proc/self/cwd/../outside/secret.txt",
        f"/proc/self/root/proc/self/cwd/../outside/{new}",
        f"/proc/{os.getpid()}/cwd/../outside/secret.txt",
        "/proc/self/exe",
        "/proc/self/environ",
        # symbolic links: a folder outside, a file outside, chains, loops, dangling
        "out_dir",
        "out_dir/",
        "out_dir/secret.txt",
        f"out_dir/{new}",
        "out_dir/dir",
        "out_dir/dir/../secret.txt",
        "out_dir/./../outside/secret.txt",
        "out_abs/secret.txt",
        "out_file",
        "chain1",
        "chain1/secret.txt",
        f"chain1/dir/{new}",
        "chain_file",
        "loop1",
        "loop1/x.txt",
        "self_loop",
        "dangling_out",
        "real/up",
        "real/up/secret.txt",
        "proc_link/secret.txt",
        f"proc_link/{new}",
        # long, but within the system's limits: refused as any escape
        "./" * 1900 + "../outside/secret.txt",
        # both normalization forms of a name outside
        f"../outside/{NFC_CAFE}/secret.txt",
        f"../outside/{NFD_CAFE}/secret.txt",
        # NUL (direct only: an input value with NUL is refused earlier, exit 2)
        "real\0/../../outside/secret.txt",
    ]
    free = [
        # look-alikes of "." and "/": ordinary names inside the root
        "．．/outside/secret.txt",
        "．．／outside／secret.txt",
        "\u2024\u2024/outside/secret.txt",
        "\u2025/outside/secret.txt",
        "..\u2215outside\u2215secret.txt",
        "..\u2044outside\u2044secret.txt",
        "\uff0e\uff0e",
        "\uff0e\uff0e\uff0f",
        "\u2024\u2024",
        "..\u200b/outside/secret.txt",
        "..\u200b",
        ". ./outside/secret.txt",
        "..\\outside\\secret.txt",
        "%2e%2e/outside/secret.txt",
        "..%2foutside%2fsecret.txt",
        "~/outside/secret.txt",
        "$HOME/outside/secret.txt",
        "..\u0338",
        # paths that look suspicious but really are inside
        "/proc/self/cwd",
        f"/proc/self/cwd/ok-{TAG}.txt",
        f"/proc/self/root{w}/ok-root-{TAG}.txt",
        f"out_dir/../work/ok-{TAG}.txt",
        "real/deep/../../inside.txt",
        "real/../real/./ok2.txt",
        "in_link/ok3.txt",
        "y" * 255,
        f"{NFD_CAFE}/note.txt",
        f"{NFC_CAFE}/note.txt",
        ".",
        "./",
        "",
    ]
    hard = Entry(
        "hard.txt",
        ("read", "append", "list", "mkdir", "delete", "write"),  # write detaches it: last
        expect={
            "read": (3, "hard links"),
            "append": (3, "hard links"),
            "write": (0, "wrote"),
            "list": (1, "not a folder"),
            "mkdir": (1, "not a folder"),
            "delete": (3, "effect destroy (allowed_destructive)"),
        },
    )
    # over the system's limits (PATH_MAX, NAME_MAX), inside or not: invalid arguments
    too_long = [
        "a/" * 2100 + "x",
        "../" * 1400 + "outside/secret.txt",
        "x" * 300,
        "x" * 300 + "/../../outside/secret.txt",
        "é" * 200,
    ]
    return [
        *(Entry(p) for p in refuse),
        *(Entry(p, expect="too-long") for p in too_long),
        *(Entry(p, expect="free") for p in free),
        hard,
    ]


def make_default(work: Path, outside: Path) -> None:
    write(work / "inside.txt", "inside\n")
    (work / "real" / "deep").mkdir(parents=True)
    write(work / NFC_CAFE / "note.txt", "nfc note\n")
    os.symlink("../outside", work / "out_dir")
    os.symlink(outside, work / "out_abs")
    os.symlink(outside / "secret.txt", work / "out_file")
    os.symlink("chain2", work / "chain1")
    os.symlink("chain3", work / "chain2")
    os.symlink("../outside", work / "chain3")
    os.symlink("chain1/secret.txt", work / "chain_file")
    os.symlink("loop2", work / "loop1")
    os.symlink("loop1", work / "loop2")
    os.symlink("self_loop", work / "self_loop")
    os.symlink(outside / f"dangling-{TAG}.txt", work / "dangling_out")
    os.symlink("../../outside", work / "real" / "up")
    os.symlink(f"/proc/self/root{outside}", work / "proc_link")
    os.symlink("real", work / "in_link")
    os.link(outside / "secret.txt", work / "hard.txt")


def make_user_area(area: Path, outside: Path) -> dict[str, Path]:
    paths = {
        "ro": area / "ro",
        "rw": area / "rw",
        "sibling": area / "rw-sibling",
        "cwd": area / "cwd",
        "cafe_nfc": area / NFC_CAFE,
        "cafe_nfd": area / NFD_CAFE,
        "naive_nfd": area / NFD_NAIVE,
        "naive_nfc": area / NFC_NAIVE,
    }
    write(paths["ro"] / "readable.txt", "read-only root content\n")
    write(paths["ro"] / "plain.txt", "plain read-only content\n")
    write(paths["rw"] / "existing.txt", "rw content\n")
    os.symlink("../ro", paths["rw"] / "to_ro")
    os.symlink(os.path.relpath(outside, paths["rw"]), paths["rw"] / "to_out")
    os.link(paths["ro"] / "readable.txt", paths["rw"] / "hl.txt")
    write(paths["sibling"] / "x.txt", SECRET + " sibling\n")
    write(paths["cwd"] / "local.txt", SECRET + " cwd\n")
    write(paths["cafe_nfc"] / "ok.txt", "nfc root\n")
    write(paths["cafe_nfd"] / "x.txt", SECRET + " nfd sibling\n")
    write(paths["naive_nfd"] / "f.txt", "nfd read root\n")
    write(paths["naive_nfc"] / "f.txt", SECRET + " nfc sibling\n")
    return paths


def user_corpus(area: Path) -> list[Entry]:
    a = str(area)
    new = f"new-{TAG}.txt"
    writes = ("write", "append", "mkdir")
    reads = ("read", "list")
    return [
        # the working folder is no root at all under this policy
        Entry(f"cwd-{new}", writes),
        Entry("local.txt", (*reads, "write", "append")),
        Entry("./", reads),
        # a read root is not a write root
        Entry(f"../ro/{new}", writes),
        Entry("../ro/readable.txt", ("write", "append")),
        Entry(f"../rw/../ro/{new}", writes),
        Entry(f"{a}/rw/../ro/{new}", writes),
        Entry(f"../rw/to_ro/{new}", writes),
        Entry("../rw/to_ro/readable.txt", ("write", "append")),
        # a sibling whose name starts like the root
        Entry(f"../rw-sibling/{new}", writes),
        Entry("../rw-sibling/x.txt", OPS),
        Entry(f"{a}/rw-sibling", reads),
        Entry(f"../rw/../rw-sibling/{new}", writes),
        # out of the roots altogether
        Entry("../rw/to_out/secret.txt", OPS),
        Entry("../rw/to_out", reads),
        Entry(f"../rw/../../outside/{new}", writes),
        Entry("../../outside/secret.txt", OPS),
        Entry("../rw/../cwd/local.txt", reads),
        Entry(f"/proc/self/cwd/../rw-sibling/{new}", writes),
        # normalization: the root is one byte sequence, its look-alike another folder
        Entry(f"../{NFD_CAFE}/{new}", writes),
        Entry(f"../{NFD_CAFE}/x.txt", OPS),
        Entry(f"../{NFC_NAIVE}/f.txt", reads),
        Entry(f"../{NFC_CAFE}/ok.txt", reads),  # a write root, but not a read root
        # controls and hard links: allowed where the policy allows, never more
        Entry(
            f"../rw/ok-{TAG}.txt",
            ("read", "write"),
            expect={"read": (1, "no such file"), "write": (0, "wrote")},
        ),
        Entry(
            f"../{NFC_CAFE}/ok-{TAG}.txt",
            ("write",),
            expect={"write": (0, "wrote")},
        ),
        Entry(
            "../rw/to_ro/plain.txt",
            ("read", "list"),
            expect={"read": (0, "plain read-only content"), "list": (1, "not a folder")},
        ),
        Entry(f"../{NFD_NAIVE}/f.txt", ("read",), expect={"read": (0, "nfd read root")}),
        Entry(
            "../rw/hl.txt",
            ("read", "append", "write"),
            expect={
                "read": (3, "hard links"),
                "append": (3, "hard links"),
                "write": (0, "wrote"),
            },
        ),
    ]


# -- races ------------------------------------------------------------------------------


def race(
    campaign: Campaign,
    sc: Scenario,
    a: Path,
    b: Path,
    operations: Sequence[tuple[str, str]],
    rounds: int,
) -> dict[str, int]:
    """Run ``operations`` in a loop while another process exchanges ``a`` and ``b``."""
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(a), str(b)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    outcomes: dict[str, int] = {}
    try:
        assert swapper.stdout is not None
        swapper.stdout.readline()  # started
        for i in range(rounds):
            op, path = operations[i % len(operations)]
            path = path.format(i=i)
            campaign.attempts += 1
            args = [op, path] + ([f"{PWNED} race {i}"] if op in ("write", "append") else [])
            result = campaign.cli("files", *args, cwd=sc.cwd, extra_env=sc.env)
            label = f"[race] files {op} {path}"
            text = campaign._common(label, result)
            if result.code == 3 and not names_root(text, ACCESS[op], sc.roots(op)):
                campaign.problems.append(f"{label}: the refusal does not name the root: {text}")
            if result.code not in (0, 1, 3, 70):  # 70 is reported by _common
                campaign.problems.append(f"{label}: exit {result.code}: {text[:300]}")
            kind = {0: "ok", 1: "failed", 3: "refused", 70: "internal error"}.get(
                result.code, "other"
            )
            if "became a symbolic link" in text or "changed after it was checked" in text:
                kind = "refused at use"
            outcomes[kind] = outcomes.get(kind, 0) + 1
    finally:
        swapper.kill()
        swapper.wait()
    return outcomes


# -- the test ---------------------------------------------------------------------------


def test_path_confinement_campaign(
    cli, work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = Path(os.path.realpath(tmp_path))
    work = Path(os.path.realpath(work))
    outside = tmp / "outside"
    make_outside(outside)
    make_default(work, outside)
    area = tmp / "area"
    user = make_user_area(area, outside)
    caps = tmp / "caps"
    caps.mkdir()
    (tmp / "policies").mkdir()
    campaign = Campaign(cli)

    # warm up (bootstraps Home), then fix what tmp holds at its top level
    assert cli("files", "write", "warmup.txt", "ok", cwd=work).code == 0
    top_level = sorted(os.listdir(tmp))

    default = Scenario(
        "default policy",
        work,
        {},
        [work],
        [work],
        [outside, area],
        caps,
    )
    campaign.run(default, default_corpus(work, outside, tmp))

    policy = write(
        tmp / "policies" / "user.yaml",
        "read_roots:\n"
        + "".join(f'  - "{user[k]}"\n' for k in ("ro", "rw", "naive_nfd"))
        + "write_roots:\n"
        + "".join(f'  - "{user[k]}"\n' for k in ("rw", "cafe_nfc")),
    )
    user_scenario = Scenario(
        "user policy roots",
        user["cwd"],
        {"RUNTIME_POLICY_FILE": str(policy)},
        [user["ro"], user["rw"], user["naive_nfd"]],
        [user["rw"], user["cafe_nfc"]],
        [
            outside,
            work,
            *(user[k] for k in ("ro", "sibling", "cwd", "cafe_nfd", "naive_nfd", "naive_nfc")),
        ],
        caps,
    )
    campaign.run(user_scenario, user_corpus(area))

    # races: a folder, then a file, exchanged with a link to outside while the CLI works
    race_before = snapshot([outside])
    (work / "sub").mkdir()
    write(work / "sub" / "inner.txt", "inside sub\n")
    os.symlink(outside / "dir", work / "sub_alt")
    rounds = 1000 if FULL else 100
    dir_ops = [
        ("write", "sub/f.txt"),
        ("append", "sub/log.txt"),
        ("mkdir", "sub/made-{i}"),
        ("list", "sub"),
        ("read", "sub/inner.txt"),
    ]
    outcomes = race(campaign, default, work / "sub", work / "sub_alt", dir_ops, rounds)
    write(work / "t.txt", "inside t\n")
    os.symlink(outside / "secret.txt", work / "t_alt")
    file_outcomes = race(
        campaign, default, work / "t.txt", work / "t_alt", [("read", "t.txt")], rounds // 2
    )
    for change in diff(race_before, snapshot([outside])):
        campaign.escapes.append(f"[race] outside tree changed: {change}")
    if sorted(os.listdir(tmp)) != top_level:
        campaign.escapes.append(
            f"new entries next to the roots: {sorted(set(os.listdir(tmp)) - set(top_level))}"
        )

    escapes = len(campaign.escapes)
    with capsys.disabled():
        print(f"\npaths: {campaign.attempts} escape attempts, {escapes} escapes")
    races = f"race outcomes: folder {outcomes}, file {file_outcomes}"
    assert not campaign.escapes, "\n".join([*campaign.escapes[:40], races])
    assert not campaign.problems, "\n".join([*campaign.problems[:40], races])
    assert outcomes.get("ok", 0) > 0, f"the folder race never wrote inside: {races}"


def test_delete_stays_denied_when_a_capability_rewrites_homes_policy_cache(
    cli, work: Path, home: Path, tmp_path: Path
) -> None:
    """``files delete`` destroys, so it is refused unless a policy allows it deliberately
    (allowed_destructive). Run from a folder that contains Runtime Home (the usual case when it
    is run from ``$HOME``: Home is ``~/.local/share/runtime``), a files step may rewrite Home's
    cached copy of the parsed default policy. That must not lift the refusal for the next run."""
    assert cli("files", "write", "victim.txt", "keep me").code == 0  # bootstraps Home
    # Home holds no parsed policy any more; plant one where a cache used to be, claiming
    # the shipped YAML's sha256, and check that nothing reads it.
    import hashlib

    from runtime.home.resources import default_policy_file
    from runtime.plan.policy_file import default_policy_data

    data = default_policy_data()
    data["denied_operations"] = []
    data["denied_binaries"] = []
    data["allowed_destructive"] = ["files delete"]
    digest = hashlib.sha256(default_policy_file().read_bytes()).hexdigest()
    doc = {"sha256": digest, "data": data}
    cache = home / "default-policy.json"
    relative = os.path.relpath(cache, tmp_path)
    result = cli("files", "write", relative, json.dumps(doc), cwd=tmp_path)
    assert result.code == 3, result.stdout + result.stderr  # Home is never written by a step
    assert "inside Runtime Home" in result.stderr
    cache.write_text(json.dumps(doc), encoding="utf-8")  # planted by hand instead
    result = cli("files", "delete", "victim.txt")
    assert result.code == 3, f"the default denial was lifted: {result.stdout}{result.stderr}"
    assert "effect destroy (allowed_destructive)" in result.stdout + result.stderr
    assert (work / "victim.txt").read_text() == "keep me\n"


def test_link_swapped_during_resolution_is_refused_not_an_internal_error(
    cli, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race above, made deterministic: ``sub`` is a link to outside when the check looks at
    it (lstat) and a folder again when it reads the link (readlink). That is a path that changed
    while it was checked: a refusal naming the root (exit 3), not ``internal error: OSError``."""
    outside = tmp_path / "outside"
    make_outside(outside)
    (work / "sub_real").mkdir()
    os.symlink(outside / "dir", work / "sub")
    real_readlink = os.readlink
    swapped: list[str] = []

    def readlink(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(path) == str(work / "sub") and not swapped:
            swapped.append(os.fspath(path))
            os.rename(work / "sub", work / "sub_link")  # the link goes away ...
            os.rename(work / "sub_real", work / "sub")  # ... and a folder takes its place
        return real_readlink(path, *args, **kwargs)

    before = snapshot([outside])
    for op in ("read", "write", "list", "mkdir"):
        swapped.clear()
        if (work / "sub_link").is_symlink():
            os.rename(work / "sub", work / "sub_real")
            os.rename(work / "sub_link", work / "sub")
        monkeypatch.setattr(os, "readlink", readlink)
        args = [op, "sub/f.txt"] + (["x"] if op == "write" else [])
        result = cli("files", *args)
        monkeypatch.setattr(os, "readlink", real_readlink)
        text = result.stdout + result.stderr
        assert swapped, "the swap did not happen inside the check"
        assert result.code == 3, f"files {op}: exit {result.code}: {text}"
        assert needle(ACCESS[op], [Path(os.path.realpath(work))]) in text, text
    assert not diff(before, snapshot([outside]))


def test_link_swapped_after_the_plan_is_refused_and_recorded(
    cli, work: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder is swapped for a link to the outside after the plan resolved the path.

    Execution reuses the plan's resolution (the path is resolved once, as the plan
    shows it) and walks it without following links: the step must end refused,
    with its ``step`` and ``run.end`` records in the audit log, nothing written outside.
    """
    import providers.files.ops as ops

    outside = tmp_path / "outside"
    make_outside(outside)
    (work / "sub").mkdir()
    os.symlink(outside / "dir", work / "sub_link")
    real_confine = ops.confine
    calls: list[int] = []

    def confine(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        confined = real_confine(*args, **kwargs)
        # the plan has checked the path: now swap the folder for the link
        os.rename(work / "sub", work / "sub_real")
        os.rename(work / "sub_link", work / "sub")
        return confined

    monkeypatch.setattr(ops, "confine", confine)
    result = cli("files", "write", "sub/f.txt", "x")
    text = result.stdout + result.stderr
    assert len(calls) == 1, "the path was resolved again at execution"
    assert (work / "sub").is_symlink(), "the swap did not happen"
    assert result.code == 3, f"exit {result.code}: {text}"
    assert "became a symbolic link after the path was checked" in text, text
    records = [
        json.loads(line) for line in (home / "audit" / "audit.jsonl").read_text().splitlines()
    ]
    assert [r["event"] for r in records[-2:]] == ["step", "run.end"], records[-2:]
    assert records[-2]["status"] == "refused", records[-2]
    assert not (outside / "dir" / "f.txt").exists()


@pytest.mark.parametrize(
    ("op", "path", "when"),
    [
        ("write", "sub/f.txt", "before the walk"),
        ("append", "sub/log.txt", "before the walk"),
        ("mkdir", "sub/made", "before the walk"),
        ("list", "sub/deeper", "before the walk"),
        ("read", "sub/inner.txt", "before the walk"),
        ("write", "sub", "after the walk"),
        ("append", "sub", "after the walk"),
        ("read", "sub", "after the walk"),
        ("list", "sub", "after the walk"),
        ("mkdir", "sub", "after the walk"),
    ],
)
def test_link_swapped_in_between_check_and_use_is_not_followed(
    cli,
    work: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    op: str,
    path: str,
    when: str,
) -> None:
    """The check passes on a real folder (or file) ``sub``; before the descriptor walk, or
    between the walk and the operation on the final name, ``sub`` becomes a link to outside.
    Nothing outside is touched or shown, and the refusal names the root."""
    import providers.files.ops as ops

    outside = tmp_path / "outside"
    make_outside(outside)
    write(outside / "dir" / "deeper" / "x.txt", SECRET)
    if when == "before the walk":
        (work / "sub" / "deeper").mkdir(parents=True)
        write(work / "sub" / "inner.txt", "inside\n")
        write(work / "sub" / "log.txt", "inside log\n")
        link_target = outside / "dir"
    elif op in ("list", "mkdir"):
        (work / "sub").mkdir()
        link_target = outside / "dir"
    else:
        write(work / "sub", "inside\n")
        link_target = outside / "secret.txt"
    real_open_parent = ops.open_parent

    def swap() -> None:
        os.rename(work / "sub", work / "sub_before")
        os.symlink(link_target, work / "sub")

    def open_parent(confined):  # type: ignore[no-untyped-def]
        if when == "before the walk":
            swap()
            return real_open_parent(confined)
        fd = real_open_parent(confined)
        swap()
        return fd

    monkeypatch.setattr(ops, "open_parent", open_parent)
    before = snapshot([outside])
    args = [op, path] + ([PWNED] if op in ("write", "append") else [])
    result = cli("files", *args)
    text = result.stdout + result.stderr
    assert result.code == 3, f"exit {result.code}: {text}"
    assert "became a symbolic link" in text, text
    assert needle(ACCESS[op], [Path(os.path.realpath(work))]) in text, text
    assert SECRET not in text and CANARY not in text
    assert not diff(before, snapshot([outside]))
