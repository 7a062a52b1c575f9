"""``files terraform set-attribute`` and ``files terraform update-provider`` through the real
CLI: each changes the bytes of the expressions it sets (or adds one line) and nothing
else of files with heredocs, comments, nested blocks and CRLF line endings; the value of
set-attribute is an HCL expression; all files or none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import capability, write

Cli = Callable[..., Any]

MAIN = (
    "# the repository and its branch protection\r\n"
    'module "repository" {\r\n'
    '  source = "./modules/repo"   # local module\r\n'
    '  branch = "dev"\r\n'
    "  description = <<-EOT\r\n"
    "    Holds ${var.team}'s service.\r\n"
    "    EOT\r\n"
    "  protection {\r\n"
    "    required_reviews = 2 /* two */\r\n"
    "  }\r\n"
    "}\r\n"
    "\r\n"
    'resource "google_storage_bucket" "logs" {\r\n'
    '  name     = "acme-logs"\r\n'
    '  location = "EU"\r\n'
    "}\r\n"
)

VERSIONS = """terraform {
  required_version = ">= 1.3"   # the CI's

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 4.0"
    }
    random = {
      source = "hashicorp/random"
    }
  }
}
"""


def tf(cli: Cli, *args: str, cwd: Path) -> Any:
    return cli("files", "terraform", *args, cwd=cwd)


def test_set_attribute_changes_only_the_expression(cli: Cli, work: Path) -> None:
    main = work / "infra" / "main.tf"
    main.parent.mkdir()
    main.write_bytes(MAIN.encode())
    versions = write(work / "infra" / "versions.tf", VERSIONS)
    before = main.read_bytes()
    result = tf(
        cli,
        "set-attribute",
        "--block",
        "module",
        "--label",
        "repository",
        "--attribute",
        "branch",
        "--value",
        '"main"',
        "--dir",
        "infra",
        "--include",
        "*.tf",
        "--expected-per-file",
        "1",
        cwd=work,
    )
    assert result.code == 0, result.stderr
    assert "edited 1 of 2 files matching '*.tf' under infra (1 match)" in result.stdout
    assert main.read_bytes() == before.replace(b'branch = "dev"', b'branch = "main"')
    assert versions.read_text() == VERSIONS


def test_set_attribute_adds_a_line_where_the_block_has_none(cli: Cli, work: Path) -> None:
    main = write(work / "main.tf", "")
    main.write_bytes(MAIN.encode())
    result = tf(
        cli,
        "set-attribute",
        "block=resource",
        "label=google_storage_bucket.logs",
        "attribute=force_destroy",
        "value=false",
        "dir=.",
        "filename=main.tf",
        cwd=work,
    )
    assert result.code == 0, result.stderr
    assert main.read_bytes() == MAIN.encode().replace(
        b'  location = "EU"\r\n', b'  location = "EU"\r\n  force_destroy = false\r\n'
    )


def test_update_provider_sets_both_constraints(cli: Cli, work: Path) -> None:
    versions = write(work / "versions.tf", VERSIONS)
    main = write(work / "main.tf", "")
    main.write_bytes(MAIN.encode())
    result = tf(
        cli,
        "update-provider",
        "--source",
        "hashicorp/google",
        "--version",
        "~> 5.0",
        "--terraform-version",
        ">= 1.5",
        "--dir",
        ".",
        "--include",
        "*.tf",
        "--expected-per-file",
        "2",
        cwd=work,
    )
    assert result.code == 0, result.stderr
    assert versions.read_text() == VERSIONS.replace('">= 1.3"', '">= 1.5"').replace(
        '"~> 4.0"', '"~> 5.0"'
    )
    assert main.read_bytes() == MAIN.encode()
    # a provider without a version gets one, after its source
    result = tf(cli, "update-provider", "source=registry.terraform.io/HashiCorp/random",
                "version=3.6.0", "dir=.", "filename=versions.tf", cwd=work)  # fmt: skip
    assert result.code == 0, result.stderr
    assert '      source = "hashicorp/random"\n      version = "3.6.0"\n' in versions.read_text()


def test_a_count_not_met_writes_no_file(cli: Cli, work: Path) -> None:
    versions = write(work / "a" / "versions.tf", VERSIONS)
    other = write(work / "b" / "versions.tf", 'terraform {\n  required_version = ">= 1.3"\n}\n')
    result = tf(
        cli, "update-provider", "--source", "hashicorp/google", "--version", "~> 5.0",
        "--terraform-version", ">= 1.5", "--dir", ".", "--include", "*.tf",
        "--expected-per-file", "2", cwd=work,
    )  # fmt: skip
    assert result.code == 1
    assert "b/versions.tf has 1 match: 2 expected per file" in result.stderr
    assert versions.read_text() == VERSIONS
    assert other.read_text() == 'terraform {\n  required_version = ">= 1.3"\n}\n'


def test_a_value_that_is_no_expression_is_refused_before_anything_runs(
    cli: Cli, work: Path
) -> None:
    write(work / "main.tf", MAIN)
    result = tf(cli, "set-attribute", "--block", "module", "--attribute", "branch",
                "--value", "main dev", "--dir", ".", "--include", "*.tf", cwd=work)  # fmt: skip
    assert result.code == 2
    assert "--value 'main dev' is not an HCL expression" in result.stderr
    cap = write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n"
            "    args: [terraform, set-attribute, --block, module, --attribute, branch,\n"
            "           --value, '\"main', --dir, ., --include, '*.tf']\n"
        ),
    )
    result = cli("capability", "validate", str(cap), cwd=work)
    assert result.code == 2
    assert "cap.md:10:21: error: step 1: --value '\"main' is not an HCL expression" in result.stdout


def test_a_file_the_grammar_cannot_read_is_named(cli: Cli, work: Path) -> None:
    good = write(work / "a.tf", 'module "repository" {\n  branch = "dev"\n}\n')
    write(work / "b.tf", 'module "x" {\n  branch = \n}\n')
    result = tf(cli, "set-attribute", "block=module", "attribute=branch", 'value="main"',
                "dir=.", "include=*.tf", cwd=work)  # fmt: skip
    assert result.code == 1
    assert "b.tf:2:" in result.stderr and "not valid HCL" in result.stderr
    assert good.read_text() == 'module "repository" {\n  branch = "dev"\n}\n'
