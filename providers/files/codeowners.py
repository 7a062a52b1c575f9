"""``codeowners add-owner``: an owner added to the rule that decides a pattern.

A CODEOWNERS file, as GitHub documents it, is a list of rules, one a line: a pattern
(gitignore's syntax, less ``!`` and ``[ ]``; a space in it escaped as ``\\ ``) and its
owners (``@user``, ``@org/team``, an email address); ``#`` starts a comment, and blank
lines are nothing. For each path the last rule whose pattern matches decides its
owners, alone: the owners of earlier matching rules do not add up.

So adding an owner to a pattern edits the rule that decides it, the last line with
that pattern, and no other (an earlier line with the same pattern decides nothing). A
line appended at the end would decide every path its pattern matches, taking them from
the more specific rules before it; where no rule has the pattern, the new rule goes
first of all the rules instead, where it decides only paths no other rule matches, so
nobody loses a path. The owner goes after the rule's last owner, before a comment that
ends the line; one already there (GitHub compares handles case-insensitively) is a
match that changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from providers.files.batch import ArgumentProblem

_OWNER = re.compile(
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:/[A-Za-z0-9_.-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+"
)
# a token of a rule: anything but whitespace, a backslash escaping the next character
_TOKEN = re.compile(r"(?:\\.|\S)+")


def argument_problems(operation: str, options: Mapping[str, str]) -> list[ArgumentProblem]:
    found = []
    owner = options.get("owner")
    if owner is not None and not _OWNER.fullmatch(owner):
        found.append(
            ArgumentProblem(
                "owner",
                f"--owner {owner!r} is not an owner CODEOWNERS takes",
                "@user, @org/team or an email address",
            )
        )
    pattern = options.get("pattern")
    if pattern is not None:
        problem = _pattern_problem(pattern)
        if problem is not None:
            found.append(ArgumentProblem("pattern", f"--pattern {pattern!r} {problem}", None))
    return found


def _pattern_problem(pattern: str) -> str | None:
    if not pattern:
        return "is empty"
    if _TOKEN.fullmatch(pattern) is None:
        return "holds a space: write it escaped (docs\\ site/), as the file holds it"
    if pattern.startswith("#"):
        return "starts a comment: write \\# for a name that starts with #"
    if pattern.startswith("!"):
        return "is a negation, which CODEOWNERS does not support"
    if "[" in pattern and "\\[" not in pattern:
        return "holds a [ ] range, which CODEOWNERS does not support"
    return None


class _AddOwner:
    def __init__(self, pattern: str, owner: str) -> None:
        self.pattern, self.owner = pattern, owner

    def edit(self, text: str) -> tuple[str, int]:
        lines = text.splitlines(keepends=True)
        rules = [i for i, line in enumerate(lines) if _is_rule(line)]
        deciding = [i for i in rules if _tokens(lines[i])[0][0] == self.pattern]
        if deciding:
            at = deciding[-1]
            changed = self._add(lines[at])
            if changed is None:
                return text, 1
            lines[at] = changed
            return "".join(lines), 1
        ending = "\r\n" if "\r\n" in text else "\n"
        rule = f"{self.pattern} {self.owner}{ending}"
        if not rules:  # after whatever is there: comments, blank lines
            if lines and not lines[-1].endswith(("\n", "\r")):
                lines[-1] += ending
            lines.append(rule)
        else:
            lines.insert(rules[0], rule)
        return "".join(lines), 1

    def _add(self, line: str) -> str | None:
        """The rule with the owner added after its last owner, or None if it has it."""
        tokens = _tokens(line)
        owners = [t for t, _ in tokens[1:]]
        if self.owner.casefold() in (o.casefold() for o in owners):
            return None
        end = tokens[-1][1]
        return line[:end] + " " + self.owner + line[end:]


def _is_rule(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _tokens(line: str) -> list[tuple[str, int]]:
    """The rule's pattern and owners, each with where it ends; a comment ends the rule."""
    found: list[tuple[str, int]] = []
    for match in _TOKEN.finditer(line):
        if match.group(0).startswith("#") and found:
            break
        found.append((match.group(0), match.end()))
    return found


def add_owner(options: Mapping[str, str]) -> _AddOwner:
    problems = argument_problems("codeowners add-owner", options)
    if problems:
        raise problems[0]
    return _AddOwner(options["pattern"], options["owner"])
