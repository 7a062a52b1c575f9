"""A binary's environment: the allow-list is looked up once per run, credentials never carried over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.execute.binaries import child_environment
from runtime.execute.services import RunServices
from runtime.plan.policy import Policy
from runtime.plan.workspace import Workspace
from runtime.redact import Redactor


class _Auth:
    def default_host(self, credential: str) -> str:
        return "github.com"

    def program_environment(self, credential: str, host: str, config_dir: str) -> dict[str, str]:
        return {"GH_TOKEN": "ghp_" + "t" * 36, "GH_CONFIG_DIR": config_dir}


def test_a_mapped_credential_does_not_reach_the_next_binary_of_the_run(tmp_path: Path) -> None:
    environ = {"PATH": "/usr/bin", "HOME": "/home/u", "SECRET_THING": "s3cret"}
    ws = Workspace(environ=environ, cwd=tmp_path)
    ws.__dict__["policy"] = Policy(binary_environment={"PATH": "default", "HOME": "default"})
    services = RunServices(ws, Redactor())
    services.__dict__["auth"] = _Auth()  # the cached Auth Engine, replaced
    mapped: dict[str, Any] = child_environment(services, "github", None, str(tmp_path))
    assert mapped["GH_TOKEN"].startswith("ghp_") and mapped["PATH"] == "/usr/bin"
    plain = child_environment(services, None, None)
    assert plain == {"PATH": "/usr/bin", "HOME": "/home/u"}
    environ["PATH"] = "/changed"  # looked up once per run: the run's first answer stands
    assert child_environment(services, None, None)["PATH"] == "/usr/bin"
