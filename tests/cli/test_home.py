"""Runtime Home: bootstrap, refresh on version change, pruning, user files untouched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from runtime import __version__
from tests.conftest import REPO, run_checkout, without_read_override, write


def test_bootstrap_copies_specs_writes_version_and_manifest(cli, home: Path) -> None:
    result = cli("bootstrap")
    assert result.code == 0
    assert f"Runtime Home: {home}" in result.stdout
    assert "wrote  specs/capability-spec.md" in result.stdout
    assert (home / "version").read_text().strip() == __version__
    manifest = json.loads((home / "manifest.json").read_text())
    shipped = sorted(
        p.relative_to(REPO).as_posix() for p in (REPO / "specs").rglob("*") if p.is_file()
    )
    assert sorted(manifest["files"]) == shipped
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((home / rel).read_bytes()).hexdigest() == digest
    again = cli("--output", "json", "bootstrap").json()
    assert again["written"] == [] and again["pruned"] == []
    assert again["unchanged"] == len(shipped)


def test_bootstrap_repairs_a_modified_runtime_file(cli, home: Path) -> None:
    cli("bootstrap")
    spec = home / "specs" / "capability-spec.md"
    spec.write_text("edited\n")
    doc = cli("--output", "json", "bootstrap").json()
    assert doc["written"] == ["specs/capability-spec.md"]
    assert spec.read_bytes() == (REPO / "specs" / "capability-spec.md").read_bytes()


def test_version_change_rewrites_prunes_and_keeps_user_files(cli, home: Path, work: Path) -> None:
    cli("bootstrap")
    # pretend an older version shipped one more file
    write(home / "specs" / "retired.md", "old\n")
    manifest = json.loads((home / "manifest.json").read_text())
    manifest["files"]["specs/retired.md"] = hashlib.sha256(b"old\n").hexdigest()
    (home / "manifest.json").write_text(json.dumps(manifest))
    (home / "version").write_text("0.0.1\n")
    user_files = {
        "config.yaml": "capability_sources: []\n",
        "policy.yaml": "version: v1\n",
        "contexts.json": '{"active": null, "contexts": {}}\n',
        "capabilities/mine.md": "# mine\n",
        "audit/audit.jsonl": '{"event": "x"}\n',
        "specs/my-notes.md": "a user file inside specs/ that no manifest lists\n",
    }
    for rel, text in user_files.items():
        write(home / rel, text)
    # any command refreshes Home cheaply
    write(
        work / "ok.md",
        "# ok\n\n```runtime\nversion: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n```\n",
    )
    assert cli("capability", "validate", "ok.md").code == 0
    assert (home / "version").read_text().strip() == __version__
    assert not (home / "specs" / "retired.md").exists()
    for rel, text in user_files.items():
        assert (home / rel).read_text() == text, rel
    assert "specs/retired.md" not in json.loads((home / "manifest.json").read_text())["files"]


def test_version_flag_and_command(cli) -> None:
    assert cli("--version").stdout == f"runtime {__version__}\n"
    assert cli("version").stdout == f"runtime {__version__}\n"
    assert cli("--output", "json", "version").json() == {"ok": True, "version": __version__}


@pytest.mark.parametrize("command", [["capability", "list"], ["bootstrap"]])
def test_unwritable_home_is_a_clear_error(cli, tmp_path: Path, command: list[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = cli(*command, extra_env={"RUNTIME_HOME": str(blocker / "home")})
    assert result.code == 2, result.stderr
    assert "cannot prepare Runtime Home" in result.stderr
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr


# -- a damaged copy of a spec -------------------------------------------------------------

SHIPPED_SPEC = REPO / "specs" / "capability-spec.md"


def test_a_spec_copy_that_is_not_utf8_is_named_and_bootstrap_repairs_it(cli, home: Path) -> None:
    assert cli("bootstrap").code == 0
    spec = home / "specs" / "capability-spec.md"
    spec.write_bytes(b"# ok\n\xff\n")
    result = cli("capability", "spec")
    assert result.code == 2, result.stderr
    assert f"error: {spec}:2:1: not UTF-8 text\n" in result.stderr
    assert "hint: run `runtime bootstrap`" in result.stderr
    assert cli("bootstrap").code == 0
    assert cli("capability", "spec").stdout == SHIPPED_SPEC.read_text(encoding="utf-8")


def test_an_unreadable_spec_copy_is_named_and_bootstrap_repairs_it(
    cli, home: Path, env: dict[str, str], work: Path
) -> None:
    assert cli("bootstrap").code == 0
    spec = home / "specs" / "capability-spec.md"
    spec.chmod(0)
    as_user = without_read_override()
    result = run_checkout(env, work, "capability", "spec", prefix=as_user)
    assert result.code == 2, result.stderr
    assert f"error: cannot read {spec}: Permission denied\n" in result.stderr
    assert "hint: run `runtime bootstrap`" in result.stderr
    repaired = run_checkout(env, work, "bootstrap", prefix=as_user)
    assert repaired.code == 0, repaired.stderr
    assert "wrote  specs/capability-spec.md" in repaired.stdout
    shown = run_checkout(env, work, "capability", "spec", prefix=as_user)
    assert shown.stdout == SHIPPED_SPEC.read_text(encoding="utf-8")


def test_a_folder_in_place_of_a_spec_is_repaired_when_empty_else_named(cli, home: Path) -> None:
    assert cli("bootstrap").code == 0
    spec = home / "specs" / "capability-spec.md"
    spec.unlink()
    spec.mkdir()
    assert cli("bootstrap").code == 0  # an empty folder holds nothing: replaced
    assert spec.read_bytes() == SHIPPED_SPEC.read_bytes()
    spec.unlink()
    write(spec / "notes.txt", "someone's\n")
    for command in (["bootstrap"], ["capability", "spec"]):
        result = cli(*command)
        assert result.code == 2, result.stderr
        assert (
            f"error: cannot prepare Runtime Home at {home}: {spec} is a folder, not a file\n"
            in (result.stderr)
        )
        assert f"hint: runtime writes a file there: move the folder away (mv {spec} " in (
            result.stderr
        )
        assert (spec / "notes.txt").read_text() == "someone's\n"
    assert not list((home / "specs").glob(".capability-spec.md.*.tmp"))
    spec.rename(home / "moved")
    assert cli("bootstrap").code == 0
    assert cli("capability", "spec").stdout == SHIPPED_SPEC.read_text(encoding="utf-8")


# -- a file where Home would be -----------------------------------------------------------


def test_a_home_that_is_a_file_is_said_so_by_doctor_and_bootstrap(cli, tmp_path: Path) -> None:
    blocker = tmp_path / "hf"
    blocker.write_text("x\n")
    fix = f"set RUNTIME_HOME to a folder (a missing one is created), or move {blocker} away"
    for root, problem in (
        (blocker, f"RUNTIME_HOME points at a file, not a folder: {blocker}"),
        (
            blocker / "sub",
            f"{blocker / 'sub'} cannot be created: {blocker} is a file, not a folder",
        ),
    ):
        env = {"RUNTIME_HOME": str(root)}
        doctor = cli("--output", "json", "doctor", extra_env=env)
        assert doctor.code == 5, doctor.stderr
        (home,) = [c for c in doctor.json()["checks"] if c["check"] == "home"]
        assert home["detail"] == problem
        assert home["fix"].startswith(fix)  # not `runtime bootstrap`: it fails the same way
        bootstrap = cli("bootstrap", extra_env=env)
        assert bootstrap.code == 2, bootstrap.stderr
        assert f"error: cannot prepare Runtime Home: {problem}\n" in bootstrap.stderr
        assert f"hint: {fix}" in bootstrap.stderr
    assert blocker.read_text() == "x\n"


def test_doctor_reports_an_unreadable_spec_copy(
    cli, home: Path, env: dict[str, str], work: Path
) -> None:
    assert cli("bootstrap").code == 0
    (home / "specs" / "files.md").chmod(0)
    as_user = without_read_override()
    result = run_checkout(env, work, "doctor", prefix=as_user)
    assert result.code == 5, result.stderr
    assert "home: 1 runtime-owned file(s) differ: specs/files.md" in result.stdout
    assert "fix: run `runtime bootstrap`" in result.stdout
    assert run_checkout(env, work, "bootstrap", prefix=as_user).code == 0
    assert "OK      home:" in run_checkout(env, work, "doctor", prefix=as_user).stdout
