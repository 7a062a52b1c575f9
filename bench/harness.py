"""Process timing, fresh Runtime Homes, interleaving and the figure model of bench/run.py."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _bin_dir() -> Path:
    """The venv's bin folder: where this python lives (not resolved: a venv python is a link)."""
    here = Path(sys.executable).parent
    if (here / "runtime").exists():
        return here
    return ROOT / ".venv" / "bin"


BIN = _bin_dir()
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
RUNTIME = str(BIN / "runtime")

# Variables never passed to a measured process unless a figure sets them.
_DROPPED_PREFIXES = ("RUNTIME_",)
_DROPPED = {"GITHUB_API_URL", "GITHUB_GRAPHQL_URL", "GITHUB_TOKEN", "GH_TOKEN", "GH_HOST"}


class BenchError(Exception):
    """A measured process did not behave as the figure expects (wrong exit code...)."""


def base_environment() -> dict[str, str]:
    """os.environ without RUNTIME_* (RUNTIME_GITHUB_TOKEN included) and GitHub URL/token vars."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_DROPPED_PREFIXES) and k not in _DROPPED
    }


def _tail(text: bytes | str | None, limit: int = 400) -> str:
    if not text:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    expect: int | None = 0,
    timeout: float = 300,
) -> subprocess.CompletedProcess[bytes]:
    """Run a process to completion (untimed), capturing both streams; check its exit code."""
    try:
        done = subprocess.run(
            list(argv), env=dict(env), cwd=cwd, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"`{_show(argv)}` did not finish within {timeout:.0f} s") from exc
    if expect is not None and done.returncode != expect:
        raise BenchError(
            f"`{_show(argv)}` exited {done.returncode} (expected {expect}): "
            f"{_tail(done.stderr) or _tail(done.stdout)}"
        )
    return done


def timed(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    expect: int | None = 0,
    timeout: float = 300,
    stdin: bytes | None = None,
) -> float:
    """Whole-process wall time (perf_counter around subprocess.run), stdout to /dev/null;
    ``stdin``: what the process reads (else nothing)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            list(argv),
            env=dict(env),
            cwd=cwd,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"`{_show(argv)}` did not finish within {timeout:.0f} s") from exc
    elapsed = time.perf_counter() - start
    if expect is not None and done.returncode != expect:
        raise BenchError(
            f"`{_show(argv)}` exited {done.returncode} (expected {expect}): {_tail(done.stderr)}"
        )
    return elapsed


def _show(argv: Sequence[str]) -> str:
    shown = [Path(a).name if a in (RUNTIME, PYTHON) else a for a in argv]
    text = " ".join(shown)
    return text if len(text) <= 160 else text[:157] + "..."


class Workspace:
    """Everything temporary of one bench run, under one folder removed at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._counter = itertools.count(1)
        self._template: Path | None = None
        self.copy_homes = True
        self.env = base_environment()

    def path(self, prefix: str) -> Path:
        """A fresh, not yet existing path under the root."""
        return self.root / f"{prefix}-{next(self._counter):05d}"

    def folder(self, prefix: str) -> Path:
        folder = self.path(prefix)
        folder.mkdir(parents=True)
        return folder

    def compile_bytecode(self) -> str:
        """Bring runtime's bytecode caches up to date (untimed), as installing a wheel does.

        The references import typer and strictyaml from site-packages, compiled when
        they were installed; runtime's own modules in an editable checkout are compiled
        only when Python may write caches (``PYTHONDONTWRITEBYTECODE`` unset) and
        after every edit. Without this, start-up figures would measure the compiler.
        """
        try:
            run(
                [PYTHON, "-m", "compileall", "-q", str(ROOT / "runtime"), str(ROOT / "providers")],
                env=self.env,
                timeout=300,
            )
        except BenchError as exc:
            return f"not compiled ({exc}): start-up figures include compiling"
        return "runtime and providers compiled before measuring (untimed), as a wheel install does"

    def prepare_home_template(self) -> str:
        """Bootstrap one Home (untimed); check that a copy of it counts as up to date."""
        template = self.path("home-template")
        env = {**self.env, "RUNTIME_HOME": str(template)}
        run([RUNTIME, "bootstrap"], env=env, timeout=120)
        self._template = template
        probe = self.path("home-probe")
        shutil.copytree(template, probe, symlinks=True)
        done = run(
            [RUNTIME, "--output", "json", "bootstrap"],
            env={**self.env, "RUNTIME_HOME": str(probe)},
            timeout=120,
        )
        try:
            report = json.loads(done.stdout)
            fresh = not report.get("written") and not report.get("pruned")
        except (ValueError, AttributeError):
            fresh = False
        self.copy_homes = fresh
        shutil.rmtree(probe, ignore_errors=True)
        if fresh:
            return "each measured process gets a copy of a Home bootstrapped once (untimed)"
        return "each measured process gets its own Home, bootstrapped (untimed) before it runs"

    def fresh_home(self) -> Path:
        """A new Runtime Home, already bootstrapped; nothing of it is timed."""
        home = self.path("home")
        if self.copy_homes and self._template is not None:
            shutil.copytree(self._template, home, symlinks=True)
        else:
            run([RUNTIME, "bootstrap"], env={**self.env, "RUNTIME_HOME": str(home)}, timeout=120)
        return home

    def env_with_home(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**self.env, "RUNTIME_HOME": str(self.fresh_home()), **(extra or {})}


def interleave(
    variants: Mapping[str, Callable[[], float]],
    reps: int,
    *,
    warmup: Sequence[str] = (),
) -> dict[str, list[float]]:
    """Run the variants in rounds, ``reps`` times; returns the samples.

    The order alternates: A, B, C in one round, C, B, A in the next. A machine
    whose speed drifts during a round (this VM's disk slows as fsyncs pile up,
    by several times over one figure) would otherwise always favour the
    variants measured first; alternating cancels a steady drift over each pair
    of rounds. ``warmup`` names variants run once, untimed, before the first round.
    """
    for name in warmup:
        variants[name]()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants.items())
    for round_number in range(reps):
        for name, measure in order if round_number % 2 == 0 else reversed(order):
            samples[name].append(measure())
    return samples


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


# ----------------------------------------------------------------------------- figures


@dataclass
class Figure:
    id: str
    title: str
    target: str
    unit: str = "s"  # s (seconds), count, MiB
    measured: float | None = None
    reference: float | None = None
    ratio: float | None = None
    ok: bool = False
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "PASS" if self.ok else "FAIL"

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "unit": self.unit,
            "measured": self.measured,
            "reference": self.reference,
            "ratio": self.ratio,
            "measured_text": fmt_value(self.measured, self.unit),
            "reference_text": fmt_value(self.reference, self.unit),
            "target": self.target,
            "verdict": self.verdict,
            "notes": self.notes,
            "details": self.details,
        }


def ratio_figure(
    fig: Figure, measured: float, reference: float, limit: float, *, checks_ok: bool = True
) -> Figure:
    """Fill a ratio figure: PASS iff measured / reference <= limit (and the checks held)."""
    fig.measured, fig.reference = measured, reference
    if reference <= 0 or measured < 0:
        # A negative marginal cost is noise, not speed: no verdict can be drawn from it.
        fig.ratio = None
        fig.ok = False
        fig.notes.append(
            "inconclusive: a negative or zero time (noise larger than the effect); "
            "rerun on an idle machine"
        )
        return fig
    fig.ratio = measured / reference
    fig.ok = fig.ratio <= limit and checks_ok
    return fig


def fmt_seconds(value: float) -> str:
    ms = value * 1000
    if abs(ms) < 10:
        return f"{ms:.3f} ms"
    if abs(ms) < 1000:
        return f"{ms:.1f} ms"
    return f"{value:.2f} s"


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return fmt_seconds(value)
    if unit == "count":
        return str(int(value))
    if unit == "MiB":
        return f"{value:.1f} MiB"
    return f"{value:g} {unit}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_table(figures: Sequence[Figure]) -> str:
    header = ("figure", "measured", "reference", "ratio", "target", "verdict")
    rows = [
        (
            f"{f.id} {f.title}",
            fmt_value(f.measured, f.unit),
            fmt_value(f.reference, f.unit),
            fmt_ratio(f.ratio),
            f.target,
            f.verdict,
        )
        for f in figures
    ]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])
