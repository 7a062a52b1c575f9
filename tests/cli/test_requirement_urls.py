"""A requirement's URL that urllib cannot read (a port out of range) is a finding, not a crash."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, capability, write

FRONT = """metadata:
  runtime:
    requirements:
      - id: srv
        type: mcpServer
        target:
          serverUrl: "http://user:pw@localhost:99999/mcp?key=secret"
        freshness:
          maxAgeSeconds: 60
"""


def test_a_server_url_with_a_bad_port_never_ends_in_an_internal_error(
    cli: Callable[..., Result], work: Path
) -> None:
    body = 'version: v1\nworkflow:\n  - binary: "true"\n    args: []\n'
    write(work / "cap.md", capability(body, frontmatter=FRONT))
    for args in (("capability", "validate", "cap.md"), ("capability", "preflight", "cap.md")):
        for head in ((), ("--output", "json")):
            result = cli(*head, *args)
            assert result.code in (0, 2, 5), (args, result.stdout, result.stderr)
            assert "internal error" not in result.stdout + result.stderr
            assert "secret" not in result.stdout and "pw@" not in result.stdout
