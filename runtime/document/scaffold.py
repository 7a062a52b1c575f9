"""`runtime capability new`: a commented starting capability that validates as written."""

from __future__ import annotations

FILES_BODY = """inputs:
  path:
    description: File to write the greeting to (its folder must exist)
    required: true
  greeting:
    description: Text to write
    required: true

workflow:
  # Each step names a provider and the words you would type after
  # `runtime files`; `runtime files --help` lists every operation.
  - provider: files
    args: [write, "${path}", "${greeting}"]

  - provider: files
    args: [read, "${path}"]
"""

GITHUB_BODY = """inputs:
  repository:
    description: Repository to inspect, as <owner>/<repo>
    required: true

workflow:
  # Each step names a provider and the words you would type after
  # `runtime github`; `runtime github --help` lists every operation
  # and the transport the provider uses for it.
  - provider: github
    args: [repo, summary, "${repository}"]

  - provider: github
    args: [api, GET, "/repos/${repository}/community/profile"]
"""

TEMPLATE = """---
name: {name}
description: One sentence on what this capability does and for whom.
metadata:
  mda:
    requires:
      network: {network}
---

# {title}

Say what this capability is for, who runs it, what it reads and what it
changes. The prose is for the people who review it; it has no effect on
execution. Mention anything a reader should check before running it.

## Lineage

<!-- When this workflow re-derives steps of another capability, name it here
as a backticked name followed by the steps it re-derives, for example:
- `files/scaffold-docs` — steps 2–3 -->
Nothing re-derived yet.

```runtime
# The job: a version, declared inputs, and the steps, run in order.
# `runtime capability validate` checks this block; `runtime capability plan`
# shows what it would do; `runtime capability execute` runs it.
version: v1

{body}```
"""


def render(name: str, provider: str) -> str:
    body = GITHUB_BODY if provider == "github" else FILES_BODY
    network = "public" if provider == "github" else "none"
    title = name.replace("-", " ").capitalize()
    return TEMPLATE.format(name=name, title=title, network=network, body=body)
