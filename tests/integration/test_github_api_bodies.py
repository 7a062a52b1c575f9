"""`runtime github api` with an answer that is not JSON: an archive, a text, a body of
another charset. Through the installed `runtime` (this checkout on PYTHONPATH) against
the loopback double, whose tarball and zipball routes redirect to the archive as
GitHub's do; stdout is compared as bytes.

- `--output raw` writes the body exactly as received (a secret in it redacted, which
  stderr then says);
- `--output json` keeps it whole: `{"content_type", "bytes", "text"}` for a text,
  `{"content_type", "bytes", "base64"}` for the rest;
- text mode prints a text as it is and says what a binary body is instead of
  printing it.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RUNTIME_BIN, check_schema
from tests.github_double import GitHubDouble
from tests.github_double.rest import ZEN, archive

TOKEN = "ghp_" + "B0dy" * 9
# a file that is not UTF-8, as an archive may hold
LOGO = bytes(range(256))


@dataclass
class Streams:
    code: int
    stdout: bytes
    stderr: bytes

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app")
        double.add_file("acme", "app", "README.md", "# App\n")
        double.add_file("acme", "app", "docs/logo.bin", LOGO)
        yield double


@pytest.fixture
def run(gh: GitHubDouble, env: dict[str, str], work: Path) -> Any:
    def call(*args: str) -> Streams:
        gh.reset_counters()
        proc = subprocess.run(
            [str(RUNTIME_BIN), *args],
            cwd=work,
            env={**env, **gh.runtime_env()},  # env: this checkout's code (PYTHONPATH)
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert TOKEN.encode() not in proc.stdout + proc.stderr
        return Streams(proc.returncode, proc.stdout, proc.stderr)

    return call


ARCHIVES = [
    ("tarball", "application/x-gzip"),
    ("zipball", "application/zip"),
]


def _files(kind: str, data: bytes) -> dict[str, bytes]:
    """The files in an archive, by their path under its top folder."""
    if kind == "zipball":
        with zipfile.ZipFile(io.BytesIO(data)) as zipped:
            return {n.split("/", 1)[1]: zipped.read(n) for n in zipped.namelist()}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {
            m.name.split("/", 1)[1]: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
        }


@pytest.mark.parametrize(("kind", "content_type"), ARCHIVES)
def test_raw_output_writes_an_archive_byte_for_byte(
    gh: GitHubDouble, run: Any, kind: str, content_type: str
) -> None:
    result = run("--output", "raw", "github", "api", "GET", f"/repos/acme/app/{kind}/main")
    assert result.code == 0, result.stderr
    assert result.stderr == b""
    assert result.stdout == archive(gh.repo("acme", "app"), "main", kind)  # type: ignore[arg-type]
    assert _files(kind, result.stdout) == {"README.md": b"# App\n", "docs/logo.bin": LOGO}
    # the archive is where GitHub's 302 points, and the redirect was followed
    assert [r.path.split("/")[1] for r in gh.requests] == ["repos", "_codeload"]


@pytest.mark.parametrize(("kind", "content_type"), ARCHIVES)
def test_json_output_keeps_an_archive_whole_in_base64(
    gh: GitHubDouble, run: Any, kind: str, content_type: str
) -> None:
    result = run("--output", "json", "github", "api", "GET", f"/repos/acme/app/{kind}/main")
    assert result.code == 0, result.stderr
    doc = result.json()
    check_schema(doc, "execute")
    (step,) = doc["steps"]
    expected = archive(gh.repo("acme", "app"), "main", kind)  # type: ignore[arg-type]
    assert step["data"] == {
        "content_type": content_type,
        "bytes": len(expected),
        "base64": base64.b64encode(expected).decode("ascii"),
    }
    assert step["output"].startswith("(not shown: a binary body")


@pytest.mark.parametrize(("kind", "content_type"), ARCHIVES)
def test_text_output_says_what_a_binary_body_is_instead_of_printing_it(
    gh: GitHubDouble, run: Any, kind: str, content_type: str
) -> None:
    result = run("github", "api", "GET", f"/repos/acme/app/{kind}/main")
    assert result.code == 0, result.stderr
    size = len(archive(gh.repo("acme", "app"), "main", kind))  # type: ignore[arg-type]
    said = (
        f"(not shown: a binary body, {size} bytes of {content_type}; --output raw writes "
        "it as received, e.g. to a file with > FILE)\n"
    )
    assert result.stdout == said.encode()
    assert b"ok: 1/1 steps succeeded" in result.stderr


def test_a_text_body_is_text_in_every_output(run: Any) -> None:
    raw = run("--output", "raw", "github", "api", "GET", "/zen")
    assert (raw.code, raw.stdout, raw.stderr) == (0, ZEN.encode(), b"")
    text = run("github", "api", "GET", "/zen")
    assert (text.code, text.stdout) == (0, ZEN.encode() + b"\n")
    doc = run("--output", "json", "github", "api", "GET", "/zen").json()
    check_schema(doc, "execute")
    assert doc["steps"][0]["data"] == {
        "content_type": "text/plain;charset=utf-8",
        "bytes": len(ZEN),
        "text": ZEN,
    }
    assert doc["steps"][0]["output"] == ZEN


def test_a_body_in_another_charset_is_read_as_that_charset_and_written_as_received(
    gh: GitHubDouble, run: Any
) -> None:
    latin1 = {"Content-Type": "text/plain; charset=iso-8859-1"}
    gh.inject("^/zen$", 200, count=None, body="Café crème".encode("latin-1"), headers=latin1)
    raw = run("--output", "raw", "github", "api", "GET", "/zen")
    assert (raw.code, raw.stdout) == (0, "Café crème".encode("latin-1"))
    doc = run("--output", "json", "github", "api", "GET", "/zen").json()
    assert doc["steps"][0]["data"]["text"] == "Café crème"
    assert run("github", "api", "GET", "/zen").stdout == "Café crème\n".encode()


def test_a_non_json_body_named_text_is_not_read_as_json(gh: GitHubDouble, run: Any) -> None:
    """A Content-Type says what a body is: "42" sent as text/plain stays the text 42."""
    plain = {"Content-Type": "text/plain"}
    gh.inject("^/zen$", 200, count=None, body=b"42", headers=plain)
    doc = run("--output", "json", "github", "api", "GET", "/zen").json()
    assert doc["steps"][0]["data"] == {"content_type": "text/plain", "bytes": 2, "text": "42"}


def test_a_secret_in_a_binary_body_is_redacted_and_said_to_be(gh: GitHubDouble, run: Any) -> None:
    body = b"\x1f\x8b\xff\x00" + TOKEN.encode() + b"\x00\xfe\xfd"
    octets = {"Content-Type": "application/octet-stream"}
    gh.inject("^/zen$", 200, count=None, body=body, headers=octets)
    raw = run("--output", "raw", "github", "api", "GET", "/zen")
    assert raw.code == 0
    assert raw.stdout == b"\x1f\x8b\xff\x00[REDACTED]\x00\xfe\xfd"
    assert b"warning: step 1's output holds a secret" in raw.stderr
    assert b"not the ones received" in raw.stderr
    # in the JSON output's base64, the characters that encode the token's bytes are gone
    encoded = run("--output", "json", "github", "api", "GET", "/zen").stdout
    assert base64.b64encode(body)[8:48] not in encoded


def test_the_body_size_limit_holds_for_any_body(gh: GitHubDouble, run: Any) -> None:
    octets = {"Content-Type": "application/octet-stream"}
    gh.inject("^/zen$", 200, count=None, body=b"\xff" * (33 * 1024 * 1024), headers=octets)
    result = run("--output", "raw", "github", "api", "GET", "/zen")
    assert result.code == 1
    assert result.stdout == b""
    assert b"over the 32 MiB limit for a response body" in result.stderr


def test_the_hint_for_gh_s_jq_flag_is_a_command_that_filters(
    gh: GitHubDouble, env: dict[str, str], work: Path
) -> None:
    """`--jq` is gh's; api prints the JSON whole. Its hint is followed as written (issue 29):
    the command it gives, run in a shell, prints the filtered value."""
    import re
    import shutil

    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (the hint pipes to it)")
    base = {**env, **gh.runtime_env(), "PATH": f"{RUNTIME_BIN.parent}:{env['PATH']}"}

    def shell(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line],
            cwd=work,
            env=base,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )

    for flags in ("--jq .name", "--jq=.name", "-q .name"):
        refused = shell(f"runtime github api GET /repos/acme/app {flags}")
        assert refused.returncode == 2, refused.stderr
        assert "write jq=" not in refused.stderr
        [hinted] = re.findall(r"`(runtime [^`]*)`", refused.stderr)
        assert hinted == "runtime -o raw github api GET /repos/acme/app | jq .name"
        followed = shell(hinted)
        assert followed.returncode == 0, followed.stderr
        assert followed.stdout == '"app"\n'
