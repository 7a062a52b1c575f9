"""Standard streams in an encoding other than UTF-8 (a Latin-1 locale, or
``PYTHONIOENCODING=ascii`` as some CI images set): what the encoding cannot hold shows as
its ``\\uXXXX`` escape in text, JSON stays valid UTF-8 JSON, raw output stays the bytes;
never an internal error, least of all after a step has run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import RUNTIME_BIN

CONTENT = "héllo ✓ 漢字 😀"


def run(env: dict[str, str], work: Path, encoding: str, *args: str) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(
        [str(RUNTIME_BIN), *args],
        cwd=work,
        env={**env, "PYTHONIOENCODING": encoding},
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_text_json_and_raw_in_an_encoding_other_than_utf8(
    env: dict[str, str], work: Path, encoding: str
) -> None:
    code, out, _ = run(env, work, encoding, "files", "write", "ü.txt", CONTENT)
    assert code == 0
    assert (work / "ü.txt").read_text(encoding="utf-8") == CONTENT + "\n"

    code, out, _ = run(env, work, encoding, "files", "read", "ü.txt")
    assert code == 0
    shown = out.decode(encoding)
    assert "\\u6f22\\u5b57 \\ud83d\\ude00\n" in shown
    assert ("héllo" if encoding == "latin-1" else "h\\u00e9llo") in shown

    code, out, _ = run(env, work, encoding, "-o", "json", "files", "read", "ü.txt")
    assert code == 0
    assert out.isascii()
    assert json.loads(out.decode("utf-8"))["steps"][0]["output"] == CONTENT + "\n"

    code, out, _ = run(env, work, encoding, "-o", "raw", "files", "read", "ü.txt")
    assert code == 0
    assert out == (CONTENT + "\n").encode("utf-8")

    code, _, err = run(
        env,
        work,
        encoding,
        "--log-level",
        "debug",
        "--log-format",
        "json",
        "files",
        "read",
        "ü.txt",
    )
    assert code == 0
    events = [json.loads(line.decode("utf-8")) for line in err.splitlines() if line[:1] == b"{"]
    assert any(e.get("event") == "step.finished" for e in events)
