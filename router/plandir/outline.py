"""A markdown body's outline: its section headings, top-level list items and other text, with lines.

``repos.md`` is read through this (DESIGN §6): its sections are the headings
outside list items, its repos the items of their lists, and any other block of
text in a repo section (a plain line, a table) is named, not skipped. CommonMark decides
what is a heading or an item (a fence, an HTML block or an indented code
block hides one), and markdown-it is its reader here. Importing and running
it is most of a ``worktrees`` command's start-up, though (~30 ms, before any
repo is fetched), and the lists agents write use a small part of
CommonMark. So a line reader answers first for the files it can read with
certainty: ATX headings at the margin, bullet items, their continuation
lines, paragraphs. Any line that might be anything else (a fence, a quote,
HTML, a tab, an ordered item, an underline) hands the whole file to
markdown-it. ``tests/test_outline.py`` holds the two to the same outline on
generated files.
"""

from __future__ import annotations

import re

from router.plandir.mdlines import is_blank, split_lines
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms


@record
class Heading:
    """A heading outside any list item: 0-based line in the body, level 1-6, its text."""

    line: int
    level: int
    title: str


@record
class Item:
    """A top-level list item: the (0-based line, text) of every line of text in it.

    Nested items' lines are its lines too. The text is the line's own, without
    its indentation or list marker (a line reader may leave spaces that
    markdown-it trims: readers strip it).
    """

    lines: tuple[tuple[int, str], ...]


@record
class Text:
    """A block of text outside any list item: a paragraph (a table is one to CommonMark),
    a code block, a quote, HTML other than a comment. Its first 0-based line in the body.

    Thematic breaks and HTML comments are not text: they show nothing a reader could take for a repo.
    """

    line: int


Outline = list[Heading | Item | Text]

_ATX = re.compile(r"#{1,6}(?: +(?P<title>.*))?")
# A bullet marker with the content's offset (1-4 spaces; 5 or more open an indented code block).
_BULLET = re.compile(r"[-*+]( {1,4})(?=[^ ])")
_ORDERED = re.compile(r"\d{1,9}[.)]")
# Tabs (CommonMark expands them to columns), NUL (markdown-it replaces it) and
# the spaces markdown-it trims from a paragraph's ends that are not " ".
_ODD = re.compile(r"[^\S ]|[\ufeff\0]")
# markdown-it's nesting limit, and the line reader's list depth (each list level
# nests twice: the list and its item): past it both leave the file to markdown-it,
# which stops reading there (it recurses per level).
_MAX_NESTING = 100
_MAX_DEPTH = _MAX_NESTING // 2 - 1


def outline(body: str) -> Outline:
    """The headings and top-level list items of ``body``, as CommonMark reads them."""
    found = _read_simple(split_lines(body, keepends=False))
    return found if found is not None else _read_commonmark(body)


# -- the line reader ------------------------------------------------------------


class _Unsure(Exception):
    """A line this reader cannot place with certainty: markdown-it reads the file."""


def _read_simple(lines: list[str]) -> Outline | None:
    """The outline of a file of plain headings, bullet lists and paragraphs; None for others."""
    try:
        return _Reader().read(lines)
    except _Unsure:
        return None


class _Reader:
    def __init__(self) -> None:
        self.out: Outline = []
        self.item: list[tuple[int, str]] | None = None  # the open top-level item's lines
        self.offsets: list[int] = []  # content columns of the open items, outermost first
        self.blank_before = False  # a blank line since the last line of text
        self.para = False  # the last line of text was a paragraph's, outside any item

    def read(self, lines: list[str]) -> Outline:
        for n, line in enumerate(lines):
            if _ODD.search(line):
                raise _Unsure
            if is_blank(line):
                self.blank_before = True
                continue
            self._line(n, line)
            self.blank_before = False
        self._close()
        return self.out

    def _line(self, n: int, line: str) -> None:
        text = line.lstrip(" ")
        indent = len(line) - len(text)
        _refuse_breaks(text)
        # Does this line continue a paragraph outside any item (one Text, not a new one)?
        para, self.para = self.para and not self.blank_before, False
        if self.item is not None:
            if indent >= self.offsets[0]:
                self._inside(n, text, indent)
                return
            if not self.blank_before:
                if not _starts(text):
                    self.item.append((n, text))  # a lazy continuation of the open paragraph
                    return
                if indent > 0:
                    raise _Unsure  # a block indented 1-3 spaces: maybe a sibling item
        self._close()
        if indent == 0:
            self._top(n, text, para)
        elif indent < 4:
            _refuse_starts(text)  # a block with 1-3 spaces: markdown-it places it
            self._text(n, para)
        elif para:
            self.para = True  # 4 or more spaces: a paragraph's continuation
        else:
            raise _Unsure  # an indented code block, which blank lines do not end

    def _top(self, n: int, text: str, para: bool) -> None:
        bullet = _BULLET.match(text)
        if bullet is not None:
            self.item = [(n, _content(text[bullet.end() :]))]
            self.offsets = [bullet.end()]
            return
        if text.startswith("#"):
            heading = _ATX.fullmatch(text)
            title = (heading["title"] or "") if heading else ""
            if heading is None or title.rstrip(" ").endswith("#"):
                raise _Unsure  # not a heading, or one with a closing sequence
            self.out.append(Heading(n, len(text) - len(text.lstrip("#")), title.strip()))
            return
        _refuse_starts(text)  # else a paragraph's line, outside any item
        self._text(n, para)

    def _text(self, n: int, para: bool) -> None:
        """A paragraph's line outside any item: the first line of a paragraph starts a Text."""
        if not para:
            self.out.append(Text(n))
        self.para = True

    def _inside(self, n: int, text: str, indent: int) -> None:
        """A line indented into the open item: text, or a nested item's first line."""
        assert self.item is not None
        # The innermost open item the line is indented into holds it.
        depth = max(d for d, offset in enumerate(self.offsets) if indent >= offset)
        relative = indent - self.offsets[depth]
        if relative >= 4:
            if self.blank_before or (depth < len(self.offsets) - 1 and _starts(text)):
                # An indented code block; or, short of an inner item's content, a
                # line markdown-it reads as one where CommonMark reads text.
                raise _Unsure
            self.item.append((n, text))  # a paragraph's continuation, whatever it looks like
            return
        bullet = _BULLET.match(text)
        if bullet is not None:
            if depth + 2 > _MAX_DEPTH:
                raise _Unsure
            self.offsets[depth + 1 :] = [indent + bullet.end()]
            self.item.append((n, _content(text[bullet.end() :])))
            return
        _refuse_starts(text)
        if self.blank_before:
            del self.offsets[depth + 1 :]  # a new paragraph closes the items nested deeper
        self.item.append((n, text))

    def _close(self) -> None:
        if self.item is not None:
            self.out.append(Item(tuple(self.item)))
        self.item = None
        self.offsets = []


def _content(text: str) -> str:
    """An item's first line after its marker: text that starts no other block."""
    _refuse_breaks(text)  # "+ ---": a thematic break in the item, not its text
    _refuse_starts(text)
    return text


def _refuse_breaks(text: str) -> None:
    """A thematic break or a setext underline (only ``-=*_`` and spaces) needs markdown-it."""
    if not text.strip("-=*_ "):
        raise _Unsure


def _starts(text: str) -> bool:
    """True when ``text`` (a line without its indentation) may start a block other than text."""
    return (
        text.startswith(("#", ">", "<", "[", "```", "~~~"))
        or (text[:1] in "-*+" and text[1:2] in ("", " "))  # a bullet marker
        or _ORDERED.match(text) is not None
    )


def _refuse_starts(text: str) -> None:
    if _starts(text):
        raise _Unsure


# -- markdown-it ------------------------------------------------------------------


def _read_commonmark(body: str) -> Outline:
    from markdown_it import MarkdownIt  # lazy: ~30 ms, only for files the line reader leaves

    # The preset stops reading at 20 levels of nesting (10 of nested lists) and
    # drops the rest of the file silently: a repos.md nested that deep would
    # lose its later sections here but not in the line reader.
    return _from_tokens(MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).parse(body))


_TEXT_TOKENS = frozenset(("paragraph_open", "code_block", "fence", "blockquote_open", "html_block"))


def _from_tokens(tokens: list[Any]) -> Outline:
    out: Outline = []
    item: list[tuple[int, str]] = []
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.level == 0 and tok.type in _TEXT_TOKENS and tok.map and not _comment(tok):
            out.append(Text(tok.map[0]))
        elif tok.type == "list_item_open":
            depth += 1
        elif tok.type == "list_item_close":
            depth -= 1
            if depth == 0:
                out.append(Item(tuple(item)))
                item = []
        elif tok.type == "heading_open" and depth == 0 and tok.map:
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            out.append(Heading(tok.map[0], int(tok.tag[1:]), title))
        elif tok.type == "inline" and depth >= 1 and tok.map:
            # markdown-it joins an inline's source lines with "\n" and nothing else.
            start = tok.map[0]
            item.extend((start + n, ln) for n, ln in enumerate(tok.content.split("\n")))
    return out


def _comment(tok: Any) -> bool:
    """An HTML block that is one comment and nothing else."""
    content = tok.content.strip() if tok.type == "html_block" else ""
    return content.startswith("<!--") and content.endswith("-->") and "-->" not in content[4:-3]
