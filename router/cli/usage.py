"""A usage error's message, and for an option on the wrong side of the command, where it goes."""

from __future__ import annotations

import shlex

from router.cli import spec
from router.cli.parse import UsageError
from router.cli.parse import command_words as _words
from router.cli.spec import Command, Group

# What team-router itself takes before the command; every other option is a command's.
BEFORE_THE_COMMAND = "before the command team-router takes only -C DIR, --version and --help"

# How a flag's value is read when one is forced on it (``--json=0``): false.
_FALSE_WORDS = frozenset({"0", "false", "f", "no", "n", "off", ""})


def explain(args: list[str], exc: UsageError) -> str:
    """The parser's message, or, for an option on the wrong side of the command, where it goes."""
    if not exc.option:
        return exc.message
    if exc.node is spec.ROOT:
        return _before_the_command(args, exc.option) or (
            f"No such option: {exc.option}; {BEFORE_THE_COMMAND}"
        )
    if exc.option == "-C":
        return _after_the_command(args) or exc.message
    return exc.message


def _before_the_command(args: list[str], option: str) -> str | None:
    """``--json status``: the same line with the command's own options after the command."""
    names = {c.name for c in spec.ROOT.commands}
    at = next((n for n, a in enumerate(args) if a in names and args[n - 1 : n] != ["-C"]), None)
    if at is None:
        if not any(option in options_of(node) for node in spec.ROOT.commands):
            return None
        return f"{option} goes after the command: `team-router COMMAND {option}` ({BEFORE_THE_COMMAND})"
    node = spec.ROOT.find(args[at])
    assert node is not None
    options = options_of(node)
    if option not in options:
        return None
    kept: list[str] = []
    moved: list[str] = []
    head = args[:at]
    while head:
        arg, head = head[0], head[1:]
        if arg == "-C" and head:
            kept += [arg, head[0]]
            head = head[1:]
        elif arg in ("--version", "--help", "-h"):
            kept.append(arg)
        else:
            moved += _as_written_after(arg, options)  # its value, if it takes one: the next word
    rest = args[at:]
    end = rest.index("--") if "--" in rest else len(rest)
    fixed = ["team-router", *kept, *rest[:end], *moved, *rest[end:]]
    return (
        f"{option} is an option of `{_command_path(node, rest)}`, so it goes after the command: "
        f"`{shlex.join(fixed)}` ({BEFORE_THE_COMMAND})"
    )


def _command_path(node: Command | Group, words: list[str]) -> str:
    """``status``, or a group's ``hook session-start`` (its second word, when it names one)."""
    sub = _words(words[1:])[:1]
    if isinstance(node, Group) and sub and node.find(sub[0]) is not None:
        return f"{words[0]} {sub[0]}"
    return words[0]


def _as_written_after(arg: str, options: dict[str, bool]) -> list[str]:
    """``arg`` as it is written after the command: a flag given a value loses it.

    ``--json=1`` moved as it was is refused in turn (the flag takes no value):
    the flag alone says the same, and ``--json=0`` asked for no flag at all.
    """
    name, eq, value = arg.partition("=")
    if not (eq and options.get(name)):
        return [arg]
    return [] if value.strip().lower() in _FALSE_WORDS else [name]


def options_of(node: Command | Group) -> dict[str, bool]:
    """Every option ``node`` takes (its subcommands' included): is it a flag?"""
    found: dict[str, bool] = {}
    pending = [node]
    while pending:
        current = pending.pop()
        found.update({o.flag: not o.takes_value for o in current.opts})
        if isinstance(current, Group):
            pending += current.commands
    return found


def _after_the_command(args: list[str]) -> str | None:
    """``status -C DIR``: -C belongs to team-router itself, before the command."""
    words = _words(args)
    start = args.index(words[0]) if words else len(args)
    at = args.index("-C", start) if "-C" in args[start:] else -1
    if at < 0 or at + 1 >= len(args):
        return None
    fixed = ["team-router", "-C", args[at + 1], *args[:at], *args[at + 2 :]]
    return f"-C goes before the command: `{shlex.join(fixed)}`"
