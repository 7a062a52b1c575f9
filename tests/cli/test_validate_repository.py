"""``capability validate`` of a whole capability repository in one call, in the shape of
Engineering Runtime's (folders by provider, a README in each, tooling folders), with a
summary by folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import capability, check_schema, require_tool, write

GOOD = capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n")
BAD = capability("version: v1\nworkflow:\n  - provider: files\n    args: [list]\n")


def _repository(root: Path) -> Path:
    require_tool("git", "a capability repository is a git checkout")
    write(root / "README.md", "# Our capabilities\n\nSee the folders.\n")
    write(root / "CLAUDE.md", "# Authoring rules\n\n```yaml\nworkflow: []\n```\n")
    write(root / ".claude" / "hooks" / "README.md", GOOD)  # hidden: never looked in
    write(root / ".github" / "workflows" / "ci.yaml", "on: push\n")
    write(root / "capabilities" / "files" / "README.md", "# files\n")
    write(root / "capabilities" / "files" / "notes.md", GOOD)
    write(root / "capabilities" / "files" / "journal.md", GOOD)
    write(root / "capabilities" / "github" / "README.md", "# github\n")
    write(root / "capabilities" / "github" / "user.md", GOOD)
    write(root / "capabilities" / "github" / "broken.md", BAD)
    # a README that shows a runtime block inside a longer fence is no capability
    write(
        root / "capabilities" / "gcp" / "README.md",
        "# gcp\n\n````markdown\n```runtime\nversion: v1\n```\n````\n",
    )
    write(root / "capabilities" / "gcp" / "inventory.md", GOOD)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_a_whole_repository_validates_in_one_call_with_a_summary_by_folder(cli, work: Path) -> None:
    _repository(work / "store")
    result = cli("capability", "validate", "store")
    assert result.code == 2, result.stderr
    assert "store/capabilities/github/broken.md:" in result.stdout
    lines = result.stdout.splitlines()
    at = lines.index("by folder:")
    assert [line.split()[0] for line in lines[at + 1 : -1]] == [
        "store/capabilities/files/",
        "store/capabilities/gcp/",
        "store/capabilities/github/",
    ]
    assert lines[at + 1].split(None, 1)[1] == "2 checked: 2 valid, 0 invalid"
    assert lines[at + 3].split(None, 1)[1] == (
        "2 checked: 1 valid, 1 invalid (1 error, 0 warnings)"
    )
    assert lines[-1] == (
        "5 checked: 4 valid, 1 invalid (1 error, 0 warnings); "
        "5 Markdown files without a runtime block skipped"
    )


def test_the_summary_by_folder_in_json(cli, work: Path) -> None:
    _repository(work / "store")
    doc = cli("--output", "json", "capability", "validate", "store").json()
    check_schema(doc, "validate")
    folders = {f["folder"]: f for f in doc["folders"]}
    assert list(folders) == [
        "store",
        "store/capabilities/files",
        "store/capabilities/gcp",
        "store/capabilities/github",
    ]
    assert folders["store"] == {
        "folder": "store",
        "checked": 0,
        "valid": 0,
        "invalid": 0,
        "errors": 0,
        "warnings": 0,
        "skipped": 2,  # README.md and CLAUDE.md
    }
    assert folders["store/capabilities/github"]["invalid"] == 1
    assert folders["store/capabilities/github"]["skipped"] == 1
    assert sum(f["checked"] for f in doc["folders"]) == doc["summary"]["checked"] == 5


def test_one_folder_gets_no_summary_by_folder(cli, work: Path) -> None:
    write(work / "caps" / "a.md", GOOD)
    write(work / "caps" / "b.md", GOOD)
    result = cli("capability", "validate", "caps")
    assert result.code == 0, result.stdout
    assert "by folder:" not in result.stdout
    assert result.stdout.splitlines() == ["2 checked: 2 valid, 0 invalid (0 errors, 0 warnings)"]
