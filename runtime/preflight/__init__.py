"""Preflight: requirements, declared and inferred, and their checks."""
