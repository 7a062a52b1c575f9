"""runtime: a deterministic workflow execution engine.

The package is the engine. Its stations (load, validate, resolve, preflight,
plan, execute, record) live in their own modules; only :mod:`runtime.cli`
prints or chooses exit codes.
"""

__version__ = "0.1.0"
