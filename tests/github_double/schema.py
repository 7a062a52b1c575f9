"""Locate and build GitHub's published GraphQL schema for the double.

The schema ships in the npm package ``@octokit/graphql-schema`` which is a
test-only dependency declared in ``tests/npm/package.json``.  Install it with::

    npm install --prefix tests/npm --no-audit --no-fund

The built schema is cached per process: building the ~1.2 MB SDL takes a
couple of seconds, so every :class:`GitHubDouble` in a test session shares it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from graphql import GraphQLSchema, build_schema

__all__ = [
    "INSTALL_COMMAND",
    "SCHEMA_ENV_VAR",
    "SchemaNotInstalledError",
    "load_schema",
    "npm_dir",
    "openapi_path",
    "schema_path",
]

#: Command that installs the npm test dependencies (run from the repository root).
INSTALL_COMMAND = "npm install --prefix tests/npm --no-audit --no-fund"

#: Environment variable that may point at an alternative ``schema.graphql``.
SCHEMA_ENV_VAR = "GITHUB_DOUBLE_GRAPHQL_SCHEMA"

_TESTS_DIR = Path(__file__).resolve().parent.parent
_SCHEMA_RELATIVE = Path("node_modules") / "@octokit" / "graphql-schema" / "schema.graphql"

_lock = threading.Lock()
_cached: GraphQLSchema | None = None


class SchemaNotInstalledError(FileNotFoundError):
    """Raised when ``@octokit/graphql-schema`` has not been installed."""


def npm_dir() -> Path:
    """Return ``tests/npm`` (the prefix the npm test dependencies live under)."""
    return _TESTS_DIR / "npm"


def schema_path() -> Path:
    """Return the path of GitHub's ``schema.graphql``.

    Honours :data:`SCHEMA_ENV_VAR` when set.  Raises
    :class:`SchemaNotInstalledError` naming the install command when the file
    does not exist.
    """
    override = os.environ.get(SCHEMA_ENV_VAR)
    path = Path(override) if override else npm_dir() / _SCHEMA_RELATIVE
    if not path.is_file():
        raise SchemaNotInstalledError(
            f"GitHub GraphQL schema not found at {path}. "
            f"Install the npm test dependencies from the repository root with: {INSTALL_COMMAND}"
        )
    return path


def openapi_path(description: str = "api.github.com") -> Path:
    """Path of an OpenAPI description from ``@octokit/openapi`` (``api.github.com``, ``ghes-3.19``...)."""
    path = npm_dir() / "node_modules" / "@octokit" / "openapi" / "generated" / f"{description}.json"
    if not path.is_file():
        raise SchemaNotInstalledError(
            f"GitHub OpenAPI description not found at {path}. "
            f"Install the npm test dependencies from the repository root with: {INSTALL_COMMAND}"
        )
    return path


def load_schema() -> GraphQLSchema:
    """Build (once per process) and return GitHub's GraphQL schema."""
    global _cached
    with _lock:
        if _cached is None:
            sdl = schema_path().read_text(encoding="utf-8")
            # assume_valid skips graphql-core's type-system validation: GitHub's
            # production schema trips newer rules (e.g. deprecated fields that
            # implement non-deprecated interface fields), which would otherwise
            # make every query fail before document validation even starts.
            _cached = build_schema(sdl, assume_valid_sdl=True, assume_valid=True)
        return _cached
