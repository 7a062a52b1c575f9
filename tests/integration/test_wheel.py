"""The wheel carries specs/ and policies/: build it, install it outside the checkout, run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(dist),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wheel = next(dist.glob("*.whl"))
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120
    )
    # --no-deps: the dependencies are already importable from this interpreter's site-packages
    # (the venv sees them through --system-site-packages only when this test runs in a venv
    # whose base has them; installing them again would need the network).
    pip = venv / "bin" / "pip"
    subprocess.run(
        [str(pip), "install", "--quiet", "--no-deps", str(wheel)], check=True, timeout=300
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    home = tmp_path / "home"
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "RUNTIME_HOME": str(home),
        "HOME": str(tmp_path),
        # the dependencies come from the test interpreter's environment
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("site-packages")),
    }
    runtime = str(venv / "bin" / "runtime")
    boot = subprocess.run(
        [runtime, "bootstrap"], cwd=outside, env=env, capture_output=True, text=True, timeout=60
    )
    assert boot.returncode == 0, boot.stderr
    assert (home / "specs" / "capability-spec.md").is_file()
    assert (home / "specs" / "schemas" / "validate.schema.json").is_file()
    cap = outside / "cap.md"
    cap.write_text(
        "# c\n\n```runtime\nversion: v1\nworkflow:\n  - binary: git\n    args: [status]\n```\n"
    )
    check = subprocess.run(
        [runtime, "capability", "validate", str(cap)],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import runtime; print(runtime.__file__)"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert str(venv) in where.stdout, "the test must exercise the installed wheel, not the checkout"
