"""Terminal hygiene: what a user, a file or a program supplies never drives the terminal.

Escape sequences (ANSI colours, OSC titles, clearing the screen), C1 controls, DEL and
bidirectional overrides in input values, file names, step output, source excerpts and
error messages are shown escaped in text output (``\\x1b``, ``\\u202e``: Python's
notation, as ``plan`` shows inputs); a table keeps one row per line. JSON output keeps
the data exact (control characters as JSON escapes).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import capability, write

# an OSC window title, a colour, clear-screen, a C1 CSI, DEL and a right-to-left override
HOSTILE = "\x1b]0;owned\x07\x1b[31mred\x1b[2J\x9b1m\x7f\u202eevil"
ESCAPED = "\\x1b]0;owned\\x07\\x1b[31mred\\x1b[2J\\x9b1m\\x7f\\u202eevil"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

WRITE = capability(
    "version: v1\ninputs:\n  note:\n    required: true\nworkflow:\n"
    "  - provider: files\n    args: [write, '${note}.txt', '${note}']\n",
    frontmatter="name: write\n",
)


def clean(text: str) -> None:
    found = RAW.search(text)
    assert found is None, f"a raw control character reached the terminal: {text!r}"


def test_an_input_value_is_shown_escaped_and_kept_exact_in_json(cli, work: Path) -> None:
    write(work / "write.md", WRITE)
    for command in ("plan", "execute"):
        result = cli("capability", command, "write.md", "--input", f"note={HOSTILE}")
        assert result.code == 0, result.stdout + result.stderr
        clean(result.stdout + result.stderr)
        assert ESCAPED in result.stdout
    assert (work / f"{HOSTILE}.txt").read_text() == HOSTILE + "\n"
    doc = cli("-o", "json", "capability", "plan", "write.md", "--input", f"note={HOSTILE}")
    clean(doc.stdout)  # as JSON escapes, which a JSON reader takes back exactly
    assert doc.json()["inputs"]["note"] == HOSTILE


def test_file_names_keep_the_files_list_table_whole(cli, work: Path) -> None:
    (work / "d").mkdir()
    names = ["a\nb.txt", f"{HOSTILE}.txt", "plain.txt"]
    for name in names:
        (work / "d" / name).write_text("x")
    result = cli("files", "list", "d")
    assert result.code == 0, result.stderr
    clean(result.stdout)
    rows = [line for line in result.stdout.splitlines() if line.startswith("file ")]
    assert [row.split()[-1] for row in rows] == sorted(
        ["a\\nb.txt", f"{ESCAPED}.txt", "plain.txt"]
    ), result.stdout
    doc = cli("-o", "json", "files", "list", "d")
    entries = doc.json()["steps"][0]["data"]["entries"]
    assert sorted(e["name"] for e in entries) == sorted(names)


def test_step_output_is_shown_escaped_with_its_lines_and_tabs(cli, work: Path) -> None:
    content = f"line one\n\tindented {HOSTILE}\nlast\n"
    (work / "f.txt").write_text(content)
    result = cli("files", "read", "f.txt")
    assert result.code == 0, result.stderr
    clean(result.stdout)
    assert result.stdout == "line one\n\tindented " + ESCAPED + "\nlast\n"
    doc = cli("-o", "json", "files", "read", "f.txt")
    clean(doc.stdout)
    assert doc.json()["steps"][0]["data"]["content"] == content


def test_a_binarys_streamed_output_is_shown_escaped(cli, work: Path, tmp_path: Path) -> None:
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [printf]\n")
    env = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("command", "run", "printf", "%s\\n", HOSTILE, extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    clean(result.stdout + result.stderr)
    assert ESCAPED + "\n" in result.stdout
    doc = cli("-o", "json", "command", "run", "printf", "%s\\n", HOSTILE, extra_env=env)
    assert doc.json()["steps"][0]["data"]["stdout"] == HOSTILE + "\n"


def test_validate_shows_a_source_line_escaped_with_its_caret_in_place(cli, work: Path) -> None:
    write(work / "bad.md", capability("version: v1\nworkflow:\n  - provider: \x1b[2Jfiles\n"))
    result = cli("capability", "validate", "bad.md")
    assert result.code == 2
    clean(result.stdout + result.stderr)
    lines = result.stdout.splitlines()
    source = next(i for i, line in enumerate(lines) if "\\x1b[2Jfiles" in line)
    caret = lines[source + 1].index("^")
    assert lines[source][caret:].startswith("\\x1b"), "\n".join(lines[source : source + 2])


def test_a_file_name_in_problems_and_errors_is_escaped(cli, work: Path) -> None:
    name = f"{HOSTILE}.md"
    write(work / "caps" / name, capability("version: v1\nworkflow: []\n"))
    validated = cli("capability", "validate", "caps")
    assert validated.code == 2
    clean(validated.stdout + validated.stderr)
    assert f"caps/{ESCAPED}.md:" in validated.stdout
    missing = cli("capability", "execute", f"nope{HOSTILE}.md")
    assert missing.code == 2
    clean(missing.stderr)
    assert f"nope{ESCAPED}.md" in missing.stderr


def test_a_carriage_return_starts_a_line_streamed_or_not(cli, work: Path, tmp_path: Path) -> None:
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [printf]\n")
    env = {"RUNTIME_POLICY_FILE": str(policy)}
    streamed = cli("command", "run", "printf", "50%%\\r100%%\\r\\ndone\\n", extra_env=env)
    assert streamed.code == 0, streamed.stderr
    clean(streamed.stdout)
    assert "50%\n100%\ndone\n" in streamed.stdout
    (work / "cr.txt").write_bytes(b"50%\r100%\r\ndone\n")
    read = cli("files", "read", "cr.txt")
    assert read.code == 0 and read.stdout == "50%\n100%\ndone\n"
