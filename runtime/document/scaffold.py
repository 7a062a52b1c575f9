"""`runtime capability new`: a commented starting capability that validates as written."""

from __future__ import annotations

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


def render(name: str, body: str, network: str) -> str:
    """The capability file: ``body`` (inputs and workflow, as the provider declares its
    scaffold) under a commented head declaring ``network``."""
    title = name.replace("-", " ").capitalize()
    return TEMPLATE.format(name=name, title=title, network=network, body=body)
