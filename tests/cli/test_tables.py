"""Tables fit the terminal: wrapped to ``COLUMNS`` (or the terminal's width), never cut
without an ellipsis, every column under its own header; ``--output json`` keeps the full
values. Output that is not a terminal (no ``COLUMNS``) is not wrapped at all.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import capability, write

NAME = "an_input_whose_name_is_long_" + "x" * 52  # 80 characters
REASON = f"required input {NAME} is not supplied"
CAP = capability(
    f"version: v1\ninputs:\n  {NAME}:\n    required: true\nworkflow:\n"
    f"  - provider: files\n    args: [write, out.txt, '${{{NAME}}}']\n",
    frontmatter="name: long\n",
)


def test_preflight_shows_whole_values_when_not_on_a_terminal(cli, work: Path) -> None:
    write(work / "long.md", CAP)
    result = cli("capability", "preflight", "long.md")
    assert result.code == 2, result.stdout + result.stderr  # a missing input: exit 2
    row = next(line for line in result.stdout.splitlines() if f"input:{NAME}" in line)
    assert row.endswith(REASON), row
    doc = cli("-o", "json", "capability", "preflight", "long.md")
    check = next(c for c in doc.json()["checks"] if c["id"] == f"input:{NAME}")
    assert check["reason"] == REASON


def test_preflight_wraps_to_columns_without_cutting(cli, work: Path) -> None:
    write(work / "long.md", CAP)
    narrow = cli("capability", "preflight", "long.md", extra_env={"COLUMNS": "80"})
    assert narrow.code == 2
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, narrow.stdout
    # too narrow for a REASON column: each reason goes below its row, whole
    assert "".join(REASON.split()) in "".join(narrow.stdout.split()), narrow.stdout
    wide = cli("capability", "preflight", "long.md", extra_env={"COLUMNS": "300"})
    row = next(line for line in wide.stdout.splitlines() if f"input:{NAME}" in line)
    assert row.endswith(REASON) and len(row) <= 300, row


def test_every_preflight_column_has_its_header_over_its_values(cli, work: Path) -> None:
    write(work / "long.md", CAP)
    lines = cli("capability", "preflight", "long.md").stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "REQUIREMENT" in line)
    titles = [(m.start(), m.group()) for m in re.finditer(r"\S+", lines[header])]
    assert [t for _, t in titles] == [
        "REQUIREMENT",
        "TYPE",
        "ORIGIN",
        "NEED",
        "RESOLVED",
        "READY",
        "REASON",
    ]
    row = lines[header + 1]
    for start, title in titles[:-1]:
        assert row[start] != " " and (start == 0 or row[start - 1] == " "), (title, row)


def test_provider_help_fits_the_columns(cli) -> None:
    for columns in (80, 120):
        result = cli("github", "--help", extra_env={"COLUMNS": str(columns)})
        assert result.code == 0
        lines = result.stdout.splitlines()
        # but the examples: commands stay whole, to be copied
        too_wide = [x for x in lines if len(x) > columns and not x.startswith("  runtime ")]
        assert too_wide == [], columns
        assert "Create or update a file's content" in " ".join(result.stdout.split())
    wide = cli("github", "--help", extra_env={"COLUMNS": "250"}).stdout
    # room enough: one line per operation, its summary on it
    assert any(
        line.startswith("  user get ") and line.endswith("The authenticated user")
        for line in wide.splitlines()
    )


def _cells(line: str) -> int:
    """Terminal cells: East Asian Wide and Fullwidth take two, combining marks none."""
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in line
    )


def test_wide_characters_count_as_two_cells(cli, work: Path) -> None:
    title = "漢字" * 15 + " 😀😀😀 e\u0301"
    write(work / "capabilities" / "wide.md", capability("version: v1\nworkflow: []\n", title=title))
    for columns in (40, 60):
        result = cli("capability", "list", extra_env={"COLUMNS": str(columns)})
        assert result.code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert max(_cells(line) for line in lines) <= columns, result.stdout
        assert "".join(title.split()) in "".join(result.stdout.split()), result.stdout
    lines = cli("capability", "list", extra_env={"COLUMNS": "120"}).stdout.splitlines()
    source = lines[0].index("SOURCE")  # the header is ASCII: its index is its cell
    row = next(line for line in lines if line.startswith("wide "))
    assert _cells(row[: row.index("/")]) == source, lines  # the path under its header


def test_prose_lines_wrap_by_cells_too(cli, work: Path) -> None:
    # preflight's lines after the table (cost hints, fixes) wrap as the table does: a wide
    # character takes two cells of the terminal
    hints = " ".join(["漢字の説明"] * 12)
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n",
            f"metadata:\n  mda:\n    requires:\n      cost-hints: {{note: '{hints}'}}\n",
        ),
    )
    result = cli("capability", "preflight", "cap.md", extra_env={"COLUMNS": "70"})
    assert result.code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert max(_cells(line) for line in lines) <= 70, result.stdout
    assert "".join(hints.split()) in "".join(result.stdout.split()), result.stdout
