"""The files of an artifact directory: their frontmatter, the topic check, the inventory (§5).

This module sits on the recovery hook's path (DESIGN §14, §15), so it stays
light: record types are namedtuples rather than dataclasses (importing
``dataclasses`` costs ~15 ms, a quarter of the hook's budget), and YAML is
parsed by :mod:`router.plandir.frontmatter` only for a frontmatter the flat scanner
below does not fully understand.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

from router.plandir.flatfields import INT_RE, read_block, usual_block, yaml_decides
from router.plandir.mdlines import BOM, is_fence, split_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from router.plandir.remembered import Remembered

# The id grammar of router.names.ID_RE, copied (under its own name) for the
# hook's light path: importing router.names costs ~8 ms (datetime, unicodedata).
# tests/test_phases.py::test_the_light_id_grammar_is_the_one_of_router_ids keeps them equal.
LIGHT_ID_RE = re.compile(
    r"^(?P<prefix>[A-Za-z][A-Za-z0-9_]*-[0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2})-(?P<topic>[a-z0-9][a-z0-9-]*)$"
)

DESIGN_VERDICTS = ("APPROVE", "REQUEST CHANGES", "COMMENT")
REVIEW_VERDICTS = ("PASS", "FAIL")
# The test-first gate: RED when the new tests fail by assertion and the static checks pass;
# BROKEN when a test errors (import, syntax), passes already, or a static check fails.
TESTS_VERDICTS = ("RED", "BROKEN")
VERIFY_VERDICTS = ("PASS", "FAIL")  # the verifier: every repo's declared checks
FIX_TRACK = "fix"  # task.md's `track: fix`: QUESTION -> PLAN -> IMPLEMENT -> PR, no design

TASK, QUESTIONS, PRD, REPOS = "task.md", "questions.md", "prd.md", "repos.md"
RESEARCH, DESIGN, STRUCTURE, PLAN, PR = (
    "research.md",
    "design.md",
    "structure.md",
    "plan.md",
    "pr.md",
)
PHASE_FILES = (TASK, QUESTIONS, PRD, REPOS, RESEARCH, DESIGN, STRUCTURE, PLAN, PR)
TEMP_PATHS = "temp-paths"
# Any gate's record, by gate, in one pattern (a name is matched once).
_ROUND_NAME = re.compile(r"^(design-review|review|tests|verify)-([0-9]+)\.md$")


def topic_of(topic_id: str) -> str | None:
    """The id minus its ticket or date prefix (``parse_id(id).topic``); None for a non-id."""
    match = LIGHT_ID_RE.fullmatch(topic_id)
    return match["topic"] if match else None


# -- frontmatter: the one reader ------------------------------------------------
#
# Every caller asks "what does this artifact's frontmatter say" here: the inventory
# (the hook, ``phase``, ``status``), the gates, ``record pr``'s reading of pr.md and
# repos.md's reader. The flat scanner (router.plandir.flatfields) answers a block of
# ``key: scalar`` lines, as YAML would and without importing it (the hook's budget);
# any other block goes to YAML (router.plandir.frontmatter). The fields are one
# computation whichever the caller, so no two callers can read a file differently.

FrontmatterFields = namedtuple(
    "FrontmatterFields",
    "fields error present repeated body body_line data",
    defaults=(None, None, 1, None),
)
FrontmatterFields.__doc__ = """Top-level fields as text (``fields``: dict[str, str | None], a list or
mapping in YAML's flow style), why the block could not be read (``error``),
whether a block was there (``present``), the keys given more than once with
each value given (``repeated``; None when there are none: ``fields`` holds the
last), the text after the block (``body``, from line ``body_line``; None when
remembered rather than read) and, when asked for, YAML's typed mapping (``data``:
lists, mappings, numbers; None unless ``typed``)."""


def parse_frontmatter(text: str, *, typed: bool = False) -> FrontmatterFields:
    """The frontmatter of ``text``; never raises (a problem is ``error``).

    ``typed``: also YAML's own mapping (``data``, {} when there is none), for a field
    that is a list or a mapping (``prs``, ``repos``); it imports YAML (~25 ms), so the
    hot paths do not ask. ``fields`` is the same either way.
    """
    if typed:
        return _with_data(parse_by_lines(text, typed=True))
    usual = usual_block(text)
    if usual is not None:
        fields, end = usual
        return FrontmatterFields(fields, None, True, None, text[end:], len(fields) + 3)
    return parse_by_lines(text)


def _with_data(found: FrontmatterFields) -> FrontmatterFields:
    return found if found.data is not None else found._replace(data={})


def parse_by_lines(text: str, *, typed: bool = False) -> FrontmatterFields:
    """:func:`parse_frontmatter` of any text, line by line (what the usual block must equal)."""
    # Cut as markdown-it cuts: ``body_line`` offsets its line numbers into this file.
    lines = split_lines(text, keepends=False)
    if not lines or not is_fence(lines[0].removeprefix(BOM)):
        return FrontmatterFields({}, None, False, None, text, 1)
    for end in range(1, len(lines)):
        if is_fence(lines[end]):
            break
    else:
        never = "line 1: frontmatter opened with --- is never closed"
        return FrontmatterFields({}, never, True, None, text, 1)
    after = _body_at(text, lines, end)
    fields, repeated = read_block(lines[1:end])
    if fields is not None and yaml_decides(text, after):
        fields = None  # a character YAML refuses or reads as a line break: YAML's answer
    if fields is None or typed:
        return _by_yaml(_block(text, lines, end), fields, typed)._replace(
            repeated=repeated or None, body=text[after:], body_line=end + 2
        )
    return FrontmatterFields(fields, None, True, repeated or None, text[after:], end + 2)


def _body_at(text: str, lines: list[str], end: int) -> int:
    """Where the text after the closing fence (line ``end``) starts."""
    if "\r" in text:  # line ends of more than one kind: cut again, keeping them
        return sum(map(len, split_lines(text)[: end + 1]))
    return sum(map(len, lines[: end + 1])) + end + 1  # one past the end: no body


def _block(text: str, lines: list[str], end: int) -> str:
    """The block between the fences, its line ends kept (what YAML reads)."""
    if "\r" in text:
        return "".join(split_lines(text)[1:end])
    return "".join(line + "\n" for line in lines[1:end])


def _by_yaml(raw: str, flat: dict[str, str | None] | None, typed: bool) -> FrontmatterFields:
    """The block as YAML reads it; ``flat``: the scanner's fields, the answer when it has one."""
    from router.plandir.frontmatter import as_text, load_yaml  # YAML: ~25 ms to import

    data, error = load_yaml(raw)
    if data is None:
        return FrontmatterFields({}, error, True)
    if flat is None:
        flat = {k: as_text(v) for k, v in data.items()}
    return FrontmatterFields(flat, None, True, data=data if typed else None)


def read_frontmatter(path: str | os.PathLike[str], *, typed: bool = False) -> FrontmatterFields:
    """The frontmatter of a file on disk; an unreadable file is an error, not an exception."""
    try:
        raw = read_bytes(os.fspath(path))
    except OSError as exc:
        found = _unreadable(exc)
    else:
        found = _frontmatter_of_bytes(raw, typed)
    return _with_data(found) if typed else found


def _unreadable(exc: OSError) -> FrontmatterFields:
    return FrontmatterFields({}, f"cannot be read ({exc.strerror})", False)


def _frontmatter_of_bytes(raw: bytes, typed: bool = False) -> FrontmatterFields:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return FrontmatterFields({}, "is not UTF-8 text", False)
    return parse_frontmatter(text, typed=typed)


def _read_remembering(entry: os.DirEntry[str], remembered: Remembered) -> FrontmatterFields:
    """:func:`read_frontmatter` of a directory entry, from ``remembered`` while the file is the
    one it was read from; what is read from disk is remembered (what could not be, not)."""
    from router.plandir.remembered import stamp

    try:
        identity = stamp([("", entry.stat())])
    except OSError as exc:
        return _unreadable(exc)
    found = _from_json(remembered.get(entry.path, identity))
    if found is not None:
        return found
    try:
        raw = read_bytes(entry.path)
    except OSError as exc:
        return _unreadable(exc)
    found = _frontmatter_of_bytes(raw)
    remembered.put(entry.path, identity, list(found[:4]))  # not the body
    return found


def _from_json(value: object) -> FrontmatterFields | None:
    """A remembered frontmatter as it was put; None for anything else."""
    if not isinstance(value, list) or len(value) != 4:
        return None
    fields, error, present, repeated = value
    if (
        isinstance(fields, dict)
        and (error is None or isinstance(error, str))
        and isinstance(present, bool)
        and (repeated is None or isinstance(repeated, dict))
    ):
        return FrontmatterFields(fields, error, present, repeated)
    return None


def read_bytes(path: str) -> bytes:
    """The file's bytes, by the descriptor: ``open()`` builds a buffered file object per
    call, a large part of reading a small file (``status`` reads every artifact and every
    topic record)."""
    return read_identified(path)[0]


def read_identified(path: str) -> tuple[bytes, os.stat_result]:
    """The file's bytes, and its identity taken before they were read (``fstat`` of the
    descriptor they are read from: the very file, whatever replaces the name meanwhile)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks), info


# -- inventory ------------------------------------------------------------------

Verdict = namedtuple("Verdict", "n verdict path")
Verdict.__doc__ = """A gate record: round ``n``, its verdict (None when unreadable), its path."""

_InventoryBase = namedtuple(
    "_InventoryBase",
    "plan_dir exists files design_revision design_reviews reviews warnings pr_local "
    "tests verifications track",
    defaults=(False, (), (), None),
)


class Inventory(_InventoryBase):
    """What a plan dir holds: phase files, the design revision, gate records, warnings.

    ``files`` is a frozenset of the phase file names present; ``design_reviews``
    and ``reviews`` are tuples of :data:`Verdict` in round order, including
    records whose verdict could not be read (``verdict`` None). ``pr_local`` says
    ``pr.md`` records work finished without a PR. ``tests``
    and ``verifications`` are the test-first gate's and the verifier's rounds;
    ``track`` is ``task.md``'s ``track`` (``fix``: no research, design or structure).
    """

    __slots__ = ()

    def has(self, *names: str) -> bool:
        return all(n in self.files for n in names)

    @property
    def latest_design_review(self) -> Verdict | None:
        return latest(self.design_reviews)

    @property
    def latest_review(self) -> Verdict | None:
        return latest(self.reviews)

    def path(self, name: str) -> str:
        return os.path.join(self.plan_dir, name)


def latest(records: tuple[Verdict, ...]) -> Verdict | None:
    """The highest round whose verdict could be read (an unreadable one is warned about)."""
    readable = [r for r in records if r.verdict is not None]
    return readable[-1] if readable else None


def newest_round(records: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
    """Every record of the highest round (two files can number the same round: ``-1``, ``-01``)."""
    top = max((r.n for r in records), default=None)
    return tuple(r for r in records if r.n == top)


def passes(records: tuple[Verdict, ...], passing: tuple[str, ...]) -> bool:
    """The gate is passed: every record of the highest round is readable and passing.

    An older passing round never stands for a newer one: a newest round that is
    unreadable, or two records of it that disagree, leave the gate undecided.
    """
    newest = newest_round(records)
    return bool(newest) and all(r.verdict in passing for r in newest)


def next_round(records: Iterable[Verdict]) -> int:
    """n for the next record: highest existing round + 1 (unreadable ones count too)."""
    return max((r.n for r in records), default=0) + 1


def inventory(
    plan_dir: str,
    topic_id: str,
    remembered: Remembered | None = None,
    files: list[os.DirEntry[str]] | None = None,
) -> Inventory:
    """Read every phase file and gate record of ``plan_dir``; problems become warnings.

    ``remembered``: the frontmatter a file had when read before, used while the file is
    untouched since (:mod:`router.plandir.remembered`). ``files``: the directory as
    :func:`plan_files` listed it already (what is read is what was listed).
    """
    plan_dir = str(plan_dir)
    try:
        # The directory's entries say which are files (a symlink is followed, as
        # os.path.isfile would): no stat of each artifact before it is read.
        if files is None:
            with os.scandir(plan_dir) as it:
                files = list(it)
        entries = sorted((e.name, e) for e in files)
    except OSError:
        return Inventory(plan_dir, False, frozenset(), None, (), (), ())
    warnings: list[str] = []
    topic = topic_of(topic_id)
    read: dict[str, FrontmatterFields] = {}
    # Each gate's records, in name order, sorted out as the directory is read (one match
    # a name): (round, path, frontmatter).
    rounds: dict[str, list[tuple[int, str, FrontmatterFields]]] = {}
    for name, entry in entries:
        if name in PHASE_FILES:
            if _is_file(entry):
                read[name] = _checked(entry, topic, warnings, remembered)
            continue
        match = _ROUND_NAME.match(name)
        if match is not None and _is_file(entry):
            fm = _checked(entry, topic, warnings, remembered)
            rounds.setdefault(match[1], []).append((int(match[2]), entry.path, fm))
    pr = read[PR].fields if PR in read else {}
    revision = _revision(read.get(DESIGN), os.path.join(plan_dir, DESIGN), warnings)
    design_reviews = _verdicts(rounds.get("design-review", ()), DESIGN_VERDICTS, warnings)
    reviews = _verdicts(rounds.get("review", ()), REVIEW_VERDICTS, warnings)
    tests = _verdicts(rounds.get("tests", ()), TESTS_VERDICTS, warnings)
    verifications = _verdicts(rounds.get("verify", ()), VERIFY_VERDICTS, warnings)
    # Every gate is read before the warnings are taken: each one's problems are named.
    return Inventory(
        plan_dir,
        True,
        frozenset(read),
        revision,
        design_reviews,
        reviews,
        tuple(warnings),
        pr.get("local") == "true",
        tests,
        verifications,
        read[TASK].fields.get("track") if TASK in read else None,
    )


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False  # as os.path.isfile: a file that cannot be stat'ed is not one


def _checked(
    entry: os.DirEntry[str], topic: str | None, warnings: list[str], remembered: Remembered | None
) -> FrontmatterFields:
    """The file's frontmatter; one that cannot be read is warned about and reads as empty."""
    path = entry.path
    fm = read_frontmatter(path) if remembered is None else _read_remembering(entry, remembered)
    if fm.error:
        warnings.append(f"{path}: {fm.error}; its frontmatter is ignored")
        return FrontmatterFields({}, fm.error, fm.present)
    found = fm.fields.get("topic")
    if fm.present and found is not None and topic is not None and found != topic:
        warnings.append(
            f"{path}: frontmatter topic {found!r} disagrees with the directory's topic {topic!r}"
        )
    return fm


def _conflicting(
    fm: FrontmatterFields,
    key: str,
    read: Callable[[str | None], object],
    warnings: list[str],
    *,
    path: str,
    then: str,
) -> bool:
    """``key`` is given more than once with values that ``read`` differently: warned about.

    Whichever came last is not the answer (YAML would keep it silently); the
    caller takes the safe side instead, which ``then`` tells the user.
    """
    given = (fm.repeated or {}).get(key, [])
    if len({read(v) for v in given}) < 2:
        return False
    shown = ", ".join(repr(v) for v in given)
    warnings.append(f"{path}: {key} is given {len(given)} times ({shown}); keep one; {then}")
    return True


def _revision(fm: FrontmatterFields | None, path: str, warnings: list[str]) -> int | None:
    if fm is None:
        return None
    fields = fm.fields
    if "revision" not in fields:
        return 0  # the first draft answers no review round
    if _conflicting(fm, "revision", str, warnings, path=path, then="read as 0"):
        return 0  # the safe side, as for an unreadable revision below: redraft once more
    raw = fields["revision"]
    if raw is not None and INT_RE.match(raw):
        return int(raw)
    # Read as 0 (redraft), the safe side: an unread round is redrafted once more,
    # never sent back to review unanswered. Said, not silent: an empty or
    # misspelt revision is a draft that meant to answer a round.
    shown = "empty" if raw is None else repr(raw)
    warnings.append(
        f"{path}: frontmatter field revision is {shown}, not a whole number "
        "(write `revision: N`, N the review round this draft answers); read as 0"
    )
    return 0


def normalize_verdict(value: str | None) -> str:
    """``request  changes`` -> ``REQUEST CHANGES``: case and spacing do not matter."""
    return " ".join((value or "").upper().replace("_", " ").split())


# GitHub's review states (``gh pr review``, the API's ``state``), read as each
# gate's own word: ``APPROVED`` is no less a pass than ``approve`` or ``Pass``.
_GITHUB_STATES = {
    REVIEW_VERDICTS: {"APPROVED": "PASS", "CHANGES REQUESTED": "FAIL"},
    DESIGN_VERDICTS: {
        "APPROVED": "APPROVE",
        "CHANGES REQUESTED": "REQUEST CHANGES",
        "COMMENTED": "COMMENT",
    },
}


def read_verdict(value: str | None, allowed: tuple[str, ...]) -> str | None:
    """The gate's word for ``value`` (any case and spacing, or GitHub's state); None if none."""
    word = normalize_verdict(value)
    word = _GITHUB_STATES.get(allowed, {}).get(word, word)
    return word if word in allowed else None


def _verdicts(
    records: Iterable[tuple[int, str, FrontmatterFields]],
    allowed: tuple[str, ...],
    warnings: list[str],
) -> tuple[Verdict, ...]:
    found = []
    for n, path, fm in records:
        verdict = read_verdict(fm.fields.get("verdict"), allowed)
        undecided = "this round is not counted as decided"
        if _conflicting(
            fm, "verdict", lambda v: read_verdict(v, allowed), warnings, path=path, then=undecided
        ):
            verdict = None
        elif verdict is None:
            warnings.append(
                f"{path}: verdict {fm.fields.get('verdict')!r} is not one of "
                f"{', '.join(allowed)}; {undecided}"
            )
        found.append(Verdict(n, verdict, path))
    ordered = tuple(sorted(found, key=lambda v: (v.n, v.path)))
    for i in range(1, len(ordered)):
        before, after = ordered[i - 1], ordered[i]
        if before.n == after.n:
            warnings.append(
                f"{after.path}: round {after.n} is also recorded by {before.path}; "
                "keep one of them (the round passes only when both pass)"
            )
    return ordered


RecordedPr = namedtuple("RecordedPr", "repo url")
RecordedPr.__doc__ = (
    """One repo's PR as ``pr.md`` records it (``prs:``): the repo's name in the topic."""
)

# The home repo's name in a topic: what repos.md calls it, the repo of its record, its PR in pr.md.
HOME = "home"


def recorded_prs(path: str | os.PathLike[str]) -> tuple[RecordedPr, ...]:
    """Every repo's PR ``pr.md`` records, in the order they were recorded; () for none.

    ``prs:`` lists one entry per repo (``record pr ... --repo``); a ``pr.md`` with only
    ``url:`` (written before ``prs:`` existed) records the home repo's PR. A local
    finish, or a file that cannot be read, records none.
    """
    data = read_frontmatter(path, typed=True).data  # YAML: prs is a list of mappings
    if data.get("phase") != "pr":
        return ()
    listed = data.get("prs")
    if isinstance(listed, list):
        return tuple(
            RecordedPr(str(item["repo"]), str(item["url"]))
            for item in listed
            if isinstance(item, dict) and item.get("repo") and item.get("url")
        )
    url = data.get("url")
    return (RecordedPr(HOME, str(url)),) if url else ()


def newest_mtime(plan_dir: str) -> float | None:
    """The newest mtime of the files directly in ``plan_dir``; None when it holds none."""
    return newest_of(plan_files(plan_dir))


def newest_of(files: list[os.DirEntry[str]] | None) -> float | None:
    """The newest mtime of :func:`plan_files`' entries; None for none."""
    return max((e.stat().st_mtime for e in files), default=None) if files else None


def plan_files(plan_dir: str) -> list[os.DirEntry[str]] | None:
    """The files directly in ``plan_dir`` (a symlink followed, as os.path.isfile would), each
    stat'ed once (the entry keeps it); None when the directory or one of them cannot be."""
    try:
        with os.scandir(plan_dir) as it:
            files = [e for e in it if e.is_file()]
        for entry in files:
            entry.stat()
    except OSError:
        return None
    return files


def read_temp_paths(plan_dir: str | os.PathLike[str]) -> list[str]:
    """The plan dir's recorded temp paths, each once (teardown reads them before the plan dir goes)."""
    try:
        # surrogateescape: a path that is not UTF-8 is still the bytes of a real path.
        with open(os.path.join(plan_dir, TEMP_PATHS), "rb") as fh:
            raw = fh.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return []
    text = raw.decode("utf-8", "surrogateescape")
    seen: dict[str, None] = {}
    # One path a line, split at "\n" alone: splitlines() and universal newlines
    # also break at "\r", "\x0c", "\x1c", "\u2028" ..., all legal in a file name,
    # and would name the part before it, a path nobody recorded.
    for line in text.split("\n"):
        if line.strip():
            seen.setdefault(line.rstrip("\r"), None)
    return list(seen)
