"""``--help`` of every command and group, written from its declaration.

The layout is the one the CLI has always printed (click's): the usage line, the
help wrapped to the terminal (78 columns at most), then ``Arguments:``,
``Options:`` and ``Commands:`` as two-column lists.
"""

from __future__ import annotations

import textwrap

from router.cli import spec
from router.cli.spec import Arg, Command, Group, Opt

TYPE_CHECKING = False
if TYPE_CHECKING:
    Node = Command | Group

MAX_WIDTH = 80  # the text wraps to two columns less: 78 on a wide terminal
NARROWEST = 50
COLUMN_MAX = 30  # a first column wider than this puts its text on the next line
SPACING = 2


def help_text(node: Node) -> str:
    """The whole help of ``node``, ending without a newline."""
    width = _width()
    out = [_usage(node, width), ""]
    out += [_wrap(node.help, width, indent="  "), ""]
    if isinstance(node, Command) and node.args:
        out += ["Arguments:", *_table([_arg_row(a) for a in node.args], width), ""]
    options = [*node.opts, None]  # None: the help option, always last
    out += ["Options:", *_table([_opt_row(o) for o in options], width)]
    if isinstance(node, Group):
        out += ["", "Commands:", *_commands(node, width)]
    return "\n".join(out)


def command_path(node: Node) -> str:
    return " ".join((spec.PROG, *node.path))


def _width() -> int:
    import os

    try:
        columns = os.get_terminal_size(1).columns
    except (OSError, ValueError):
        columns = 0
    # COLUMNS wins, as shutil.get_terminal_size would have it; piped output counts as 80.
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        columns = int(env)
    return max(min(columns or MAX_WIDTH, MAX_WIDTH) - 2, NARROWEST)


def _usage(node: Node, width: int) -> str:
    if isinstance(node, Group):
        pieces = "[OPTIONS] COMMAND [ARGS]..."
    else:
        pieces = " ".join(["[OPTIONS]", *(a.metavar for a in node.args)])
    prefix = f"Usage: {command_path(node)} "
    if width >= len(prefix) + 20:
        return _fill(pieces, width, prefix, " " * len(prefix))
    indent = " " * (len("Usage: ") + 4)
    return prefix + "\n" + _fill(pieces, width, indent, indent)


def _arg_row(arg: Arg) -> tuple[str, str]:
    return arg.metavar, arg.help + ("  [required]" if arg.required else "")


def _opt_row(option: Opt | None) -> tuple[str, str]:
    if option is None:
        return ", ".join(spec.HELP_FLAGS), spec.HELP_TEXT
    name = f"{option.flag} {option.metavar}" if option.takes_value else option.flag
    extra = []
    if option.takes_value and option.default is not None:
        extra.append(f"default: {option.default}")
    if option.least is not None:
        extra.append(f"x>={option.least}")
    return name, option.help + (f"  [{'; '.join(extra)}]" if extra else "")


def _commands(group: Group, width: int) -> list[str]:
    limit = width - 6 - max(len(c.name) for c in group.commands)
    return _table([(c.name, short_help(c.help, limit)) for c in group.commands], width)


def _table(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Two columns: names, then their text wrapped beside them (click's ``write_dl``)."""
    first = min(max(len(name) for name, _ in rows), COLUMN_MAX) + SPACING
    text_width = max(width - first - 2, 10)
    out: list[str] = []
    for name, text in rows:
        lines = _wrap(text, text_width).splitlines() or [""]
        if len(name) <= first - SPACING:
            out.append(f"  {name}{' ' * (first - len(name))}{lines[0]}")
        else:
            out += [f"  {name}", f"{' ' * (first + 2)}{lines[0]}"]
        out += [f"{' ' * (first + 2)}{line}" for line in lines[1:]]
    return out


def short_help(text: str, limit: int) -> str:
    """The first words of ``text`` that fit in ``limit`` columns: a whole sentence, or
    words and ``...`` (click's ``make_default_short_help``)."""
    words = text.split()
    total = 0
    for at, word in enumerate(words):
        total += len(word) + (at > 0)
        if total > limit:
            break
        if word.endswith("."):
            return " ".join(words[: at + 1])
        if total == limit and at != len(words) - 1:
            break
    else:
        return " ".join(words)
    total += len("...")
    while at > 0:
        total -= len(words[at]) + (at > 0)
        if total <= limit:
            break
        at -= 1
    return " ".join(words[:at]) + "..."


class _Wrapper(textwrap.TextWrapper):
    def _handle_long_word(
        self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int
    ) -> None:
        # A word longer than the line is cut where the line ends (click's wrapping).
        space_left = max(width - cur_len, 1)
        last = reversed_chunks[-1]
        cur_line.append(last[:space_left])
        reversed_chunks[-1] = last[space_left:]


def _fill(text: str, width: int, initial: str, subsequent: str) -> str:
    wrapper = _Wrapper(
        width, initial_indent=initial, subsequent_indent=subsequent, replace_whitespace=False
    )
    return wrapper.fill(text)


def _wrap(text: str, width: int, indent: str = "") -> str:
    """One paragraph wrapped to ``width``, every line indented by ``indent``."""
    return _fill(" ".join(text.expandtabs().splitlines()), width, indent, indent)
