"""Execution: the engine loop, processes and the sandbox, binaries, hardened git, the audit log."""
