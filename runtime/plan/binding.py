"""Binding: an operation's args, as authored, split by its declared form.

The engine binds every step here (validation, plan, a typed call) and hands the
provider the :class:`~runtime.provider.operations.BoundCall`; no provider binds.
Binding happens on the args *as authored* (before substitution), so an input value
can never change which argument is an option and which is a positional.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runtime.provider.operations import (
    Argument,
    Binding,
    BindingProblem,
    BoundCall,
    Operation,
    Option,
    Piece,
    Positional,
)
from runtime.text import not_utf8

OPTION_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*(?:\[[A-Za-z0-9_.\-]*\])*)=(.*)$", re.DOTALL)
_INT = re.compile(r"-?[0-9]+")


def value_problem(arg: Argument, value: str) -> str | None:
    """Why ``value`` is not what ``arg`` declares (its type, range or choices), or None."""
    if arg.type == "list":
        items = value.split(",")
        if not all(items):
            return "has an empty item (the names are separated by single commas)"
        unknown = [item for item in items if arg.choices and item not in arg.choices]
        if unknown:
            which = "which is" if len(unknown) == 1 else "which are"
            return f"names {', '.join(unknown)}, {which} not among {', '.join(arg.choices)}"
        return None
    if arg.choices and value not in arg.choices:
        return f"is not one of {', '.join(arg.choices)}"
    if arg.type == "bool" and value not in ("true", "false"):
        return "is not true or false"
    if arg.type == "int":
        if not _INT.fullmatch(value):
            return "is not an integer"
        low, high = arg.range or (None, None)
        number = int(value)
        if (low is not None and number < low) or (high is not None and number > high):
            if low is not None and high is not None:
                bounds = f"from {low} to {high}"
            else:
                bounds = f"at least {low}" if low is not None else f"at most {high}"
            return f"is out of range (it must be {bounds})"
    return None


def value_form(arg: Argument) -> str:
    """What ``arg`` takes, for help and the spec tables: ``open|closed|all``, ``1..100``,
    ``a|b[,...]`` (a list of names)."""
    if arg.type == "list":
        return ("|".join(arg.choices) if arg.choices else "NAME") + "[,...]"
    if arg.choices:
        return "|".join(arg.choices)
    if arg.type == "bool":
        return "true|false"
    if arg.type == "int":
        low, high = arg.range or (None, None)
        if low is None and high is None:
            return "INT"
        return f"{'' if low is None else low}..{'' if high is None else high}"
    if arg.type == "path":
        return f"a path under a {arg.access or 'read'} root"
    return ""


def match_operation(operations: Sequence[Operation], args: Sequence[str]) -> Operation | None:
    """The operation whose words are the longest prefix of ``args`` (the first declared of
    equals; an operation without words prefixes anything)."""
    best: Operation | None = None
    for op in operations:
        n = len(op.words)
        if tuple(args[:n]) == op.words and (best is None or n > len(best.words)):
            best = op
    return best


def similar_operations(operations: Sequence[Operation], args: Sequence[str]) -> list[str]:
    """The names of the operations ``args`` probably meant (``isue list``: ``issue list``),
    closest first: for a "did you mean" when no operation matches."""
    from difflib import SequenceMatcher

    scored = []
    for op in operations:
        typed = " ".join(args[: len(op.words)])
        ratio = SequenceMatcher(None, typed, op.name).ratio()
        if ratio >= 0.75:
            scored.append((-ratio, op.name))
    return [name for _, name in sorted(scored)[:3]]


def did_you_mean(names: Sequence[str]) -> str:
    """``did you mean 'issue list'?`` (or nothing) for a hint."""
    return f"did you mean {' or '.join(repr(n) for n in names)}? " if names else ""


def bind(operation: Operation, rest: Sequence[str]) -> tuple[Binding, list[BindingProblem]]:
    """Split the args after the operation words into positionals, options, passthrough.

    ``rest`` are the args *as authored*; indices in the result refer to it.
    """
    binding = Binding()
    problems: list[BindingProblem] = []
    names = operation.option_names()
    pending = list(operation.positionals)
    in_flags = False  # for pass-through operations, positionals come before the first flag
    taken: set[int] = set()  # args read as the value of a flag
    flags = _declared_flags(operation)
    for index, arg in enumerate(rest):
        if index in taken:
            continue
        if operation.passthrough and (in_flags or not pending or arg.startswith("-")):
            in_flags = True
            binding.passthrough.append(index)
            continue
        declared = flags.get(arg.partition("=")[0]) if arg.startswith("-") else None
        if declared is not None:
            # a flag the operation declares (gh's --limit, -R): the value it gives binds
            # where its key=value option or its positional would
            problem = _bind_flag(operation, binding, pending, rest, index, declared, taken)
            if problem is not None:
                problems.append(problem)
            continue
        if (
            arg.startswith("-")
            and len(arg) > 1
            and (operation.transport in ("rest", "graphql") or flags)
        ):
            # an API call's positionals are names and routes: a flag written as for a CLI
            # (`--limit 5`) never binds as one (ORG, then GET /orgs/--limit/issues); nor
            # does a flag an operation that takes flags does not declare (--dirr)
            problem, value_index = _flag_problem(operation, rest, index)
            problems.append(problem)
            if value_index is not None:
                taken.add(value_index)
            continue
        # an option is KEY=VALUE: without "=" the pattern is not tried
        match = OPTION_RE.match(arg) if "=" in arg and operation.accepts_options else None
        if match is not None:
            key = match.group(1)
            if operation.positionals_first and any(p.required for p in pending):
                problems.append(
                    BindingProblem(
                        index,
                        f"'{_short(arg)}' comes before {', '.join(p.name for p in pending)} "
                        f"in '{operation.name}'",
                        f"write {' and '.join(p.name for p in pending)} first, then the "
                        f"key=value options: {operation.form()}",
                        code="option-before-positional",
                    )
                )
                continue
            if operation.options is not None and key not in names:
                from difflib import get_close_matches

                problems.append(
                    BindingProblem(
                        index,
                        f"unknown option '{key}' for '{operation.name}'",
                        did_you_mean(get_close_matches(key, names, n=1, cutoff=0.75))
                        + "known options: "
                        + ", ".join(names),
                        code="unknown-option",
                    )
                )
                continue
            if operation.options is not None and any(k == key for k, _ in binding.options):
                # a declared option means one value: which of two would win is not written
                # anywhere (the request might take either)
                problems.append(
                    BindingProblem(
                        index,
                        f"option '{key}' is given twice for '{operation.name}'",
                        f"give {key}= once",
                        code="duplicate-option",
                    )
                )
                continue
            binding.options.append((key, index))
            continue
        if pending:
            binding.positionals[pending.pop(0).name] = index
            continue
        problems.append(
            BindingProblem(
                index,
                f"unexpected argument '{_short(arg)}' for '{operation.name}'",
                f"the form is: {operation.form()}",
                code="extra-argument",
            )
        )
    given = {key for key, _ in binding.options}
    missing_options = [o for o in operation.options or () if o.required and o.name not in given]
    if missing_options:
        problems.append(
            BindingProblem(
                -1,
                f"'{operation.name}' needs the option"
                + ("s " if len(missing_options) > 1 else " ")
                + ", ".join(
                    f"{o.name}=" + (f" ({o.flags[0]})" if o.flags else "") for o in missing_options
                ),
                f"the form is: {operation.form()}",
                code="missing-option",
            )
        )
    missing = [p.name for p in pending if p.required]
    if missing:
        problems.append(
            BindingProblem(
                -1,
                f"'{operation.name}' is missing its {', '.join(missing)} argument"
                + ("s" if len(missing) > 1 else ""),
                f"the form is: {operation.form()}",
                code="missing-argument",
            )
        )
    return binding, problems


def _declared_flags(operation: Operation) -> dict[str, Argument]:
    """Each flag the operation's arguments declare, and the argument it gives a value."""
    return {flag: arg for arg in operation.arguments for flag in arg.flags}


def _bind_flag(
    operation: Operation,
    binding: Binding,
    pending: list[Positional],
    rest: Sequence[str],
    index: int,
    declared: Argument,
    taken: set[int],
) -> BindingProblem | None:
    """Bind the value ``rest[index]``, a declared flag, gives ``declared``: what follows
    its ``=``, else the next arg whatever it is (as gh's value flags take it)."""
    flag, eq, _ = rest[index].partition("=")
    if eq:
        at, start = index, len(flag) + 1
    elif index + 1 < len(rest):
        at, start = index + 1, 0
        taken.add(at)
    else:
        if isinstance(declared, Positional):
            hint = f"write {flag} {declared.name}"
        else:
            form = value_form(declared)
            hint = f"write {flag} VALUE, or {declared.name}=VALUE" + (
                f"; it takes {form}" if form else ""
            )
        return BindingProblem(
            index, f"'{flag}' needs a value in '{operation.name}'", hint, code="missing-value"
        )
    if isinstance(declared, Option):
        if any(k == declared.name for k, _ in binding.options):
            return BindingProblem(
                index,
                f"option '{declared.name}' is given twice for '{operation.name}' ({flag})",
                f"give {declared.name}= or {flag} once",
                code="duplicate-option",
            )
        binding.options.append((declared.name, at))
    else:
        if declared not in pending:
            return BindingProblem(
                index,
                f"{declared.name} is given twice for '{operation.name}' ({flag})",
                f"give {declared.name} once: as an argument or with {flag}",
                code="duplicate-argument",
            )
        pending.remove(declared)
        binding.positionals[declared.name] = at
    binding.starts[at] = start
    return None


def _flag_problem(
    operation: Operation, rest: Sequence[str], index: int
) -> tuple[BindingProblem, int | None]:
    """The refusal of the flag ``rest[index]``, with the key=value form it stands for when
    the operation has that option (``--limit 5``: ``limit=5``), and the index of the arg it
    took as its value, if any."""
    flag = rest[index]
    name, eq, value = flag.lstrip("-").partition("=")
    keys = operation.option_names()
    # the option it stands for: a declared one (--per-page: per_page), or any name where
    # the operation takes any key (api's fields), but not a one-letter flag (-f a=b)
    key = next(
        (
            k
            for k in (name, name.replace("-", "_"))
            if k in keys or (operation.options is None and len(k) > 1)
        ),
        None,
    )
    taken = None
    if key and not eq:
        following = rest[index + 1] if index + 1 < len(rest) else None
        if (
            following is not None
            and not following.startswith("-")
            and not ("=" in following and OPTION_RE.match(following))
        ):
            value, taken = following, index + 1
    message = f"'{_short(flag)}' is a flag; '{operation.name}' takes key=value options, not flags"
    flags = list(_declared_flags(operation))
    if flags:  # it takes some: this is not one of them
        message = (
            f"'{_short(flag)}' is not a flag of '{operation.name}' (its flags: {', '.join(flags)})"
        )
    instead = dict(operation.flag_hints).get(flag.partition("=")[0])
    if instead is not None:
        return _instead(message, instead, rest, index)
    if key:
        declared = next((o for o in operation.options or () if o.name == key), None)
        shown = value or ("true" if declared is not None and declared.type == "bool" else "VALUE")
        hint = f"write {key}={shown}"
    elif keys:
        hint = f"its options are key=value: {', '.join(keys)}"
    else:
        hint = f"the form is: {operation.form()}"
    return BindingProblem(index, message, hint, code="flag-argument"), taken


def _instead(
    message: str, hint: str, rest: Sequence[str], index: int
) -> tuple[BindingProblem, int | None]:
    """The refusal of a flag the operation declares a hint for (``flag_hints``), with the
    index of the arg it took as its value (``--jq .name``), if any."""
    import shlex

    _, eq, value = rest[index].partition("=")
    taken = None
    if not eq and index + 1 < len(rest) and not rest[index + 1].startswith("-"):
        value, taken = rest[index + 1], index + 1
    others = " ".join(shlex.quote(a) for i, a in enumerate(rest) if i not in (index, taken))
    problem = BindingProblem(
        index,
        message,
        hint.format(args=others, value=shlex.quote(value) if value else "EXPRESSION"),
        code="flag-argument",
    )
    return problem, taken


def resolve_call(
    binding: Binding,
    resolved_rest: Sequence[str],
    pieces: Sequence[tuple[Piece, ...]] = (),
) -> BoundCall:
    """The call of ``binding`` on the resolved args; ``pieces`` (per arg) say where they came from."""
    # a value starts where the authored arg has it (after ``key=`` or ``--flag=``):
    # authored text, which substitution leaves as it is
    return BoundCall(
        positionals={
            name: resolved_rest[i][binding.value_start(i) :]
            for name, i in binding.positionals.items()
        },
        options=[
            (key, resolved_rest[i][binding.value_start(i, key) :]) for key, i in binding.options
        ]
        if binding.options
        else [],
        passthrough=[resolved_rest[i] for i in binding.passthrough],
        args=list(resolved_rest),
        pieces=pieces,
        binding=binding if pieces else None,
    )


def argument_problems(operation: Operation, call: BoundCall) -> list[BindingProblem]:
    """The arguments whose value is not what the operation declares (type, range, choices),
    and text that is not UTF-8 (any argument but a path, and an undeclared key=value).

    Validation passes the args as authored, with a ``${reference}`` marked ``missing``;
    the plan passes them substituted. A value not known yet is not checked; a message
    names the inputs a value came from.
    """
    binding = call.binding
    found: list[tuple[Argument, int, str, str]] = []  # (declared, arg index, shown, value)
    for positional in operation.positionals:
        value = call.positionals.get(positional.name)
        if value is not None:
            index = binding.positionals.get(positional.name, -1) if binding else -1
            found.append((positional, index, f"{positional.name} '{_short(value)}'", value))
    declared = {o.name: o for o in operation.options or ()}
    problems: list[BindingProblem] = []
    for n, (key, value) in enumerate(call.options):
        option = declared.get(key)
        index = binding.options[n][1] if binding and n < len(binding.options) else -1
        if option is not None:
            found.append((option, index, f"{key}={_short(value)}", value))
        elif (byte := not_utf8(f"{key}={value}")) is not None:  # a field of `api`'s body
            problems.append(
                BindingProblem(
                    index,
                    f"{_short(key)}= is not UTF-8 text ({byte} of key=value)",
                    f"'{operation.name}' sends text: convert the value (iconv -t UTF-8)",
                    code="bad-value",
                )
            )
    for arg, index, shown, value in found:
        if arg.type != "path" and (byte := not_utf8(value)) is not None:
            # bytes of a command line that are not UTF-8 (Python keeps them as lone
            # surrogates): no step can write, send or record them as text; a path is
            # the file system's bytes and may hold them
            problems.append(
                BindingProblem(
                    index,
                    f"{arg.name} is not UTF-8 text ({byte})",
                    f"'{operation.name}' takes text for {arg.name}: convert the value "
                    "(iconv -t UTF-8)",
                    code="bad-value",
                )
            )
            continue
        if arg.type == "str" and not arg.choices:
            continue
        pieces = call.pieces[index] if 0 <= index < len(call.pieces) else ()
        if any(p.missing for p in pieces):
            continue
        problem = value_problem(arg, value)
        if problem is None:
            continue
        inputs = list(dict.fromkeys(p.input for p in pieces if p.input is not None))
        source = f" (from input {', '.join(repr(i) for i in inputs)})" if inputs else ""
        form = value_form(arg)
        takes = f"{arg.name}={form}" if isinstance(arg, Option) else f"{arg.name}: {form}"
        problems.append(
            BindingProblem(
                index,
                f"{shown}{source} {problem}",
                f"'{operation.name}' takes {takes}",
                code="bad-value",
            )
        )
    return problems


def authored_call(binding: Binding, rest: Sequence[str]) -> BoundCall:
    """The call of ``binding`` on the args as authored, each arg one piece, unknown
    (``missing``) where it holds a ``${reference}``: what a provider's ``check`` hook
    reads at validation, and of a typed call, before any value is known."""
    return resolve_call(binding, rest, [(Piece(a, None, "${" in a),) for a in rest])


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
