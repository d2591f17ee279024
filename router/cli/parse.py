"""Reading an argument list against the declarations of :mod:`router.cli.spec`.

One reader for every command: options anywhere after the command, ``--``
ends them, a long option's value after ``=`` or as the next word (whatever it
starts with), short options clustered (``-hC DIR``), the last of a repeated
option wins (one declared repeatable keeps every value, in order). Its refusals read as the CLI's always have (they are the words
of click, which the CLI was built on): ``No such option: --x (Possible
options: --json)``, ``Missing argument 'TARGET'.``, ``Invalid value for
'--wait': ...``.

Parsing runs no command: it returns the command and its values, or raises
:class:`UsageError`, :class:`HelpAsked` or :class:`NoCommand`.
"""

from __future__ import annotations

from router.cli import spec
from router.cli.spec import FLAG, FLOAT, HELP_FLAGS, INT, PATH, TEXTS, Arg, Command, Group, Opt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    Node = Command | Group
    Param = Opt | Arg


class UsageError(Exception):
    """Bad input, found at ``node`` (whose ``--help`` the message points to): exit 2."""

    def __init__(self, message: str, node: Node, *, option: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.option = option  # the unknown option, for "No such option"


class HelpAsked(Exception):
    """``--help`` (or ``-h``) of ``node``: print its help, exit 0."""

    def __init__(self, node: Node) -> None:
        super().__init__(node.name)
        self.node = node


class NoCommand(Exception):
    """A group given no words at all: its help on stderr, exit 2."""

    def __init__(self, node: Group) -> None:
        super().__init__(node.name)
        self.node = node


class VersionAsked(Exception):
    """``--version``: print it, exit 0."""


HELP = Opt(HELP_FLAGS[1], "help", spec.HELP_TEXT)
# An option's value missing or forced on a flag points to team-router's own --help,
# as the CLI always has, whichever command it was given to.
_WHOLE = spec.ROOT


class Parsed:
    """A command to run: its declaration, its values by parameter name, and ``-C``."""

    __slots__ = ("command", "directory", "values")

    def __init__(self, command: Command, values: dict[str, object], directory: Path | None):
        self.command = command
        self.values = values
        self.directory = directory


def parse(
    args: list[str], root_read: Callable[[Path | None], None] = lambda _directory: None
) -> Parsed:
    """The command ``args`` name and its values; ``root_read`` sees ``-C`` as soon as the
    command's word is known (before the command's own arguments are read)."""
    values, rest = _read_group(spec.ROOT, args)
    directory = values.get("directory")
    node = _resolve(spec.ROOT, rest)
    root_read(directory)  # type: ignore[arg-type]
    rest = rest[1:]
    while isinstance(node, Group):
        _values, rest = _read_group(node, rest)
        node = _resolve(node, rest)
        rest = rest[1:]
    return Parsed(node, _read_command(node, rest), directory)  # type: ignore[arg-type]


# -- groups --------------------------------------------------------------------------


def _read_group(group: Group, args: list[str]) -> tuple[dict[str, object], list[str]]:
    """A group's own options (they stop at its first word); the words from the command on."""
    if not args:
        raise NoCommand(group)
    state = _State(group, group.opts, args, interspersed=False)
    values = state.values()
    if not state.words:
        raise UsageError("Missing command.", group)
    return values, state.words


def _resolve(group: Group, words: list[str]) -> Node:
    name = words[0]
    found = group.find(name)
    if found is not None:
        return found
    try:
        if _split_opt(name)[0]:
            # An option-like word after `--`: read as the group's own, as if it came first.
            _State(group, group.opts, words, interspersed=False).values()
        raise UsageError(f"No such command {name!r}.", group)
    except UsageError as exc:
        from difflib import get_close_matches

        matches = get_close_matches(name, [c.name for c in group.commands])
        if matches:
            suggestions = ", ".join(repr(m) for m in matches)
            exc.message = f"{exc.message.rstrip('.')}. Did you mean {suggestions}?"
        raise


# -- commands ------------------------------------------------------------------------


def _read_command(command: Command, args: list[str]) -> dict[str, object]:
    state = _State(command, command.opts, args, interspersed=True)
    values = state.values()
    words = state.words[len(command.args) :]
    if words:
        extra = " ".join(words)
        raise UsageError(f"Got unexpected extra argument(s) ({extra})", command)
    return values


class _State:
    """One node's reading: the options in the order given, then its positional words."""

    def __init__(self, node: Node, opts: tuple[Opt, ...], args: list[str], *, interspersed: bool):
        self.node = node
        self.opts = (*opts, HELP)
        self.long = {o.flag: o for o in self.opts if not _is_short(o.flag)}
        self.short = {o.flag: o for o in self.opts if _is_short(o.flag)}
        self.short["-h"] = HELP
        self.raw: dict[str, object] = {}
        self.order: list[Param] = []
        self.words: list[str] = []
        self._read(list(args), interspersed=interspersed)

    # -- the words ---------------------------------------------------------------

    def _read(self, rest: list[str], *, interspersed: bool) -> None:
        while rest:
            arg = rest.pop(0)
            if arg == "--":
                break
            if arg[:1] == "-" and len(arg) > 1:
                self._option(arg, rest)
            elif interspersed:
                self.words.append(arg)
            else:
                rest.insert(0, arg)
                break
        self.words += rest

    def _option(self, arg: str, rest: list[str]) -> None:
        name, eq, explicit = arg.partition("=")
        option = self.long.get(name)
        if option is not None:
            if option.takes_value:
                if eq:
                    rest.insert(0, explicit)
                self._store(option, self._value_of(name, rest))
            elif eq:
                raise UsageError(f"Option {name!r} does not take a value.", _WHOLE)
            else:
                self._store(option, True)
        elif arg[:2] != "--":
            self._cluster(arg, rest)
        else:
            from difflib import get_close_matches

            message = f"No such option: {name}"
            possible = get_close_matches(name, list(self.long))
            if possible:
                message += f" (Possible options: {', '.join(sorted(possible))})"
            raise UsageError(message, self.node, option=name)

    def _cluster(self, arg: str, rest: list[str]) -> None:
        """``-h``, ``-C DIR``, ``-CDIR``, ``-hC DIR``: single letters after one dash."""
        for at, letter in enumerate(arg[1:], start=2):
            flag = f"-{letter}"
            option = self.short.get(flag)
            if option is None:
                raise UsageError(f"No such option: {flag}", self.node, option=flag)
            if not option.takes_value:
                self._store(option, True)
                continue
            if at < len(arg):
                rest.insert(0, arg[at:])
            self._store(option, self._value_of(flag, rest))
            return

    def _value_of(self, name: str, rest: list[str]) -> str:
        if not rest:
            raise UsageError(f"Option {name!r} requires an argument.", _WHOLE)
        return rest.pop(0)

    def _store(self, option: Opt, value: object) -> None:
        if option.kind == TEXTS:
            value = (*self.raw.get(option.name, ()), value)  # type: ignore[misc]
        self.raw[option.name] = value
        self.order.append(option)

    # -- the values ----------------------------------------------------------------

    def values(self) -> dict[str, object]:
        """Each parameter's value, checked in click's order: --help and --version first,
        then the options given (in the order given), then the arguments."""
        args = self.node.args if isinstance(self.node, Command) else ()
        for at, arg in enumerate(args):
            self.raw[arg.name] = self.words[at] if at < len(self.words) else None
        given = [*dict.fromkeys(self.order), *args]
        eager = [o for o in given if o is HELP or o is spec.VERSION]
        values: dict[str, object] = {}
        for param in [*eager, *(p for p in given if p not in eager)]:
            values[param.name] = self._checked(param)
        for option in self.opts:
            values.setdefault(option.name, option.default)
        values.pop(HELP.name, None)
        values.pop(spec.VERSION.name, None)
        return values

    def _checked(self, param: Param) -> object:
        value = self.raw.get(param.name)
        if param is HELP and value:
            raise HelpAsked(self.node)
        if param is spec.VERSION and value:
            raise VersionAsked()
        if isinstance(param, Arg):
            if value is None and param.required:
                raise UsageError(f"Missing argument {param.metavar!r}.", self.node)
            return value
        try:
            return _convert(param, value)
        except ValueError as exc:
            raise UsageError(f"Invalid value for {param.flag!r}: {exc}", self.node) from None


def _convert(option: Opt, raw: object) -> object:
    if raw is None or option.kind in (FLAG, TEXTS):
        return option.default if raw is None else raw
    text = str(raw)
    if option.kind == PATH:
        if not text:
            raise ValueError(
                "the path is empty; pass a path (`.` is the current directory) or leave the "
                "option out"
            )
        from pathlib import Path

        return Path(text)
    if option.kind not in (FLOAT, INT):
        return text
    number: float
    try:
        number = float(text) if option.kind == FLOAT else int(text)
    except ValueError:
        # click's names for its types: "float", "integer", "float range", "int range".
        if option.least is None:
            what = "float" if option.kind == FLOAT else "integer"
        else:
            what = "float range" if option.kind == FLOAT else "int range"
        raise ValueError(f"{text!r} is not a valid {what}.") from None
    if option.least is not None and number < option.least:
        raise ValueError(f"{number} is not in the range x>={option.least}.")
    return number


def command_words(args: list[str]) -> list[str]:
    """The positional words of ``args`` (the command path first), -C's value left out."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-C":
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


def _is_short(flag: str) -> bool:
    return len(flag) == 2 and flag[0] == "-" and flag[1] != "-"


def _split_opt(word: str) -> tuple[str, str]:
    first = word[:1]
    if first.isalnum():
        return "", word
    if word[1:2] == first:
        return word[:2], word[2:]
    return first, word[1:]
