"""Engineering Runtime's names for Home and its capability folder, and what its CI checks
of a fresh Home: an empty ``capabilities/``, and ``No capabilities resolved.``"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import capability, check_schema, write

NOTES = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n", title="Notes"
)


def test_bootstrap_makes_an_empty_capabilities_folder(cli, home: Path) -> None:
    result = cli("bootstrap")
    assert result.code == 0, result.stderr
    assert (home / "capabilities").is_dir()
    assert list((home / "capabilities").iterdir()) == []
    assert "  made   capabilities/ (empty; yours)\n" in result.stdout
    # user-owned files ER's CI checks are absent stay absent
    for name in ("config.yaml", "policy.yaml", "policy-config.yaml", "context.yaml"):
        assert not (home / name).exists(), name
    again = cli("--output", "json", "bootstrap").json()
    check_schema(again, "bootstrap")
    assert again["created"] == []


def test_bootstrap_leaves_what_the_user_put_in_the_place_of_the_folder(cli, home: Path) -> None:
    write(home / "capabilities", "not a folder\n")
    doc = cli("--output", "json", "bootstrap").json()
    assert doc["created"] == []
    assert (home / "capabilities").read_text() == "not a folder\n"


def test_a_fresh_home_lists_no_capabilities_in_er_words(cli, home: Path) -> None:
    assert cli("bootstrap").code == 0
    result = cli("capability", "list")
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "No capabilities resolved."
    assert str(home / "capabilities") in result.stdout


def test_engineering_runtime_home_is_an_alias_of_runtime_home(
    cli, env: dict[str, str], tmp_path: Path
) -> None:
    er_home = tmp_path / "er-home"
    del env["RUNTIME_HOME"]
    result = cli("bootstrap", extra_env={"ENGINEERING_RUNTIME_HOME": str(er_home)})
    assert result.code == 0, result.stderr
    assert f"Runtime Home: {er_home}\n" in result.stdout
    assert (er_home / "capabilities").is_dir()
    write(er_home / "capabilities" / "notes.md", NOTES)
    listed = cli("capability", "list", extra_env={"ENGINEERING_RUNTIME_HOME": str(er_home)})
    assert "notes" in listed.stdout and str(er_home / "capabilities") in listed.stdout


def test_runtime_home_wins_over_the_alias_with_a_note(cli, home: Path, tmp_path: Path) -> None:
    other = tmp_path / "er-home"
    result = cli("bootstrap", extra_env={"ENGINEERING_RUNTIME_HOME": str(other)})
    assert result.code == 0, result.stderr
    assert f"Runtime Home: {home}\n" in result.stdout
    assert not other.exists()
    assert (
        f"note: RUNTIME_HOME and ENGINEERING_RUNTIME_HOME are both set; RUNTIME_HOME wins "
        f"({home}), ENGINEERING_RUNTIME_HOME ({other}) is ignored\n"
    ) in result.stderr
    # the same folder under both names says nothing; -q says nothing either
    same = cli("bootstrap", extra_env={"ENGINEERING_RUNTIME_HOME": str(home)})
    assert "note:" not in same.stderr
    quiet = cli("-q", "capability", "list", extra_env={"ENGINEERING_RUNTIME_HOME": str(other)})
    assert "note:" not in quiet.stderr


def test_runtime_capabilities_dir_stands_in_for_homes_folder(
    cli, home: Path, work: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    write(store / "github" / "daily.md", NOTES)
    write(home / "capabilities" / "home-only.md", NOTES)
    result = cli("capability", "list", extra_env={"RUNTIME_CAPABILITIES_DIR": str(store)})
    assert result.code == 0, result.stderr
    assert "github/daily" in result.stdout and "home-only" not in result.stdout
    # a name resolves through it, and a relative one is taken from the working folder
    write(work / "rel" / "relnotes.md", NOTES)
    shown = cli("capability", "show", "relnotes", extra_env={"RUNTIME_CAPABILITIES_DIR": "rel"})
    assert shown.code == 0, shown.stderr
    # empty, as ER's setup sets it for bootstrap, is unset: Home's folder again
    empty = cli("capability", "list", extra_env={"RUNTIME_CAPABILITIES_DIR": ""})
    assert "home-only" in empty.stdout


def test_a_missing_runtime_capabilities_dir_is_named(cli, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    result = cli("capability", "list", extra_env={"RUNTIME_CAPABILITIES_DIR": str(gone)})
    assert result.code == 0
    assert (
        f"note: capability source {gone} (RUNTIME_CAPABILITIES_DIR) does not exist; skipped\n"
        in result.stderr
    )
    doctor = cli("--output", "json", "doctor", extra_env={"RUNTIME_CAPABILITIES_DIR": str(gone)})
    assert f"{gone} (RUNTIME_CAPABILITIES_DIR) does not exist" in doctor.stdout
    assert "unset RUNTIME_CAPABILITIES_DIR" in doctor.stdout
