"""config.yaml's capability_sources (issue 20, item 8).

An entry that is not a string (YAML reads a plain ``5`` as a number) is refused
where it is, FILE:LINE:COL, exit 2, for every command that reads config.yaml,
and doctor reports it as an error. A folder that does not exist is skipped
when capabilities are looked up, with a note; doctor warns about it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, capability, check_schema, write

ONE_STEP = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"


def test_a_source_that_is_not_a_string_is_refused_where_it_is(
    cli: Callable[..., Result], home: Path
) -> None:
    config = write(home / "config.yaml", 'capability_sources: ["/nonexistent", 5]\n')
    for args in (["capability", "list"], ["capability", "execute", "anything"]):
        result = cli(*args)
        assert result.code == 2, result.stdout + result.stderr
        assert (
            f"{config}:1:38: error: each entry of 'capability_sources' must be a string, "
            "not the number 5" in result.stderr
        )
        assert 'hint: quote it ("5") if it is meant as text' in result.stderr
        assert "internal error" not in result.stderr
        assert result.stderr.count("must be a string, not the number 5") == 1  # said once

    as_json = cli("-o", "json", "capability", "list")
    assert as_json.code == 2
    check_schema(as_json.json(), "error")
    assert as_json.json()["error"]["code"] == "invalid-config"
    [problem] = as_json.json()["error"]["problems"]
    assert (problem["line"], problem["column"]) == (1, 38)

    doctor = cli("doctor")
    assert doctor.code == 5
    assert f"ERROR   config: {config}:1:38: each entry of 'capability_sources'" in doctor.stdout


def test_other_values_that_are_not_text_are_refused_each_at_its_place(
    cli: Callable[..., Result], home: Path
) -> None:
    write(
        home / "config.yaml",
        "capability_sources:\n  - true\n  - ~\n  - 1.5e3\n  - ''\n  - [a]\n  - \"5\"\n",
    )
    result = cli("-o", "json", "capability", "list")
    assert result.code == 2
    found = [(p["line"], p["message"]) for p in result.json()["error"]["problems"]]
    assert found == [
        (2, "each entry of 'capability_sources' must be a string, not the boolean true"),
        (3, "each entry of 'capability_sources' must be a string, not null (~)"),
        (4, "each entry of 'capability_sources' must be a string, not the number 1.5e3"),
        (5, "each entry of 'capability_sources' must be a folder path, not ''"),
        (6, "each entry of 'capability_sources' must be a single value, not a list"),
    ]
    empty = result.json()["error"]["problems"][3]
    assert empty["hint"].startswith("remove the empty entry, or name a folder")


def test_a_quoted_number_is_a_folder_name(
    cli: Callable[..., Result], home: Path, work: Path
) -> None:
    write(home / "config.yaml", 'capability_sources: ["5"]\n')
    write(home / "5" / "listed.md", capability(ONE_STEP))
    result = cli("capability", "list")
    assert result.code == 0, result.stderr
    assert "listed" in result.stdout


def test_a_missing_folder_is_skipped_with_a_note_and_doctor_warns(
    cli: Callable[..., Result], home: Path, work: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nonexistent"
    present = tmp_path / "caps"
    write(present / "found.md", capability(ONE_STEP))
    write(home / "config.yaml", f'capability_sources: ["{missing}", "{present}"]\n')

    listed = cli("capability", "list")
    assert listed.code == 0, listed.stderr
    assert "found" in listed.stdout
    assert (
        f"note: capability source {missing} (config.yaml) does not exist; skipped" in listed.stderr
    )

    doc = cli("-o", "json", "capability", "list")
    check_schema(doc.json(), "capability-list")
    assert doc.json()["missing_sources"] == [str(missing)]

    # a name is still found in the next source; one that is nowhere says which is missing
    assert cli("capability", "plan", "found").code == 0
    nowhere = cli("capability", "plan", "nowhere")
    assert nowhere.code == 2
    assert f"{missing} (does not exist)" in nowhere.stderr

    doctor = cli("doctor")
    assert f"WARNING capability sources: {missing} (config.yaml) does not exist" in doctor.stdout
    assert "fix: create it, or remove it from capability_sources in" in doctor.stdout
    assert "ERROR   config" not in doctor.stdout
