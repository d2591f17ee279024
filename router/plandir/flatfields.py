"""Flat frontmatter: ``key: scalar`` lines read without YAML, exactly as YAML would read them.

The one reader of frontmatter, router.plandir.artifacts.parse_frontmatter (on the
hook's path), asks this scanner first; anything it is not sure of is left to YAML.
"""

from __future__ import annotations

import re

_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*):(?:[ \t]+(.*?))?[ \t]*$")
_DOUBLE = re.compile(r'^"([^"\\]*)"(?:[ \t]+#.*)?$')
_SINGLE = re.compile(r"^'([^']*)'(?:[ \t]+#.*)?$")
_COMMENT = re.compile(r"[ \t]+#.*$")
_NULLS = frozenset(("~", "null", "Null", "NULL"))
_TRUE = frozenset(["yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
INT_RE = re.compile(r"^(?:0|[1-9][0-9]*)$")  # a whole number as YAML reads one (also a revision)
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
# A plain scalar starting with one of these is something YAML reads its own way
# (a sequence, flow collection, alias, tag, block scalar, number, ...).
_INDICATORS = frozenset("-?:,[]{}#&*!|>%@`=+.0123456789")


# The usual frontmatter, whole: ``---``, lines of ``key: word`` (a word of letters, digits,
# ``_`` and ``-``; several words apart by one space), ``---``. One match reads the
# block where cutting the file into lines and matching each line costs several times
# more (every artifact of every topic is read by ``status``); anything else takes
# the line-by-line path, which this must agree with (tests/test_phases.py checks).
_USUAL_BLOCK = re.compile(
    r"---\n((?:[A-Za-z_][A-Za-z0-9_-]*: [A-Za-z0-9][A-Za-z0-9_-]*(?: [A-Za-z0-9_-]+)*\n)*)---(?:\n|\Z)"
)
_USUAL_LINE = re.compile(r"^([^:\n]+): ([^\n]+)$", re.MULTILINE)


class _NotFlat(Exception):
    """The block holds more than flat ``key: scalar`` lines: let YAML decide."""


# What YAML refuses (outside its printable set) or reads as a line break (NEL, LS, PS),
# where markdown-it sees one line: a block holding one is YAML's to read. Spelt as the
# few ranges outside YAML's set: the negated class of its set took ~10 ms to compile,
# on the session-start hook's path (tests/test_frontmatter.py checks every code point).
_YAML_ODD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def yaml_decides(text: str, end: int) -> bool:
    """Does ``text`` up to ``end`` hold a character the scanner cannot read as YAML would?"""
    return _YAML_ODD.search(text, 0, end) is not None


def read_block(
    lines: list[str],
) -> tuple[dict[str, str | None] | None, dict[str, list[str | None]]]:
    """The fields of a block of flat ``key: scalar`` lines YAML reads without error (None:
    let YAML decide), and the top-level keys given more than once with every value each
    was given, in order; each line matched once (every artifact's frontmatter is read
    this way).

    YAML and the scanner both keep a repeated key's last value and say nothing: a gate
    record with two verdicts would be read as whichever came last.
    """
    fields: dict[str, str | None] | None = {}
    seen: dict[str, list[str]] = {}
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue  # neither a field nor a key at column 0
        match = _KEY_LINE.match(line)
        if match is None:
            fields = None
            continue
        key, raw = match[1], match[2] or ""
        seen.setdefault(key, []).append(raw)
        if fields is None:
            continue
        if key in _TRUE or key in _FALSE or key in _NULLS:
            fields = None  # YAML reads ``no:`` as the key False: let it
            continue
        try:
            fields[key] = _scalar(raw)
        except _NotFlat:
            fields = None
    return fields, _repeated(seen)


def usual_block(text: str) -> tuple[dict[str, str | None], int] | None:
    """The fields of a frontmatter of the usual shape (see ``_USUAL_BLOCK``) with no key
    given twice, exactly as :func:`read_block` reads them, and where the body starts;
    None for any other text."""
    block = _USUAL_BLOCK.match(text)
    if block is None:
        return None
    pairs = _USUAL_LINE.findall(block[1])
    fields: dict[str, str | None] = {}
    for key, raw in pairs:
        if key in _TRUE or key in _FALSE or key in _NULLS:
            return None  # YAML's key False, True or None: the careful path decides
        if raw[0] in _DIGITS:
            try:
                fields[key] = _scalar(raw)  # a number or a date, or YAML's to read
            except _NotFlat:
                return None
        elif raw in _NULLS:
            fields[key] = None
        elif raw in _TRUE or raw in _FALSE:
            fields[key] = "true" if raw in _TRUE else "false"
        else:
            fields[key] = raw
    if len(fields) != len(pairs):
        return None  # a repeated key is warned about
    return fields, block.end()


_DIGITS = frozenset("0123456789")


def _repeated(seen: dict[str, list[str]]) -> dict[str, list[str | None]]:
    # Only a repeated key's values are read: almost every block repeats none.
    return {
        key: [_loose_scalar(value) for value in values]
        for key, values in seen.items()
        if len(values) > 1
    }


def _loose_scalar(value: str) -> str | None:
    """The scalar as :func:`_scalar` reads it, else the text as written (minus a comment)."""
    try:
        return _scalar(value)
    except _NotFlat:
        return _COMMENT.sub("", value) or None


def _scalar(value: str) -> str | None:
    if value[:1] in {'"', "'"}:
        quoted = (_DOUBLE if value[0] == '"' else _SINGLE).match(value)
        if quoted is None:
            raise _NotFlat
        return quoted[1]
    value = _COMMENT.sub("", value)
    if not value or value in _NULLS:
        return None
    if value in _TRUE or value in _FALSE:
        return "true" if value in _TRUE else "false"
    if INT_RE.match(value) or (_DATE.match(value) and _valid_date(value)):
        return value
    if value[0] in _INDICATORS or ": " in value or value.endswith(":") or "\t" in value:
        raise _NotFlat
    return value


def _valid_date(value: str) -> bool:
    """Is ``YYYY-MM-DD`` a calendar date (YAML would fail on one that is not)?

    Checked by hand: importing datetime costs ~2 ms of the hook's budget.
    """
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
    if year < 1 or not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    return 1 <= day <= days
