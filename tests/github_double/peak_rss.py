"""Run a command and measure its peak memory, for the tests that bound it.

The command runs as the only child of a small Python wrapper, which reports
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``: the peak RSS of the command
alone. The wrapper matters: a process forked from the test process (which holds
the double's GraphQL schema) would carry the test process's high-water mark in
its ``ru_maxrss`` across ``exec`` (bench/README.md, figure 8). The command's
address space is capped at ``cap_mib`` as a safety net: a regression then
fails with a MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Measured", "run_measured"]

_WRAPPER = """\
import json, resource, subprocess, sys
cap = int(sys.argv[1]) * 1024 * 1024
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
done = subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL, capture_output=True,
                      text=True, preexec_fn=limit)
print(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


@dataclass
class Measured:
    code: int
    stdout: str
    stderr: str
    peak_mib: float  # the command's peak RSS

    def json(self) -> object:
        return json.loads(self.stdout)


def run_measured(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    timeout: float = 60,
    cap_mib: int = 3072,
) -> Measured:
    """Run ``argv`` (stdin empty) and return its exit code, output and peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(cap_mib), *argv],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    report = json.loads(done.stdout)
    return Measured(report["code"], report["stdout"], report["stderr"], report["maxrss_kib"] / 1024)
