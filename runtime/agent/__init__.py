"""AI assistants: the shell-hook guard (``runtime agent hook``) and the project files that
wire an assistant to runtime (``runtime agent init``).

The guard runs on every shell command an assistant issues, so :mod:`runtime.agent.hook`
and what it imports stay on the standard library, tree-sitter and the few lean modules
of runtime they need; this package's ``__init__`` imports nothing.
"""
