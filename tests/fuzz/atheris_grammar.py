"""Coverage-guided fuzzing of the capability grammar with atheris (libFuzzer).

The same in-process path as ``runtime capability validate``:
:func:`runtime.document.loader.parse_document`, :func:`runtime.document.grammar.check_capability`
and :func:`runtime.plan.validate.check_steps`. The expected outcome of every input
is a verdict (problems, possibly none), each problem at line >= 1 and
column >= 1. Anything else -- any exception, or a problem without a position
-- is a crash: libFuzzer stops and writes the input to ``crash-<sha1>``.

Run (from the repository root)::

    .venv/bin/pip install atheris
    .venv/bin/python tests/fuzz/atheris_grammar.py -runs=100000
    .venv/bin/python tests/fuzz/atheris_grammar.py -max_total_time=600 corpus/

Without a corpus folder the examples in ``examples/`` seed the run, from a
temporary folder (libFuzzer adds the inputs it finds to its corpus folder).
A crashing input is written to ``./crash-<sha1>`` (``-artifact_prefix=DIR/``
puts it elsewhere). ``-max_len`` defaults to 64 KiB here; libFuzzer's
own flags all work. A slow input (over ``-timeout`` seconds, 25 by default
here) is reported by libFuzzer as a timeout.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

with atheris.instrument_imports():
    from runtime.document.grammar import check_capability
    from runtime.document.loader import parse_document
    from runtime.plan.validate import check_steps

from runtime.home.registry import load_registry  # noqa: E402
from runtime.plan.policy_file import load_policy  # noqa: E402 - after the instrumented imports

REGISTRY = load_registry()
POLICY = load_policy(None)
LABEL = "fuzz.md"


class BadVerdict(Exception):
    """A verdict that breaks the contract (an unpositioned or malformed problem)."""


def validate(data: bytes) -> int:
    """Exit code of `runtime capability validate` for ``data``: 0 or 2."""
    doc = parse_document(data, LABEL)
    cap, problems = check_capability(doc)
    problems.extend(check_steps(cap, REGISTRY, POLICY))
    for p in problems:
        if p.line < 1 or p.column < 1 or p.file != LABEL:
            raise BadVerdict(f"problem at {p.file}:{p.line}:{p.column}: {p.code}: {p.message}")
        if p.severity not in ("error", "warning") or not p.code or not p.message:
            raise BadVerdict(f"malformed problem {p!r}")
    return 2 if any(p.severity == "error" for p in problems) else 0


def TestOneInput(data: bytes) -> None:  # the name atheris expects
    validate(data)  # any exception propagates: atheris reports it as a crash


def _seed(argv: list[str]) -> list[str]:
    """Give libFuzzer the examples as a seed corpus when no corpus folder is named."""
    flags = [a for a in argv[1:] if a.startswith("-")]
    folders = [a for a in argv[1:] if not a.startswith("-")]
    if not any(f.startswith("-max_len=") for f in flags):
        flags.append(f"-max_len={64 * 1024}")
    if not any(f.startswith("-timeout=") for f in flags):
        flags.append("-timeout=25")
    if not folders:  # libFuzzer adds what it finds to the corpus folder: a temporary one
        seeds = Path(tempfile.mkdtemp(prefix="runtime-fuzz-corpus-"))
        for example in sorted((REPO / "examples").glob("*.md")):
            (seeds / example.name).write_bytes(example.read_bytes())
        folders = [str(seeds)]
    return [argv[0], *flags, *folders]


def main() -> None:
    atheris.Setup(_seed(sys.argv), TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
