"""The outline of a markdown body: the line reader and markdown-it agree wherever the reader answers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from router.plandir import outline as ol
from router.plandir.outline import Heading, Item, Text, outline

# Lines of the shapes agents write (most of a file), and lines that need
# CommonMark's rules (a few): the reader must answer the first and hand over
# every file holding one it cannot place.
PLAIN = (
    ["", "", "", "  ", "  ", "   ", "    "],
    ["", "", "- ", "- ", "* ", "+ ", "-  ", "## ", "# ", "### "],
    ["**name:** api", "**path:** /w/api", "__role__: part", "Home repo", "Additional repos",
     "Worktrees", "text", "name: x", "`/w/x`", "x:", "*emph*", "a - b"],
)  # fmt: skip
TRICKY = (
    ["", "", "", " ", " ", "  ", "   ", "    ", "      "],
    ["", "-", "-     ", "1. ", "2) ", "> ", "####### ", "##", "#", "```", "~~~", "<!-- c -->",
     "<div>", "[a]: /b", "---", "===", "***", "- - -", "_ _ _", "\\- ", "  - ", "- ## ", "- > "],
    ["worktrees ##", "* item", "## inner", "> quote", "1. one", "a\x0bb", "\u00a0x",
     "\ufeffy", "x\ty", "  ", "-", "```"],
)  # fmt: skip
ENDINGS = ["\n", "\n", "\n", "\r\n", "\r"]


def _lines(parts: tuple[list[str], ...]) -> st.SearchStrategy[str]:
    return st.builds(lambda i, s, t: i + s + t, *(st.sampled_from(v) for v in parts))


ANY = tuple(p + t for p, t in zip(PLAIN, TRICKY, strict=True))
line = st.sampled_from(
    [_lines(PLAIN)] * 8 + [st.sampled_from(["", "  "])] * 3 + [_lines(ANY)] * 2
).flatmap(lambda s: s)
body = st.builds(
    lambda lines, end: end.join(lines), st.lists(line, max_size=12), st.sampled_from(ENDINGS)
)


def _comparable(parts: list[Heading | Item | Text]) -> list[object]:
    # markdown-it trims the spaces around a paragraph and keeps those past the
    # block's indentation inside it; the reader keeps a line's own: every
    # reader of an item's lines strips them.
    return [
        [(n, text.strip(" ")) for n, text in p.lines] if isinstance(p, Item) else p for p in parts
    ]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body)
def test_the_line_reader_and_markdown_it_agree_wherever_the_reader_answers(text: str) -> None:
    simple = ol._read_simple(ol.split_lines(text, keepends=False))
    if simple is not None:
        assert _comparable(simple) == _comparable(ol._read_commonmark(text))


# Files whose meaning turns on a rule the reader leaves to markdown-it.
HANDED_OVER = [
    "para\n---",  # a setext heading
    "- a\n---",  # a thematic break after an item, not its text
    "- a\n\n      code",  # an indented code block inside an item
    "- a\n  - b\n\n  c\n\n      code",  # in the outer item once c closed b
    "## Title ##",  # a closing sequence
    "  - a",  # an item indented 1-3 spaces
    "para\n  > quote",
    "> ## quoted",
    "- \u00a0x",  # a space markdown-it trims that is not " "
    "- a\n\tb",
    "```\n## Worktrees\n```",
    "- # heading in an item",
    "-     code in an item",
    "1. ordered",
    "+ ---",  # a thematic break in the item, not its text
    "- a\n  + ***",
    "- a\n  -    b\n      ## c",  # short of b's content: markdown-it reads code here
    "## A\n\n    code\n\n    still code",  # an indented code block: one block, not two
]
# Files the reader must answer, the same as markdown-it.
ANSWERED = [
    "- a\n  - b\n\n  c\n\n    d",  # d is text of the outer item
    "- a\n  -   b\n\n        c",  # c is text of b (its content starts at column 6)
    "- a\n      - b",  # a continuation line, marker and all
    "- a\n  - b\nlazy",
    "- a\n\n- b\n\nc",
    "## Home repo\n- **name:** x\n    **path:** /p\n## Worktrees\n- x: /y",
    "## A\ntext\n  more\n    more\n\n   para\n- item\nlazy\n\nafter\n# B\nx",  # paragraphs
]


@pytest.mark.parametrize("text", HANDED_OVER)
def test_a_file_that_needs_commonmark_is_handed_to_markdown_it(text: str) -> None:
    assert ol._read_simple(ol.split_lines(text, keepends=False)) is None
    assert outline(text) == ol._read_commonmark(text)


@pytest.mark.parametrize("text", ANSWERED)
def test_the_line_reader_answers_plain_lists_as_markdown_it_does(text: str) -> None:
    simple = ol._read_simple(ol.split_lines(text, keepends=False))
    assert simple is not None
    assert _comparable(simple) == _comparable(ol._read_commonmark(text))


REPOS_MD = """\
## Home repo
- **name:** web
- **path:** /w/web

## Additional repos
- **name:** api
  **path:** `/w/api`
  **role:** backend

*  **name:** db
   - **path:** /w/db
lazy line

## Worktrees
- web: /w/web/.claude/worktrees/x
"""


def test_the_lists_agents_write_are_read_without_markdown_it() -> None:
    simple = ol._read_simple(ol.split_lines(REPOS_MD, keepends=False))
    assert simple == ol._read_commonmark(REPOS_MD) or _comparable(simple or []) == _comparable(
        ol._read_commonmark(REPOS_MD)
    )
    assert simple is not None
    assert [p.title for p in simple if isinstance(p, Heading)] == [
        "Home repo",
        "Additional repos",
        "Worktrees",
    ]
    items = [[t.strip() for _, t in p.lines] for p in simple if isinstance(p, Item)]
    assert items[2] == ["**name:** api", "**path:** `/w/api`", "**role:** backend"]
    assert items[3] == ["**name:** db", "**path:** /w/db", "lazy line"]


def test_a_fence_hands_the_file_to_markdown_it_which_hides_its_heading() -> None:
    text = "## Home repo\n- **name:** a\n\n```\n## Worktrees\n```\n"
    assert ol._read_simple(ol.split_lines(text, keepends=False)) is None
    assert [p.title for p in outline(text) if isinstance(p, Heading)] == ["Home repo"]


def test_a_heading_inside_a_list_item_is_no_section() -> None:
    text = "## Home repo\n- **name:** a\n  ## Additional repos\n  **name:** b\n"
    parts = outline(text)
    assert [p.title for p in parts if isinstance(p, Heading)] == ["Home repo"]
    assert [t for p in parts if isinstance(p, Item) for _, t in p.lines] == [
        "**name:** a",
        "Additional repos",
        "**name:** b",
    ]


def test_a_list_nested_deeper_than_markdown_it_reads_is_handed_over_and_read_alike():
    # markdown-it's preset stopped at 10 nested lists and dropped the rest of
    # the file: the sections after it existed for one reader and not the other.
    nested = "".join("  " * i + "- x\n" for i in range(12))
    text = f"## Notes\n{nested}## Additional repos\n- **name:** api\n"
    tabbed = text.replace("## Notes\n", "## Notes\n\tx\n")
    assert ol._read_simple(ol.split_lines(tabbed, keepends=False)) is None
    for body in (text, tabbed):
        titles = [p.title for p in outline(body) if isinstance(p, Heading)]
        assert titles == ["Notes", "Additional repos"]
    deepest = "".join("  " * i + "- x\n" for i in range(ol._MAX_DEPTH + 1))
    assert ol._read_simple(ol.split_lines(deepest, keepends=False)) is None


def test_text_outside_items_is_named_by_its_first_line_and_comments_and_breaks_are_not() -> None:
    text = "## A\n| a | b |\n|---|---|\n\n- i\n\n<!-- c -->\n\n***\n\n<div>\n\n> q\ntext\n"
    assert outline(text) == [
        Heading(0, 2, "A"),
        Text(1),
        Item(((4, "i"),)),
        Text(10),
        Text(12),
    ]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab -\n\r\x0b\x0c\x85\u2028", max_size=24), st.booleans())
def test_lines_are_cut_where_commonmark_cuts_them_with_or_without_a_carriage_return(text, keepends):
    # Text without "\r" is cut by str.split, the rest by the pattern: both cut after
    # "\r\n", "\r" or "\n" alone (a VT, FF, NEL or U+2028 stays inside its line).
    import re

    cut = [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    starts = [0, *cut]
    ends = [*cut, len(text)]
    expected = [text[s:e] for s, e in zip(starts, ends, strict=True) if s < e]
    if not keepends:
        expected = [line.rstrip("\r\n") if line[-1:] in "\r\n" else line for line in expected]
    assert ol.split_lines(text, keepends=keepends) == expected
