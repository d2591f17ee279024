"""The artifact directory: locating plan dirs and reading/writing ``repos.md`` (DESIGN §5, §6)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from router.errors import ErrorCode, RouterError
from router.names import SLUG_RE, BadSparseDir, sparse_dirs
from router.plandir.artifacts import HOME, parse_frontmatter
from router.plandir.mdlines import BOM, is_blank, split_lines
from router.plandir.outline import Heading, Outline, Text, outline
from router.records import field, record

REPOS_MD = "repos.md"
# A list of repos is a few KiB; parsing 50 MB took 90 s and 2 GB while the
# topic lock was held, so anything past this is refused before it is read.
MAX_REPOS_MD = 1024 * 1024

_FIELD_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?\s*(?P<key>name|path|role|sparse)\s*"
    r"(?::\s*(?:\*\*|__)|(?:\*\*|__)\s*:|:)\s*(?P<value>.*?)\s*$",
    re.IGNORECASE,
)


@record
class RepoSpec:
    """One repo listed in ``repos.md``."""

    name: str
    path: Path
    role: str
    line: int  # 1-based line of the item in repos.md
    path_line: int = 0  # 1-based line of its **path:** field
    # **sparse:** the directories its worktree checks out (DESIGN §7); None: the whole tree.
    sparse: tuple[str, ...] | None = None


@record
class ReposFile:
    """``repos.md`` read: the home repo, the secondaries, and where its Worktrees section is."""

    home: RepoSpec
    secondaries: tuple[RepoSpec, ...]
    text: str
    worktrees_span: tuple[int, int] | None  # 0-based [start, end) lines of "## Worktrees"


def _error(line: int, message: str) -> RouterError:
    return RouterError(ErrorCode.REPOS_MD, f"repos.md line {line}: {message}")


def read_repos_md(path: Path) -> ReposFile:
    """Parse ``repos.md``; every problem is exit 2 ``repos-md`` naming its line."""
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            # Bounded as well as stat'ed: a file that grows (or a device behind
            # the name) must not be read past the limit either.
            raw = fh.read(MAX_REPOS_MD + 1) if size <= MAX_REPOS_MD else b""
    except OSError as exc:
        raise RouterError(ErrorCode.REPOS_MD, f"{path}: cannot be read ({exc.strerror})") from None
    if size > MAX_REPOS_MD or len(raw) > MAX_REPOS_MD:
        what = f"{size} bytes" if size > MAX_REPOS_MD else f"more than {MAX_REPOS_MD} bytes"
        raise RouterError(
            ErrorCode.REPOS_MD,
            f"{path} is {what}; a repos.md may have at most {MAX_REPOS_MD} bytes "
            "(1 MiB): it lists repos, not data — cut it down",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _error(line, "is not UTF-8 text; save the file as UTF-8") from None
    return parse_repos_md(text)


def parse_repos_md(text: str) -> ReposFile:
    fm = parse_frontmatter(text)
    if fm.error:
        raise RouterError(ErrorCode.REPOS_MD, f"repos.md {fm.error}")
    # A BOM with no frontmatter after it is still on the first line: it would hide that
    # heading (the frontmatter reader skips one only before a frontmatter fence).
    found = outline(fm.body.removeprefix(BOM))  # one read: the sections and the Worktrees span
    sections = _sections(found, fm.body_line - 1)
    _check_text(sections)
    home = sections.get(_HOME)
    if home is None or not home.items:
        raise _error(1, "no '## Home repo' section with the home repo's name and path")
    home_spec = _home_spec(home.items)
    secondaries = tuple(_item_spec(item) for item in _items(sections, _ADDITIONAL))
    _check_unread(sections)
    _check_names(home_spec, secondaries)
    return ReposFile(home_spec, secondaries, text, _span_in(found, fm.body_line - 1))


# -- sections -------------------------------------------------------------------

_Item = list[tuple[int, str]]  # (1-based line, text) of every line of text in one list item
_HOME, _ADDITIONAL = "home repo", "additional repos"
_READ = (_HOME, _ADDITIONAL, "worktrees")
_UNREAD = ""  # the items outside any level-2 section (before one, or after a level-1 heading)
# The entry formats, shown wherever a repo section holds something that is not one.
_ENTRY = "`- **name:** api` with `  **path:** /abs/path/api` on the next line"
_HOME_ENTRY = "`- **name:** web` and `- **path:** /abs/path/web`"


@record
class _Section:
    """One level-2 section (all of those with its title): its list items and its other text."""

    title: str  # as first written
    items: list[_Item] = field(default_factory=list)
    texts: list[int] = field(default_factory=list)  # 1-based first lines of its blocks of text


def _sections(found: Outline, offset: int) -> dict[str, _Section]:
    """Level-2 sections by lowercased title.

    What lies outside any level-2 section (before one, or after a level-1 heading) is under ``""``.
    """
    sections: dict[str, _Section] = {}
    current = sections.setdefault(_UNREAD, _Section(""))
    for part in found:
        if isinstance(part, Heading):
            _check_level(part, offset)
            if part.level == 2:
                current = sections.setdefault(part.title.lower(), _Section(part.title))
            elif part.level == 1:
                current = sections[_UNREAD]
        elif isinstance(part, Text):
            current.texts.append(offset + part.line + 1)
        else:
            current.items.append([(offset + line + 1, text) for line, text in part.lines])
    return sections


def _items(sections: dict[str, _Section], title: str) -> list[_Item]:
    found = sections.get(title)
    return found.items if found is not None else []


def _check_level(heading: Heading, offset: int) -> None:
    """A section read from repos.md, written at another level, is an error.

    Only a level-2 heading starts one: a ``### Additional repos`` under
    ``## Home repo`` merged its repos into the home section, where they were
    never read.
    """
    if heading.level != 2 and heading.title.lower() in _READ:
        raise _error(
            offset + heading.line + 1,
            f"the heading {heading.title!r} is level {heading.level}, and only a level-2 "
            "heading starts a section of repos.md (its repos would be read as part of "
            f"another section, or not at all); make it a level-2 heading '## {heading.title}'",
        )


def _check_text(sections: dict[str, _Section]) -> None:
    """Text in a repo section that is not a list item is an error: only items are read.

    A repo written as a plain line (``api /abs/path/api``) or a table row read as
    no repo at all, and ``worktrees`` made fewer worktrees than were listed.
    """
    for key, example in ((_HOME, _HOME_ENTRY), (_ADDITIONAL, _ENTRY)):
        section = sections.get(key)
        if section is not None and section.texts:
            raise _error(
                section.texts[0],
                f"text under '## {section.title}' that is not a list item is not read "
                "(a repo written as a plain line or a table row would be skipped); "
                f"write each repo as a list item, {example}, and move any notes "
                "under a heading of their own such as '## Notes'",
            )


def _worktrees_span(body: str, offset: int) -> tuple[int, int] | None:
    return _span_in(outline(body.removeprefix(BOM)), offset)


def _span_in(found: Outline, offset: int) -> tuple[int, int] | None:
    headings = [
        (part.line + offset, part.level, part.title.lower())
        for part in found
        if isinstance(part, Heading)
    ]
    for n, (line, level, title) in enumerate(headings):
        if level == 2 and title == "worktrees":
            end = next((ln for ln, lv, _ in headings[n + 1 :] if lv <= 2), None)
            return line, end if end is not None else -1
    return None


def _fields(item: _Item) -> dict[str, tuple[int, str]]:
    """The item's fields, the first of each key."""
    found: dict[str, tuple[int, str]] = {}
    for line, text in item:
        match = _FIELD_RE.match(text)
        if match:
            value = match["value"].strip().strip("`").strip()
            found.setdefault(match["key"].lower(), (line, value))
    return found


def _second(item: _Item) -> tuple[int, str, int] | None:
    """The first repeated name or path: its line, its key and the line of the first one.

    Only the first of each is read: a second one is a second repo that would be
    skipped silently (a nested list of repos; a repo written in the home section).
    """
    seen: dict[str, int] = {}
    for line, text in item:
        match = _FIELD_RE.match(text)
        key = match["key"].lower() if match else ""
        if key in ("name", "path"):
            if key in seen:
                return line, key, seen[key]
            seen[key] = line
    return None


def _home_spec(items: list[_Item]) -> RepoSpec:
    merged: _Item = [entry for item in items for entry in item]
    second = _second(merged)
    if second is not None:
        line, key, before = second
        raise _error(
            line,
            f"a second **{key}:** under '## Home repo' (the first is on line {before}); "
            "that section names the home repo only: list additional repos under "
            "'## Additional repos'",
        )
    fields = _fields(merged)
    first = merged[0][0] if merged else 1
    if "name" not in fields and "path" not in fields:
        shown = merged[0][1].strip() if merged else ""
        raise _error(
            first,
            f"'## Home repo' names no repo ({shown!r} is neither a **name:** nor a **path:**); "
            f"write it as {_HOME_ENTRY}",
        )
    name = fields.get("name", (first, HOME))[1] or HOME
    return _spec(name, fields, first, _HOME_ENTRY)


def _item_spec(item: _Item) -> RepoSpec:
    first = item[0][0] if item else 1
    second = _second(item)
    if second is not None:
        raise _error(
            second[0],
            f"a second **{second[1]}:** in the item of line {first}; "
            "list each additional repo as its own top-level item",
        )
    fields = _fields(item)
    if "name" not in fields or not fields["name"][1]:
        shown = item[0][1].strip() if item else ""
        raise _error(
            first, f"an additional repo ({shown!r}) has no **name:**; write each as {_ENTRY}"
        )
    return _spec(fields["name"][1], fields, first, _ENTRY)


def _spec(name: str, fields: dict[str, tuple[int, str]], first: int, example: str) -> RepoSpec:
    if "path" not in fields or not fields["path"][1]:
        raise _error(first, f"repo {name!r} has no **path:**; write each as {example}")
    line, raw_path = fields["path"]
    if not os.path.isabs(raw_path):
        raise _error(line, f"path {raw_path!r} of {name!r} is not absolute; write the full path")
    if "\0" in raw_path:
        raise _error(line, f"path of {name!r} contains a NUL byte")
    role = fields.get("role", (first, ""))[1]
    return RepoSpec(name, Path(raw_path), role, first, line, _sparse(name, fields))


def _sparse(name: str, fields: dict[str, tuple[int, str]]) -> tuple[str, ...] | None:
    if "sparse" not in fields:
        return None
    line, value = fields["sparse"]
    try:
        dirs = sparse_dirs([value])
    except BadSparseDir as exc:
        raise _error(line, f"**sparse:** of {name!r}: {exc}") from None
    if not dirs:
        raise _error(
            line, f"**sparse:** of {name!r} names no directory; name some, or drop the line"
        )
    return dirs


def _check_unread(sections: dict[str, _Section]) -> None:
    """A repo (an item with a name and a path) outside the sections read is an error, not skipped."""
    for title, section in sections.items():
        if title in _READ:
            continue
        for item in section.items:
            fields = _fields(item)
            if "name" in fields and "path" in fields:
                where = f"under '## {title}'" if title != _UNREAD else "outside any ## section"
                raise _error(
                    item[0][0],
                    f"repo {fields['name'][1]!r} is listed {where}, which is not read; "
                    "list additional repos under '## Additional repos'",
                )


def _check_names(home: RepoSpec, secondaries: Iterable[RepoSpec]) -> None:
    seen = {home.name: home.line}
    for spec in secondaries:
        if not SLUG_RE.fullmatch(spec.name):
            raise _error(
                spec.line,
                f"name {spec.name!r} is not a slug; use lowercase letters, digits and '-'",
            )
        if spec.name == HOME:
            raise _error(spec.line, "the name 'home' is reserved for the home repo")
        if spec.name in seen:
            raise _error(spec.line, f"name {spec.name!r} is already used on line {seen[spec.name]}")
        seen[spec.name] = spec.line


# -- write-back ---------------------------------------------------------------


@record
class WorktreeLine:
    """One line of repos.md's ``## Worktrees`` section: a repo's name and worktree path."""

    name: str
    path: str

    @property
    def placed(self) -> Path | None:
        """The worktree this line places, when its path is absolute (relative to nothing else)."""
        return Path(self.path) if os.path.isabs(self.path) else None


def with_worktrees_section(parsed: ReposFile, entries: list[WorktreeLine]) -> str:
    """``repos.md`` with its ``## Worktrees`` section replaced or appended; all else byte-equal."""
    text = parsed.text
    newline = "\r\n" if "\r\n" in text else "\n"
    # Plain formatting, not a template: importing jinja2 cost more than the
    # rest of the write-back, and these lines are what worktree_lines() reads.
    section = "## Worktrees\n" + "".join(f"- {e.name}: {e.path}\n" for e in entries)
    if newline != "\n":
        section = section.replace("\n", newline)
    if parsed.worktrees_span is None:
        return _checked_append(text, _appended(text, section, newline))
    # The span is in markdown-it's line numbers: cut the text exactly as it does.
    lines = split_lines(text)
    start, end = parsed.worktrees_span
    end = len(lines) if end < 0 else end
    old = lines[start:end]
    # Keep the blank lines that separated the old section from what follows.
    trailing = len(old) - len(_rstrip_blank(old))
    return (
        "".join(lines[:start])
        + section
        + "".join(old[len(old) - trailing :])
        + "".join(lines[end:])
    )


def _appended(text: str, section: str, newline: str) -> str:
    # A "\n" right after a lone "\r" would fuse with it into one "\r\n" (and
    # turn the file's line endings into CRLF for the next run): follow the "\r".
    sep = "\r" if text.endswith("\r") and newline == "\n" else newline
    prefix = text if not text or text.endswith(("\n", "\r")) else text + sep
    lines = split_lines(prefix)
    if lines and not is_blank(lines[-1]):
        prefix += sep
    return prefix + section


def _checked_append(text: str, result: str) -> str:
    """``result`` if a rerun finds the appended section; else refuse rather than append twice.

    A file that ends inside a code fence or an HTML block swallows any heading
    after it, so every run would append another copy.
    """
    fm = parse_frontmatter(result)
    if _worktrees_span(fm.body, fm.body_line - 1) is None:
        last = len(split_lines(text))
        raise RouterError(
            ErrorCode.REPOS_MD,
            f"repos.md line {last}: the file ends inside a block (a code fence or an HTML "
            "block) that would swallow an appended ## Worktrees section; close that block, "
            "then run this again",
        )
    return result


def _rstrip_blank(lines: list[str]) -> list[str]:
    out = list(lines)
    while out and is_blank(out[-1]):
        out.pop()
    return out


# -- reading the ## Worktrees section (phase inference, status) --------------------

_WORKTREE_ITEM = re.compile(
    r"^\s*[-*+]\s+(?P<name>[A-Za-z0-9][A-Za-z0-9_-]*)\s*:\s*(?P<path>\S.*?)\s*$"
)


def worktree_lines(source: str | ReposFile) -> list[WorktreeLine]:
    """The one reader of ``## Worktrees``: every ``- <name>: <path>`` item, the first per name.

    The section is found with the same token walk the write-back uses, so the
    two agree on where it starts and ends; lines that are not items are
    skipped. Paths are as written (a code span's backticks dropped): a relative
    one places nothing (see :attr:`WorktreeLine.placed`), and doctor names it.
    """
    if isinstance(source, str):
        fm = parse_frontmatter(source)
        lines = _section_body(source, _worktrees_span(fm.body, fm.body_line - 1))
    else:
        lines = _section_body(source.text, source.worktrees_span)
    found: dict[str, WorktreeLine] = {}
    for line in lines:
        match = _WORKTREE_ITEM.match(line)
        if match and match["name"] not in found:
            found[match["name"]] = WorktreeLine(match["name"], match["path"].strip("`"))
    return list(found.values())


def _section_body(text: str, span: tuple[int, int] | None) -> list[str]:
    if span is None:
        return []
    lines = split_lines(text, keepends=False)
    start, end = span
    return lines[start + 1 : len(lines) if end < 0 else end]
