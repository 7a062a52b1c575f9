"""Grammar fuzzing: random, mutated and pathological capability documents.

Every document goes through the stations the CLI uses, in process
(:func:`runtime.document.loader.parse_document`, :func:`runtime.document.grammar.check_capability`,
:func:`runtime.plan.validate.check_steps`), and a sample also through the real
entry point (``runtime --output json capability validate FILE``). The
contract checked for each one:

* it ends in a verdict: exit 0 (no error) or 2 (errors), never an uncaught
  exception (through the CLI: never exit 70);
* every problem is positioned: 1 <= line <= the file's line count + 1,
  column >= 1, with a code and a message;
* the CLI agrees with the in-process verdict and its JSON fits the schema;
* it never hangs: each document is bounded by a timer (:data:`PER_DOCUMENT_S`).

Separate tests check the size limit (a file over ``MAX_BYTES`` is refused at
once, ``too-large``, in process and through the CLI), and that the largest
accepted documents stay within budgets: memory and the size of the problem
report grow linearly, and a 1 MiB YAML block gets its verdict within
:data:`PER_DOCUMENT_S`. Those run in a forked child under a memory ceiling, so
that a quadratic blow-up fails the test instead of exhausting the machine.

The campaign prints ``fuzz: N documents, K crashes, max T s per document``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import select
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.document.grammar import check_capability
from runtime.document.loader import MAX_BYTES, parse_document
from runtime.home.registry import load_registry
from runtime.plan.policy_file import load_policy
from runtime.plan.validate import check_steps
from runtime.problems import Problem, has_errors, sorted_problems
from tests.adversarial.conftest import FULL, sized
from tests.conftest import EXAMPLES, Result, check_schema

# Per-document time bound (also the CPU budget of a 1 MiB document in the size tests).
PER_DOCUMENT_S = 5.0

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.md"))
EXAMPLE_BYTES = [p.read_bytes() for p in EXAMPLE_FILES]

_REGISTRY = load_registry()
_POLICY = load_policy(None)
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


# -- the in-process path -----------------------------------------------------------------


def verdict(data: bytes, label: str = "fuzz.md") -> tuple[int, list[Problem]]:
    """What `runtime capability validate` decides for ``data``: exit code and problems."""
    doc = parse_document(data, label)
    cap, problems = check_capability(doc)
    problems.extend(check_steps(cap, _REGISTRY, _POLICY))
    return (2 if has_errors(problems) else 0), sorted_problems(problems)


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread after ``seconds``."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no verdict after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def line_count(data: bytes) -> int:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return len(_LINE_BREAK.findall(data)) + 1


def position_faults(problems: list[Problem], data: bytes, label: str) -> list[str]:
    faults = []
    last = line_count(data) + 1
    for p in problems:
        where = f"{p.line}:{p.column} {p.code}: {p.message[:120]}"
        if not (isinstance(p.line, int) and isinstance(p.column, int)):
            faults.append(f"non-integer position {where}")
        elif p.line < 1 or p.column < 1:
            faults.append(f"position below 1:1: {where}")
        elif p.line > last:
            faults.append(f"line beyond the file ({last - 1} lines): {where}")
        if p.file != label:
            faults.append(f"problem names file {p.file!r}, not {label!r}")
        if p.severity not in ("error", "warning") or not p.code or not p.message:
            faults.append(f"malformed problem {p!r}"[:200])
    return faults


# -- the campaign bookkeeping --------------------------------------------------------------


@dataclass
class Crash:
    signature: str
    count: int
    sample: bytes
    detail: str
    cli: str = ""


@dataclass
class Campaign:
    cli: Callable[..., Result]
    work: Path
    cli_every: int
    documents: int = 0
    cli_runs: int = 0
    max_seconds: float = 0.0
    slowest: str = ""
    crashes: dict[str, Crash] = field(default_factory=dict)

    def crash(self, signature: str, data: bytes, detail: str) -> None:
        known = self.crashes.get(signature)
        if known is None:
            through = "" if signature.startswith("CLI") else self.cli_exit(data)
            self.crashes[signature] = Crash(signature, 1, data, detail, through)
            return
        known.count += 1
        if len(data) < len(known.sample):  # keep the smallest reproducer
            known.sample, known.detail = data, detail

    def check(self, data: bytes, source: str, *, through_cli: bool = False) -> None:
        self.documents += 1
        label = "fuzz.md"
        started = time.perf_counter()
        try:
            with time_limit(PER_DOCUMENT_S):
                code, problems = verdict(data, label)
        except Hang as exc:
            self.crash(f"hang ({source})", data, str(exc))
            return
        except Exception as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            self.crash(
                f"{type(exc).__name__} at {where}",
                data,
                f"{type(exc).__name__}: {exc}".strip()[:300],
            )
            return
        elapsed = time.perf_counter() - started
        if elapsed > self.max_seconds:
            self.max_seconds, self.slowest = elapsed, source
        for fault in position_faults(problems, data, label):
            self.crash(f"unpositioned problem ({fault.split(':')[0]})", data, fault)
        if through_cli or (self.documents % self.cli_every == 0):
            self.through_cli(data, code, source)

    def cli_exit(self, data: bytes) -> str:
        path = self.work / "crash.md"
        path.write_bytes(data)
        result = self.cli("--output", "json", "capability", "validate", str(path))
        return f"exit {result.code}"

    def through_cli(self, data: bytes, expected: int, source: str) -> None:
        self.cli_runs += 1
        path = self.work / "fuzz.md"
        path.write_bytes(data)
        result = self.cli("--output", "json", "capability", "validate", str(path))
        if result.code not in (0, 2):
            detail = result.stdout[-400:] + result.stderr[-400:]
            self.crash(f"CLI exit {result.code}", data, detail)
            return
        try:
            doc = result.json()
            check_schema(doc, "validate")
        except Exception as exc:  # not JSON, or not the documented shape
            self.crash("CLI output not valid JSON/schema", data, f"{exc}"[:300])
            return
        if result.code != expected:
            self.crash(
                "CLI verdict differs from the in-process one",
                data,
                f"CLI {result.code}, in process {expected} ({source})",
            )
        for cap in doc["capabilities"]:
            for p in cap["problems"]:
                if p["line"] < 1 or p["column"] < 1:
                    self.crash("CLI problem below 1:1", data, json.dumps(p)[:300])

    def report(self) -> str:
        lines = []
        for c in sorted(self.crashes.values(), key=lambda c: -c.count):
            cli = f" [the same through the CLI: {c.cli}]" if c.cli else ""
            lines.append(f"- {c.signature}: {c.count} document(s); {c.detail}{cli}")
            lines.append(f"  smallest ({len(c.sample)} bytes): {c.sample[:300]!r}")
        return "\n".join(lines)

    @property
    def crash_count(self) -> int:
        return sum(c.count for c in self.crashes.values())


# -- strategies: random YAML trees rendered as YAML ------------------------------------------

KEYS = (
    "version",
    "inputs",
    "workflow",
    "provider",
    "binary",
    "args",
    "description",
    "required",
    "steps",
    "command",
    "transport",
    "capability",
    "name",
    "metadata",
    "mda",
    "requires",
    "runtime",
    "requirements",
    "network",
    "tools",
    "packages",
    "model",
    "cost-hints",
    "compatibility",
)
WORDS = (
    "v1",
    "v2",
    "files",
    "github",
    "git",
    "gh",
    "runtime",
    "read",
    "write",
    "append",
    "list",
    "mkdir",
    "delete",
    "repo",
    "view",
    "summary",
    "api",
    "GET",
    "DELETE",
    "file",
    "put",
    "true",
    "false",
    "null",
    "~",
    "-5",
    "100",
    "${x}",
    "${NAME}",
    "${{ x }}",
    "${",
    "./a.txt",
    "../../etc/passwd",
    "key=value",
    "per_page=100",
    "message=m",
    "content=c",
    "python>=3.11",
    "none",
    "public",
    "",
    " ",
    "a: b",
    "#",
    "&a",
    "*a",
    "!!str",
    "|",
    ">",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    '"',
    "\\",
    "@x",
    "`",
    "%",
    "---",
    "...",
    "```",
    "~~~",
    "\t",
    "\u00e9",
    "\u2028",
    "\U0001f600",
)
# Text of every code point UTF-8 can carry (no surrogates), control characters included.
ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
SCALARS = st.one_of(st.sampled_from(WORDS), ANY_TEXT, st.text("abc-_${}:#[]{}, '\"\n", max_size=12))
TREES = st.recursive(
    SCALARS,
    lambda kids: st.one_of(
        st.lists(kids, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), SCALARS), kids, max_size=5),
    ),
    max_leaves=30,
)


def render_scalar(text: str, rnd: random.Random, indent: int) -> str:
    style = rnd.random()
    if style < 0.45:
        return text  # plain, whatever it holds: a syntax error is an outcome too
    if style < 0.7:
        return json.dumps(text)  # JSON strings are YAML double-quoted scalars
    if style < 0.85:
        return "'" + text.replace("'", "''") + "'"
    pad = " " * (indent + 2)
    body = "\n".join(pad + line for line in text.split("\n"))
    return rnd.choice(("|", "|-", ">", "|+")) + "\n" + body


def render_flow(node: Any, rnd: random.Random) -> str:
    if isinstance(node, list):
        return "[" + ", ".join(render_flow(n, rnd) for n in node) + "]"
    if isinstance(node, dict):
        return (
            "{"
            + ", ".join(f"{render_flow(k, rnd)}: {render_flow(v, rnd)}" for k, v in node.items())
            + "}"
        )
    text = str(node)
    return text if rnd.random() < 0.4 else json.dumps(text)


def render_block(node: Any, rnd: random.Random, indent: int = 0) -> str:
    pad = " " * indent
    if not isinstance(node, (list, dict)):
        return pad + render_scalar(str(node), rnd, indent) + "\n"
    if not node or rnd.random() < 0.15:
        return pad + render_flow(node, rnd) + "\n"
    out = []
    if isinstance(node, list):
        for item in node:
            if isinstance(item, (list, dict)) and item:
                out.append(f"{pad}-\n" + render_block(item, rnd, indent + 2))
            else:
                out.append(f"{pad}- " + render_block(item, rnd, indent + 2).lstrip(" "))
        return "".join(out)
    for key, value in node.items():
        k = render_scalar(str(key), rnd, indent) if rnd.random() < 0.3 else str(key)
        if isinstance(value, (list, dict)) and value:
            out.append(f"{pad}{k}:\n" + render_block(value, rnd, indent + 2))
        else:
            out.append(f"{pad}{k}: " + render_block(value, rnd, indent + 2).lstrip(" "))
    return "".join(out)


def capability_tree(rnd: random.Random) -> dict[str, Any]:
    """A tree shaped like a capability (so the checks past the YAML layer run too)."""
    ops = (
        ["read", "./a.txt"],
        ["write", "${out}", "${note}"],
        ["list", "."],
        ["mkdir", "d"],
        ["delete", "x"],
        ["repo", "view", "acme/app"],
        ["repo", "list", "${org}", "per_page=100"],
        ["api", "GET", "/user", "x=1"],
        ["file", "put", "a/b", "p", "message=m", "content=c"],
        ["pr", "list", "--repo", "a/b"],
        ["nope"],
        [],
    )
    steps: list[Any] = []
    for _ in range(rnd.randint(0, 4)):
        step: dict[str, Any] = {}
        kind = rnd.random()
        if kind < 0.6:
            step["provider"] = rnd.choice(("files", "github", "nope", "runtime"))
        elif kind < 0.9:
            step["binary"] = rnd.choice(("git", "gh", "runtime", "rm", "/bin/ls", "echo", "jq"))
        else:
            step["provider"], step["binary"] = "files", "git"
        if rnd.random() < 0.9:
            args = list(rnd.choice(ops))
            if rnd.random() < 0.3:
                args.append(rnd.choice(WORDS))
            step["args"] = args
        if rnd.random() < 0.1:
            step[rnd.choice(KEYS)] = rnd.choice(WORDS)
        steps.append(step)
    tree: dict[str, Any] = {"version": rnd.choice(("v1", "v1", "v2", ""))}
    if rnd.random() < 0.6:
        tree["inputs"] = {
            name: {"description": "d", "required": rnd.choice(("true", "false", "yes"))}
            for name in rnd.sample(["out", "note", "org", "bad name", "x"], rnd.randint(0, 3))
        }
    tree["workflow"] = steps
    return tree


FRONTMATTER_OK = (
    "name: fuzz-cap\ndescription: d\nmetadata:\n  mda:\n    requires:\n"
    '      network: none\n      runtime: ["python>=3.11"]\n'
)


@st.composite
def documents(draw: st.DrawFn, shaped: bool) -> bytes:
    rnd = draw(st.randoms(use_true_random=False))
    tree = capability_tree(rnd) if shaped else draw(TREES)
    body = render_block(tree, rnd)
    fm_choice = draw(st.integers(0, 3))
    if fm_choice == 1:
        head = "---\n" + FRONTMATTER_OK + "---\n"
    elif fm_choice == 2:
        head = "---\n" + render_block(draw(TREES), rnd) + "---\n"
    elif fm_choice == 3:
        head = "---\n" + render_block(draw(TREES), rnd)  # unterminated frontmatter
    else:
        head = ""
    fence = draw(st.sampled_from(("```", "~~~", "````", " ```", "> ```", "- ```")))
    prefix = {"> ```": "> ", "- ```": "  "}.get(fence, "")
    content = "".join(prefix + line + "\n" for line in body.split("\n"))
    closing = draw(st.sampled_from(("closed", "closed", "closed", "open", "short", "other")))
    marker = fence.strip(" >-")
    close_line = {
        "closed": prefix + marker + "\n",
        "open": "",
        "short": prefix + marker[:-1] + "\n",
        "other": prefix + ("~~~" if marker.startswith("`") else "```") + "\n",
    }[closing]
    prose = draw(
        st.sampled_from(("# Title\n\nProse.\n\n", "", "## Lineage\n\n- `a/b` steps 1-2\n\n"))
    )
    trailer = draw(st.sampled_from(("", "\nMore prose.\n", "\n```runtime\nversion: v1\n```\n")))
    text = head + prose + fence + "runtime\n" + content + close_line + trailer
    newline = draw(st.sampled_from(("\n", "\r\n", "\r", "mixed")))
    if newline == "mixed":
        parts = text.split("\n")
        text = "".join(p + rnd.choice(("\n", "\r\n", "\r")) for p in parts[:-1]) + parts[-1]
    elif newline != "\n":
        text = text.replace("\n", newline)
    data = text.encode("utf-8")
    if draw(st.booleans()) and draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data


INTERESTING = (
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"\r",
    b"\r\n",
    b"\n",
    b"\t",
    b"\x0b",
    b"\x1b",
    b"\x7f",
    b"```",
    b"~~~",
    b"---",
    b"${",
    b"}",
    b"${{",
    b"[",
    b"]",
    b"{",
    b":",
    b": ",
    b"- ",
    b"&a ",
    b"*a",
    b"!!str ",
    b"|",
    b"#",
    b"'",
    b'"',
    b"    ",
    b"\xe2\x80\xa8",
    b"\xc2\x85",
)


@st.composite
def mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(EXAMPLE_BYTES)))
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(("flip", "insert", "delete", "dup", "swap", "cut", "replace")))
        size = len(data)
        at = draw(st.integers(0, max(0, size - 1)))
        if op == "flip" and size:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            chunk = draw(st.one_of(st.sampled_from(INTERESTING), st.binary(min_size=1, max_size=8)))
            data[at:at] = chunk * draw(st.sampled_from((1, 1, 2, 3, 64)))
        elif op == "delete" and size:
            del data[at : at + draw(st.integers(1, 16))]
        elif op in ("dup", "swap", "cut"):
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            if op == "dup":
                lines.insert(i, lines[i])
            elif op == "swap":
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines = lines[:i]
            data = bytearray(b"\n".join(lines))
        elif op == "replace" and size:
            data[at : at + 1] = draw(st.sampled_from(INTERESTING))
    return bytes(data)


# -- fixed pathological documents ------------------------------------------------------------


def cap(body: str, head: str = "") -> bytes:
    return (head + "# T\n\n```runtime\n" + body + "```\n").encode("utf-8")


STEP = "version: v1\nworkflow:\n  - provider: files\n    args: [read, ./a.txt]\n"


def edge_documents() -> list[tuple[str, bytes]]:
    depth = 500
    nested_block_list = "version: v1\nworkflow:\n" + "".join(
        "  " * (i + 1) + "-\n" for i in range(depth)
    )
    nested_block_map = "version: v1\nworkflow:\n" + "".join(
        "  " * (i + 1) + f"k{i}:\n" for i in range(depth)
    )
    room = MAX_BYTES - len(cap(STEP)) - 64
    docs: list[tuple[str, bytes]] = [
        (
            "flow lists nested 500",
            cap("version: v1\nworkflow: " + "[" * depth + "]" * depth + "\n"),
        ),
        (
            "flow maps nested 500",
            cap("version: v1\nworkflow: " + "{a: " * depth + "b" + "}" * depth + "\n"),
        ),
        ("unclosed flow lists 500", cap("version: v1\nworkflow: " + "[" * depth + "\n")),
        ("block lists nested 500", cap(nested_block_list)),
        ("block maps nested 500", cap(nested_block_map)),
        (
            "nesting 500 in args",
            cap(
                "version: v1\nworkflow:\n  - provider: files\n    args: "
                + "[" * depth
                + "]" * depth
                + "\n"
            ),
        ),
        (
            "nesting 500 in frontmatter",
            cap(STEP, "---\nmetadata: " + "[" * depth + "]" * depth + "\n---\n"),
        ),
        (
            "block quotes nested 500",
            (
                "> " * depth
                + "```runtime\n"
                + "> " * depth
                + STEP.replace("\n", "\n" + "> " * depth)
                + "```\n"
            ).encode(),
        ),
        (
            "list items nested 500",
            "".join("  " * i + "- x\n" for i in range(depth)).encode() + cap(STEP),
        ),
        ("1 MiB plain scalar", cap(STEP.replace("./a.txt", "a" * room))),
        ("1 MiB quoted scalar", cap(STEP.replace("./a.txt", '"' + "a" * (room - 2) + '"'))),
        (
            "1 MiB literal block",
            cap(
                STEP.replace(
                    "[read, ./a.txt]", "\n      - read\n      - |\n        " + "a" * (room - 40)
                )
            ),
        ),
        ("1 MiB line without newline", b"x" * MAX_BYTES),
        ("exactly MAX_BYTES", cap(STEP) + b" " * (MAX_BYTES - len(cap(STEP)))),
        ("MAX_BYTES + 1", cap(STEP) + b" " * (MAX_BYTES + 1 - len(cap(STEP)))),
        ("5 MB scalar", cap(STEP.replace("./a.txt", "a" * (5 * 1024 * 1024)))),
        ("empty file", b""),
        ("only a BOM", b"\xef\xbb\xbf"),
        ("BOM + capability", b"\xef\xbb\xbf" + cap(STEP)),
        ("BOM + frontmatter", b"\xef\xbb\xbf" + cap(STEP, "---\n" + FRONTMATTER_OK + "---\n")),
        ("two BOMs", b"\xef\xbb\xbf\xef\xbb\xbf" + cap(STEP)),
        ("BOM inside the block", cap(STEP.replace("workflow", "\ufeffworkflow"))),
        ("CRLF", cap(STEP).replace(b"\n", b"\r\n")),
        ("CR only", cap(STEP).replace(b"\n", b"\r")),
        ("mixed line endings", cap(STEP).replace(b"\n", b"\r\n", 3).replace(b"\n", b"\r", 2)),
        ("CRLF frontmatter", cap(STEP, "---\n" + FRONTMATTER_OK + "---\n").replace(b"\n", b"\r\n")),
        ("NUL first", b"\x00" + cap(STEP)),
        ("NUL in block", cap(STEP.replace("read", "re\x00ad"))),
        ("NUL last", cap(STEP) + b"\x00"),
        ("0xff first", b"\xff" + cap(STEP)),
        ("0xff in block", cap(STEP).replace(b"read", b"r\xffead")),
        ("truncated UTF-8 at the end", cap(STEP) + b"\xe2\x82"),
        ("overlong UTF-8", cap(STEP).replace(b"./a.txt", b"\xc0\xaf")),
        ("UTF-8 surrogate", cap(STEP).replace(b"./a.txt", b"\xed\xa0\x80")),
        ("latin-1 frontmatter", b"---\nname: caf\xe9\n---\n" + cap(STEP)),
        ("tab indentation", cap(STEP.replace("  - provider", "\t- provider"))),
        ("tab after a key", cap(STEP.replace("version: v1", "version:\tv1"))),
        ("tab-indented fence", b"\t```runtime\n" + STEP.encode() + b"```\n"),
        ("tabs in frontmatter", cap(STEP, "---\nname:\tx\n\tdescription: d\n---\n")),
        ("unterminated runtime fence", b"# T\n\n```runtime\n" + STEP.encode()),
        ("closing fence too short", b"# T\n\n````runtime\n" + STEP.encode() + b"```\n"),
        ("closing fence of tildes", b"# T\n\n```runtime\n" + STEP.encode() + b"~~~\n"),
        (
            "unterminated frontmatter",
            b"---\nname: x\n" + b"# T\n\n```runtime\n" + STEP.encode() + b"```\n",
        ),
        ("only an opening ---", b"---\n"),
        ("only an opening fence", b"```runtime"),
        ("empty runtime block", b"```runtime\n```\n"),
        ("50 runtime blocks", cap(STEP) * 50),
        ("runtime fence nested in a longer fence", b"````markdown\n" + cap(STEP) + b"````\n"),
        ("vertical tab in the block", cap(STEP.replace("./a.txt", "a\x0bb"))),
        ("ESC in the block", cap(STEP.replace("./a.txt", '"\x1b[31m"'))),
        ("DEL in the block", cap(STEP.replace("./a.txt", "a\x7f"))),
        ("U+FFFE in the block", cap(STEP.replace("./a.txt", "a\ufffe"))),
        ("form feed in frontmatter", cap(STEP, "---\nname: a\x0cb\n---\n")),
        ("U+2028 in the block", cap(STEP.replace("workflow:", "x: [\u2028workflow:"))),
        ("NEL in the block", cap(STEP.replace("workflow:", "x: [\x85workflow:"))),
        ("anchors, aliases, tags", cap("version: &v v1\nworkflow: *v\nx: !!str y\n")),
        (
            "an empty list entry between blank lines, after a flow list",
            cap(STEP + "\n  -\n\n"),
        ),
        ("duplicate keys", cap(STEP + "version: v1\nworkflow: []\n")),
    ]
    docs += [(f"example {p.name}", p.read_bytes()) for p in EXAMPLE_FILES]
    return docs


# -- the campaign ---------------------------------------------------------------------------


def test_fuzz_campaign(
    cli: Callable[..., Result], work: Path, figure: Callable[[str], None]
) -> None:
    examples = sized(100, 2000)
    campaign = Campaign(cli, work, cli_every=sized(50, 40))
    fuzz_settings = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    for name, data in edge_documents():
        # through the CLI as well, except the slow near-limit ones (the CLI reads the same bytes)
        campaign.check(data, name, through_cli=len(data) < 16 * 1024 or len(data) > MAX_BYTES)

    @fuzz_settings
    @given(documents(shaped=False))
    def random_trees(data: bytes) -> None:
        campaign.check(data, "random YAML tree")

    @fuzz_settings
    @given(documents(shaped=True))
    def capability_shaped(data: bytes) -> None:
        campaign.check(data, "capability-shaped tree")

    @fuzz_settings
    @given(mutations())
    def mutated_examples(data: bytes) -> None:
        campaign.check(data, "mutated example")

    random_trees()
    capability_shaped()
    mutated_examples()

    figure(
        f"fuzz: {campaign.documents} documents, {campaign.crash_count} crashes, "
        f"max {campaign.max_seconds:.2f} s per document "
        f"({campaign.cli_runs} of them through the CLI)"
    )
    assert campaign.crash_count == 0, "documents without a clean verdict:\n" + campaign.report()
    assert campaign.max_seconds < PER_DOCUMENT_S


# -- the size limit ------------------------------------------------------------------------


@pytest.mark.parametrize("size", [MAX_BYTES + 1, 5 * 1024 * 1024, 50 * 1024 * 1024])
def test_a_file_over_the_limit_is_refused_at_once(
    cli: Callable[..., Result], work: Path, size: int
) -> None:
    data = cap(STEP.replace("./a.txt", "a" * size))[:size]
    started = time.perf_counter()
    code, problems = verdict(data)
    in_process = time.perf_counter() - started
    assert code == 2
    assert [(p.line, p.column, p.code) for p in problems] == [(1, 1, "too-large")]
    assert in_process < 0.5, f"refusing {size} bytes took {in_process:.3f} s in process"

    path = work / "huge.md"
    path.write_bytes(data)
    started = time.perf_counter()
    result = cli("--output", "json", "capability", "validate", str(path))
    through_cli = time.perf_counter() - started
    assert result.code == 2, result.stdout + result.stderr
    doc = result.json()
    check_schema(doc, "validate")
    assert [p["code"] for p in doc["capabilities"][0]["problems"]] == ["too-large"]
    assert through_cli < 2.0, f"the CLI took {through_cli:.3f} s to refuse {size} bytes"


def test_the_limit_itself_is_accepted() -> None:
    data = cap(STEP) + b" " * (MAX_BYTES - len(cap(STEP)))
    assert len(data) == MAX_BYTES
    code, problems = verdict(data)
    assert code == 0, problems


# -- the largest accepted documents: time and memory, isolated -------------------------------
#
# Each document is validated in a forked child under an address-space ceiling,
# so a quadratic blow-up fails the test instead of exhausting the machine.
# Memory is the growth of the child's peak RSS (VmHWM, reset through
# /proc/self/clear_refs), which costs nothing while measuring; tracemalloc's peak
# is the fallback where /proc does not offer that. Time is CPU time of the
# child (process_time), which other load on the machine does not inflate much.

# Budget of the largest accepted document. RSS counts allocator slack as well: the
# heaviest linear documents (1 MiB of YAML comment lines or duplicate keys) peak at
# ~230 MiB in tracemalloc and ~290 MiB in RSS, so 512 MiB leaves room for them
# while anything superlinear overshoots at once.
MAX_DOCUMENT_RSS = 512 * 1024 * 1024
# Text of all problems of one document, per input byte: the CLI prints all of it.
MAX_REPORT_BYTES_PER_BYTE = 100
CEILING = 2 * 1024 * 1024 * 1024


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        found = re.search(rf"{field_name}:\s+(\d+)", fh.read())
    assert found is not None
    return int(found.group(1))


def _child_report(data: bytes, ceiling: int) -> dict[str, Any]:
    import resource
    import tracemalloc

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_status_kib("VmSize") * 1024 + ceiling, hard))
    try:
        # give freed heap pages back first (the parent may have left some resident), so
        # that the growth of the peak is what this document allocates
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        use_rss = True
    except (OSError, AttributeError):  # no glibc, or no /proc: tracemalloc instead
        use_rss = False
    base = _status_kib("VmRSS") if use_rss else 0
    if not use_rss:
        tracemalloc.start()
    started = time.process_time()
    code, problems = verdict(data)
    cpu = time.process_time() - started
    if use_rss:
        peak = (_status_kib("VmHWM") - base) * 1024
    else:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {
        "ok": True,
        "cpu": cpu,
        "peak": peak,
        "code": code,
        "problems": len(problems),
        "report_bytes": sum(len(p.message) + len(p.hint or "") for p in problems),
        "faults": position_faults(problems, data, "fuzz.md")[:3],
    }


def measure_in_child(data: bytes, wall: float, ceiling: int = CEILING) -> dict[str, Any]:
    """Validate ``data`` in a forked child: CPU seconds, peak memory growth, verdict."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            report = _child_report(data, ceiling)
        except MemoryError:
            report = {"ok": False, "error": f"MemoryError: over a {ceiling >> 20} MiB ceiling"}
        except BaseException as exc:
            report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        os.write(write_end, json.dumps(report).encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + wall
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                return {"ok": False, "error": f"no verdict after {wall:g} s (killed)"}
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                chunk = os.read(read_end, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    if not chunks:
        return {"ok": False, "error": "the child died without a report"}
    return json.loads(b"".join(chunks))  # type: ignore[no-any-return]


HEAD = b"# T\n\n```runtime\nversion: v1\nworkflow:\n"
END = b"```\n"


def fill(size: int, head: bytes, unit: bytes, tail: bytes = b"") -> bytes:
    count = max(1, (size - len(head) - len(tail)) // len(unit))
    return head + unit * count + tail


def big_documents(size: int) -> list[tuple[str, bytes]]:
    """Documents of about ``size`` bytes, each stressing one station."""
    args = HEAD + b"  - provider: files\n    args:"
    return [
        ("one long plain arg", fill(size, args + b" [read, ", b"a", b"]\n" + END)),
        ("many block-list args", fill(size, args + b"\n", b"      - a\n", END)),
        ("many steps", fill(size, HEAD, b"  - {provider: files, args: [read, x]}\n", END)),
        ("many duplicate keys", fill(size, HEAD, b"a: b\n", END)),
        ("many comment lines", fill(size, HEAD, b"#\n", END)),
        ("many ${refs}", fill(size, args + b' [write, a, "', b"${zz}", b'"]\n' + END)),
        ("many runtime blocks", fill(size, b"", b"```runtime\n```\n")),
        ("many plain fences", fill(size, b"", b"```\n")),
        ("one line of block quotes", fill(size, b"", b">", b"\n")),
        ("CR-only lines", fill(size, b"", b"\r")),
        ("many Lineage refs", fill(size, b"## Lineage\n", b"`a` steps 1-2, 3 ")),
    ]


def test_largest_documents_stay_within_memory_and_report_budgets() -> None:
    """Memory (:data:`MAX_DOCUMENT_RSS` for 1 MiB) and report size stay linear, no hang.

    By default each document is 1/32 of the limit and gets 1/32 of the memory
    budget (so a quadratic station fails already); RUNTIME_FULL_CAMPAIGNS=1
    uses the full 1 MiB.
    """
    size = MAX_BYTES if FULL else MAX_BYTES // 32
    budget = max(16 * 1024 * 1024, int(MAX_DOCUMENT_RSS * size / MAX_BYTES))
    wall = 300.0 if FULL else 60.0
    failures = []
    for name, data in big_documents(size):
        assert len(data) <= MAX_BYTES
        got = measure_in_child(data, wall)
        if not got["ok"]:
            failures.append(f"{name} ({len(data)} bytes): {got['error']}")
            continue
        line = (
            f"{name} ({len(data)} bytes): {got['peak'] / 2**20:.1f} MiB, {got['cpu']:.2f} s CPU, "
            f"{got['problems']} problems of {got['report_bytes']} bytes"
        )
        if got["peak"] > budget:
            failures.append(f"{line}: over the memory budget of {budget / 2**20:.1f} MiB")
        if got["report_bytes"] > MAX_REPORT_BYTES_PER_BYTE * len(data):
            failures.append(f"{line}: the report is over {MAX_REPORT_BYTES_PER_BYTE}x the input")
        if got["faults"] or got["code"] not in (0, 2):
            failures.append(f"{line}: bad verdict {got['code']} {got['faults']}")
    assert not failures, f"documents of {size} bytes over budget:\n" + "\n".join(failures)


@pytest.mark.parametrize("name", ["many steps", "many duplicate keys"])
def test_a_maximal_yaml_block_validates_within_the_time_bound(name: str) -> None:
    """The largest YAML a capability may hold gets its verdict within :data:`PER_DOCUMENT_S` (CPU).

    YAML is bounded twice: the runtime block by size (``MAX_BLOCK_BYTES``) and
    every YAML document by its number of values (``MAX_NODES``); whichever a
    document reaches first ends the parse. "many steps" is a valid capability
    up to the node budget; "many duplicate keys" is one error per line. Both
    are measured at the block's size limit, not projected.
    """
    from runtime.document.loader import MAX_BLOCK_BYTES

    data = dict(big_documents(MAX_BLOCK_BYTES))[name]
    got = measure_in_child(data, 120.0)
    assert got["ok"], got["error"]
    assert got["cpu"] < PER_DOCUMENT_S, (
        f"{name}: {len(data)} bytes took {got['cpu']:.2f} s CPU ({got['problems']} problems)"
    )
