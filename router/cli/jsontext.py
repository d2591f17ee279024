"""A result as JSON text: exactly ``json.dumps(value, indent=2, default=str)``, written faster.

With ``indent`` the standard library never uses its C encoder: each value passes
up through one Python generator per level it is nested in. ``status`` over 500
topics prints ~25,000 values, and that took a sixth of the command. Here each
string is escaped by the same C function ``json`` uses, numbers are written as
``json`` writes them, and the text is built in one list; anything else (a
circular value, a key that is not text or a number) is left to ``json.dumps``
itself, so the text is the same whatever the value.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _quoted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INDENT = "  "


class _Unusual(Exception):
    """A value this writer leaves to ``json.dumps``."""


def dumps(value: Any) -> str:
    """``json.dumps(value, indent=2, default=str)``, the same text."""
    out: list[str] = []
    try:
        _value(value, out, "\n", {})
    except (_Unusual, RecursionError):
        # A circular value (or one deeper than any result) is json's to refuse as it does.
        return json.dumps(value, indent=2, default=str)
    return "".join(out)


def _plain_text(value: Any) -> str | None:
    """The text of a str, None, True, False or int by its exact type; None for any other
    value. Each is appended with what comes before it, in one piece: 500 topics make
    ~25,000 of them."""
    kind = type(value)
    if kind is str:
        return _quoted(value)  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    return None


def _value(value: Any, out: list[str], newline: str, keys: dict[str, str]) -> None:
    # The usual values by their exact type first; any other (a subclass, a float, a value
    # for default()) in the order of json's own encoder.
    kind = type(value)
    if kind is dict:
        _object(value, out, newline, keys)
    elif kind is list or kind is tuple:
        _array(value, out, newline, keys)
    else:
        text = _plain_text(value)
        if text is None:
            _other(value, out, newline, keys)
        else:
            out.append(text)


def _other(value: Any, out: list[str], newline: str, keys: dict[str, str]) -> None:
    """json's order: str, int, float, list or tuple, dict, else default() (str) and that."""
    if isinstance(value, str):
        out.append(_quoted(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        _array(value, out, newline, keys)
    elif isinstance(value, dict):
        _object(value, out, newline, keys)
    else:
        _value(str(value), out, newline, keys)


def _array(
    items: list[Any] | tuple[Any, ...], out: list[str], newline: str, keys: dict[str, str]
) -> None:
    if not items:
        out.append("[]")
        return
    inner = newline + INDENT
    separator = "[" + inner
    for item in items:
        text = _plain_text(item)
        if text is None:
            out.append(separator)
            _value(item, out, inner, keys)
        else:
            out.append(separator + text)
        separator = "," + inner
    out.append(newline + "]")


def _object(items: dict[Any, Any], out: list[str], newline: str, keys: dict[str, str]) -> None:
    """``keys``: each text key as written before its value, quoted once for the whole text."""
    if not items:
        out.append("{}")
        return
    inner = newline + INDENT
    separator = "{" + inner
    for key, item in items.items():
        name = keys.get(key) if type(key) is str else None
        if name is None:
            if not isinstance(key, str):
                raise _Unusual  # json's own rules for a key that is a number, bool or None
            name = _quoted(key) + ": "
            if type(key) is str:
                keys[key] = name
        text = _plain_text(item)
        if text is None:
            out.append(separator + name)
            _value(item, out, inner, keys)
        else:
            out.append(separator + name + text)
        separator = "," + inner
    out.append(newline + "}")


def _float(value: float) -> str:
    # As json.encoder's floatstr: repr, and JavaScript's names for what JSON has none for.
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)
