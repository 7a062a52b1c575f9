"""Concrete providers shipped with runtime, one package each.

They are registered through the ``runtime.providers`` entry-point group; the
engine never imports them directly.
"""
