"""Lines of a markdown artifact, cut exactly where markdown-it (CommonMark) cuts them.

``str.splitlines`` is not that: it also breaks on VT, FF, FS, GS, RS, NEL,
U+2028 and U+2029, which CommonMark keeps inside a line. Line numbers from
markdown-it's source map index these lines, and nothing else, so every reader
that pairs them with the file's text splits it here. Kept import-light (only
``re``): the recovery hook reads frontmatter through it.
"""

from __future__ import annotations

import re

# A UTF-8 byte order mark: editors on Windows start files with it; YAML, markdown-it
# and JSON readers that allow it skip it, and so do ours.
BOM = "\ufeff"

# CommonMark's line endings (markdown-it normalizes exactly these to "\n").
_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str, *, keepends: bool = True) -> list[str]:
    """``text`` cut after each ``\\r\\n``, ``\\r`` or ``\\n``; ``"".join`` gives it back."""
    if "\r" not in text:
        # The usual file: "\n" alone ends a line, and str.split cuts there many times
        # faster than the pattern (a frontmatter is read from every artifact of every topic).
        lines = text.split("\n")
        last = lines.pop()  # "" when the text ends with a line break
        if keepends:
            lines = [line + "\n" for line in lines]
        return [*lines, last] if last else lines
    lines = []
    start = 0
    for match in _BREAK.finditer(text):
        lines.append(text[start : match.end() if keepends else match.start()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def is_fence(line: str) -> bool:
    """A frontmatter fence: ``---`` alone on its line, trailing spaces and tabs allowed.

    Trailing whitespace is invisible in an editor; Jekyll, Hugo and
    python-frontmatter all take such a line as the fence, so a careful user does
    too (read as no fence, a whole frontmatter was silently taken for body text).
    """
    return line.rstrip("\r\n").rstrip(" \t") == "---"


def is_blank(line: str) -> bool:
    """Blank as CommonMark means it: only spaces and tabs (a form feed is text)."""
    return not line.strip(" \t\r\n")
