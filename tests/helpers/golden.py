"""Whole-output tests: a scenario's every command pinned in full in ``tests/golden/<name>.txt``.

A :class:`Transcript` runs real team-router commands (in-process, as ``run_cli`` does) on
real git, and records each one as a section: the command line, its exit code, its stdout
and its stderr, text and ``--json`` alike. Only what varies between runs is normalised:

- the test's temporary directory -> ``<tmp>`` (its real path too), the checkout the tests
  run from -> ``<checkout>``;
- commit and object ids -> ``<sha:N>``, numbered by first appearance in the transcript (an
  abbreviation of an id seen whole gets that id's number);
- this process's id -> ``<pid>``, another process the test named (``name_process``) -> its
  name; today's date -> ``<today>``; a time of day -> ``<time>``;
- a holder's process start time, clock time and host name (``hold``'s JSON) -> ``<start>``,
  ``<since>``, ``<host>``;
- an elapsed time (``"seconds": 0.014``, ``in 0.05 s``) -> ``<seconds>``; how a file's data
  was copied (``reflink``, ``copy_file_range``, ``bytes``: the filesystem's choice) ->
  ``<copy>``; the random part of a directory team-router made with ``mkdtemp``
  (``team-router-demo-ii72m8l2``) -> ``<random>``.

Everything else is compared byte for byte. ``pytest tests/test_golden.py --update-golden``
rewrites every file instead, so a change of wording is reviewed in the diff.
"""

from __future__ import annotations

import datetime
import difflib
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from helpers.repos import CliResult, run_cli

CHECKOUT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = CHECKOUT / "tests" / "golden"
UPDATE_OPTION = "--update-golden"

# A full object id (SHA-1 or SHA-256), or an abbreviation of one: 7 to 39 hex digits. The
# lookarounds keep a run inside a longer word or path (a topic id, a version) out.
_FULL_ID = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-f]{64}|[0-9a-f]{40})(?![0-9A-Za-z])")
_SHORT_ID = re.compile(r"(?<![0-9A-Za-z<:-])[0-9a-f]{7,39}(?![0-9A-Za-z>-])")
# A holder's identity beyond its pid (router.topic.holders): the process's start in clock
# ticks, when it was recorded and the machine's name.
_HOLDER = (
    (re.compile(r'("start_time": )"\d+"'), r'\1"<start>"'),
    (re.compile(r'("since": )\d+(?:\.\d+)?'), r'\1"<since>"'),
    (re.compile(r'("host": )"[^"]*"'), r'\1"<host>"'),
)
# How long a step took, and how the filesystem let files be copied (router.filecopy.Method).
_MEASURED = (
    (re.compile(r'("seconds": )\d+(?:\.\d+)?'), r'\1"<seconds>"'),
    (re.compile(r"\b(in )\d+\.\d+( s)\b"), r"\1<seconds>\2"),
    (re.compile(r'("method": )"(?:reflink|copy_file_range|bytes)"'), r'\1"<copy>"'),
    (re.compile(r"\b(by )(?:reflink|copy_file_range|bytes)\b"), r"\1<copy>"),
    (re.compile(r"\b(team-router-[a-z-]+?-)[a-z0-9_]{8}\b"), r"\1<random>"),
)
_TIME = re.compile(r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b")


@dataclass
class Normaliser:
    """Rewrites what differs between two runs of the same scenario; ids keep their numbers
    across every section of one transcript."""

    tmp: Path
    ids: dict[str, int] = field(default_factory=dict)
    processes: dict[int, str] = field(default_factory=dict)

    def __call__(self, text: str) -> str:
        for root in sorted({str(self.tmp), os.path.realpath(self.tmp)}, key=len, reverse=True):
            text = text.replace(root, "<tmp>")
        # The checkout team-router runs from (init names it for the plugin): any clone.
        text = text.replace(str(CHECKOUT), "<checkout>")
        text = _FULL_ID.sub(lambda m: f"<sha:{self._number(m.group())}>", text)
        text = _SHORT_ID.sub(self._short, text)
        # A pid only where it is named one: a bare number may be a count or a PR's.
        text = re.sub(rf"(\bpid\W{{1,4}}){os.getpid()}\b", r"\1<pid>", text, flags=re.I)
        for pid, name in self.processes.items():
            text = re.sub(rf"(?<![\w.]){pid}(?![\w.])", name, text)
        for pattern, replacement in (*_HOLDER, *_MEASURED):
            text = pattern.sub(replacement, text)
        for day in _today():
            text = text.replace(day, "<today>")
        return _TIME.sub("<time>", text)

    def _number(self, sha: str) -> int:
        if sha not in self.ids:
            # A full id whose abbreviation came first takes the abbreviation's number.
            short = next((s for s in self.ids if len(s) < len(sha) and sha.startswith(s)), None)
            self.ids[sha] = self.ids[short] if short else max(self.ids.values(), default=0) + 1
        return self.ids[sha]

    def _short(self, match: re.Match[str]) -> str:
        token = match.group()
        full = next((sha for sha in self.ids if sha.startswith(token)), None)
        if full is None and not (re.search(r"[a-f]", token) and re.search(r"\d", token)):
            return token  # all digits (a count) or all letters (a word), and no id's prefix
        return f"<sha:{self._number(full or token)}>"


def _today() -> tuple[str, ...]:
    # Both ends of a run that crosses midnight UTC, in local time and in UTC.
    now = datetime.datetime.now()
    utc = datetime.datetime.now(datetime.UTC)
    return tuple({d.strftime("%Y-%m-%d") for d in (now, utc)})


@dataclass
class Transcript:
    """The sections of one scenario, normalised as they are recorded."""

    name: str
    tmp: Path
    update: bool
    sections: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.normalise = Normaliser(self.tmp)

    def name_process(self, pid: int, name: str) -> None:
        """Write another process's id (a session the test started) as ``name``."""
        self.normalise.processes[pid] = name

    def note(self, text: str) -> None:
        """A line saying what the scenario did between commands (set-up is not output)."""
        self.sections.append(f"### {self.normalise(text)}\n")

    def run(self, *args: str, cwd: Path | None = None, stdin: str | None = None) -> CliResult:
        """Run ``team-router args`` in ``cwd`` and record the whole of what it said."""
        res = run_cli(*args, cwd=cwd, stdin=stdin)
        where = f" (in {cwd})" if cwd is not None else ""
        head = self.normalise(f"$ team-router {shlex.join(args)}{where}")
        if stdin is not None:
            head += f"\n--- stdin\n{_block(self.normalise(stdin))}".rstrip("\n")
        self.sections.append(
            f"{head}\n"
            f"--- exit {res.code}\n"
            f"--- stdout\n{_block(self.normalise(res.out))}"
            f"--- stderr\n{_block(self.normalise(res.err))}"
        )
        return res

    def text(self) -> str:
        return "\n".join(self.sections)

    def check(self) -> None:
        """Compare with ``tests/golden/<name>.txt`` (or rewrite it under ``--update-golden``)."""
        path = GOLDEN_DIR / f"{self.name}.txt"
        actual = self.text()
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != actual:
                path.write_text(actual, encoding="utf-8")
            return
        if not path.exists():
            raise AssertionError(f"{path} is missing: run pytest {UPDATE_OPTION} to write it")
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                f"golden/{self.name}.txt",
                "actual",
            )
            raise AssertionError(
                f"output differs from golden/{self.name}.txt (review, then rewrite it with "
                f"{UPDATE_OPTION}):\n" + "".join(diff)
            )


def _block(text: str) -> str:
    """``text`` as lines; a missing final newline is said, not lost."""
    if not text:
        return ""
    return text if text.endswith("\n") else text + "\n<no newline at end>\n"
