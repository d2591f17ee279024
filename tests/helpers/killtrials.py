"""Randomized kill trials over ``worktrees`` and ``teardown --integrate`` on six repos.

One trial, reproducible from its seed (all but the instant the signal lands):

1. a home repo ``web`` and five sibling secondaries, each with a local bare
   origin; a topic made by ``new``; a repos.md naming all six (DESIGN §6);
2. ``team-router worktrees`` started as a real process in a process group of its
   own, killed after a random delay with SIGKILL to the process, SIGKILL to its
   group or SIGINT to its group (what Ctrl-C in a shell sends), then run again;
3. work made in the worktrees: commits, an uncommitted modification, an
   untracked file, a partially staged hunk (a staged version, then the file
   changed again), every piece remembered by its object id;
4. ``team-router teardown <id> --integrate`` killed the same way and run again:
   with nothing dirty; or with dirt and ``--force`` (a snapshot must keep it);
   or with dirt and no ``--force`` (the rerun must refuse).

After each rerun the invariants are checked, exactly:

- every commit made is reachable from some ref (``git rev-list --all``,
  snapshot refs included), itself or its cherry-pick (same patch id);
- every uncommitted file content and every staged blob is reachable: still in
  its worktree (on disk, or in that worktree's index for a staged blob) or in
  the tree of some ref (``git rev-list --all --objects``);
- every primary clone is clean (``git status --porcelain --untracked-files=all``
  is empty), on its default branch, and idle: no cherry-pick, merge, revert,
  rebase or bisect in progress, no ``*.lock`` left in its git dir, no topic lock
  still held;
- the rerun exits 0 having finished (every repo has its worktree; every worktree
  and branch is gone after a teardown), or exits non-zero with a JSON ``error``
  whose message names a fix; no traceback either way;
- a SIGINT'd run that had not yet printed its answer exits 130; no
  KeyboardInterrupt ever escapes the entry point's ``main()`` as a traceback.

This module is imported by ``tests/test_kill_random.py`` (a few trials, fixed seed)
and ``bench/kill_trials.py`` (a long run). It runs git itself only to build the
fixture and to check; everything under test runs as ``team-router`` processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import random
import re
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

from helpers.faults import spawn
from helpers.repos import branches, commit, git, make_repo, status, worktree_paths, write
from helpers.topics import new_topic, write_repos_md

TOPIC = "2026-05-01-kill-trial"
HOME = "home"  # the home repo's name in the topic (its directory is ``web``)
SECONDARIES = ("api", "auth", "billing", "search", "shared")
DRAIN_TIMEOUT = 60.0  # seconds a killed command's leftover git processes get to exit
RUN_TIMEOUT = 300.0  # seconds a run gets before it counts as hung
INTERRUPT_TIMEOUT = 60.0  # seconds a command gets to stop after SIGINT

# The moment to kill at: a seeded fraction (0 to LATE) of the command's usual run
# time, so most kills land inside it and some after it finished (a kill that never
# fired leaves a plain second run, also worth a check). See Pace.
DEFAULT_WINDOWS = {"worktrees": 1.2, "teardown": 1.6}
LATE = 1.1
WHEN_SPAN = 0.015  # seconds after the awaited git subcommand starts (see Pace.when)

# State a command leaves in a git dir when it stops half-way.
BUSY_MARKERS = (
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "MERGE_HEAD",
    "sequencer",
    "rebase-merge",
    "rebase-apply",
    "BISECT_LOG",
)

# A message "names a fix" when it shows a command (in backquotes) or a flag to
# pass, or tells the user what to do with one of these verbs (looked for outside
# the paths it names: a path such as /var/run/... says nothing about a fix).
FIX = re.compile(
    r"`[^`]+`|(?<![\w-])--[a-z][a-z-]+|\b(?:run|rerun|commit them|commit or|discard|stash|"
    r"switch|pass|wait|release|resolve|abort|restore|push|move|install|cd)\b"
)
PATH = re.compile(r"[^\s`]*/[^\s`]*")


# A traceback frame of the console entry point's main(): the router was running.
ENTRY_FRAME = re.compile(r'router[/\\]entry\.py", line \d+, in main\b')


class KillKind(StrEnum):
    PROCESS = "sigkill-process"  # the router dies; git it started runs on
    GROUP = "sigkill-group"  # the router and every git it started die at once
    INTERRUPT = "sigint-group"  # Ctrl-C: everything gets SIGINT


class Mode(StrEnum):
    CLEAN = "clean"  # nothing uncommitted: --integrate must finish
    FORCE = "force"  # dirt, --integrate --force: a snapshot must keep it
    REFUSE = "refuse"  # dirt, --integrate alone: the rerun must refuse


class WorkKind(StrEnum):
    COMMIT = "commit"
    FILE = "file"  # uncommitted content in the worktree (modified or untracked)
    STAGED = "staged"  # a blob in the worktree's index that differs from the file on disk


@dataclass(frozen=True, slots=True)
class Work:
    """One piece of work made in a worktree, and its object id (commit or blob)."""

    repo: str
    kind: WorkKind
    oid: str
    path: str = ""  # relative to the worktree (files and staged blobs)
    patch_id: str = ""  # commits: what a cherry-pick of it keeps


@dataclass(frozen=True, slots=True)
class Kill:
    command: str
    kind: KillKind
    fraction: float  # of the window: the seeded part of the moment
    window: float  # seconds: the command's usual run time as learnt then (see Pace)
    delay: float  # seconds after the start: fraction x window (when fired: measured)
    fired: bool  # False: the command had finished before the delay
    phase: str  # what ran at that moment ("git cherry-pick", "python", "finished")
    when: str  # the git subcommand the kill waited for (Pace.when), or ""
    code: int | None  # the killed process's exit status (negative: the signal's number)
    stderr: str = ""  # the last lines it wrote there
    problem: str = ""  # how it took a SIGINT, when that broke the contract


@dataclass(frozen=True, slots=True)
class Rerun:
    command: str
    code: int
    error: str = ""  # the JSON error's code
    message: str = ""
    hung: bool = False  # killed after RUN_TIMEOUT


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    detail: str


@dataclass
class Trial:
    seed: int
    mode: Mode | None = None
    kills: list[Kill] = field(default_factory=list)
    reruns: list[Rerun] = field(default_factory=list)
    work: list[Work] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        kills = ", ".join(map(describe_kill, self.kills))
        reruns = ", ".join(f"{r.command} -> {r.code} {r.error}".rstrip() for r in self.reruns)
        lines = [f"seed {self.seed} (mode {self.mode}): {kills}; reruns: {reruns}"]
        lines += [f"  {v.kind}: {v.detail}" for v in self.violations]
        if self.violations:
            lines.append(f"  again: {self.again()}")
        return "\n".join(lines)

    def again(self) -> str:
        """The command that runs this trial again, its kills at the same moments."""
        windows = "".join(
            f" --when '{k.command}={k.when}'" if k.when else f" --{k.command}-window {k.window}"
            for k in self.kills
        )
        return f"python bench/kill_trials.py --only-seed {self.seed}{windows}"


def describe_kill(k: Kill) -> str:
    if k.when:
        aim = f"{k.fraction * WHEN_SPAN * 1000:.0f} ms after {k.when} started"
        moment = f"{aim}, at {k.delay:.2f}s" if k.fired else f"{k.when} never ran or {aim} ended it"
    else:
        moment = f"at {k.delay:.2f}s ({k.fraction:.2f} of a run)"
    if not k.fired:
        return f"{k.command}: finished before the kill ({moment})"
    return f"{k.command}: {k.kind} {moment} in {k.phase}"


@dataclass
class Pace:
    """How long each command runs here, so that a kill lands at a fraction of a run.

    Machines, and their load, differ several-fold: a fixed window in seconds would
    either mostly miss the command or only ever hit its start. The window is the
    longest of the last few complete runs seen (never over 3x the default; the
    first ones come from a calibration run), or ``fixed`` seconds.
    """

    fixed: dict[str, float] = field(default_factory=dict)
    recent: dict[str, list[float]] = field(default_factory=dict)
    # command -> a git subcommand: kill once the command runs it (plus the seeded
    # fraction of WHEN_SPAN), not at a fraction of a run; to aim at one phase.
    when: dict[str, str] = field(default_factory=dict)

    def window(self, command: str) -> float:
        if command in self.fixed:
            return self.fixed[command]
        seen = self.recent.get(command)
        return min(max(seen), 3 * DEFAULT_WINDOWS[command]) if seen else DEFAULT_WINDOWS[command]

    def observe(self, command: str, seconds: float) -> None:
        self.recent[command] = [*self.recent.get(command, [])[-4:], seconds]

    def calibrate(self, root: Path) -> None:
        """Time one whole, unkilled topic on a scratch fixture, unless already known."""
        if all(c in self.fixed or c in self.recent for c in DEFAULT_WINDOWS):
            return
        ws = build(root)
        done, payload = run_paced(("worktrees", TOPIC, "--json"), ws.home, self)
        if done.code != 0:
            raise AssertionError(f"calibration: worktrees exited {done.code}: {payload}")
        for name, worktree in finished_worktrees(payload).items():
            commit(worktree, f"src/{name}-calibration.txt", f"{name}\n")
        run_paced(("teardown", TOPIC, "--integrate", "--json"), ws.home, self)


@dataclass(frozen=True, slots=True)
class Workspace:
    primaries: dict[str, Path]  # name in the topic -> primary clone, home first
    plan_dir: Path

    @property
    def home(self) -> Path:
        return self.primaries[HOME]


# -- one trial ------------------------------------------------------------------------


def run_trial(seed: int, root: Path, pace: Pace | None = None) -> Trial:
    """One trial under ``root`` (an empty directory); the caller's environment must be hermetic."""
    pace = pace or Pace()
    pace.calibrate(root / "calibration")
    rng = random.Random(seed)
    trial = Trial(seed)
    ws = build(root / "trial")

    args = ("worktrees", TOPIC, "--json")
    _killed(trial, args, ws.home, rng, pace)
    rerun, payload = rerun_as_told(trial, args, ws.home, pace)
    worktrees = finished_worktrees(payload) if rerun.code == 0 else {}
    if rerun.code == 0 and set(worktrees) != set(ws.primaries):
        trial.violations.append(
            Violation("worktrees-unfinished", f"after the rerun: {_statuses(payload)}")
        )
    trial.violations += primary_problems(ws)
    trial.violations += worktree_problems(ws, worktrees)
    if set(worktrees) != set(ws.primaries) or not trial.ok:
        return trial  # no worktree to work in: what there is to check was checked

    trial.work = random_work(rng, worktrees)
    dirty = any(w.kind is not WorkKind.COMMIT for w in trial.work)
    trial.mode = rng.choice((Mode.FORCE, Mode.REFUSE)) if dirty else Mode.CLEAN
    args = ("teardown", TOPIC, "--integrate", "--json")
    if trial.mode is Mode.FORCE or (trial.mode is Mode.CLEAN and rng.random() < 0.2):
        args += ("--force",)
    _killed(trial, args, ws.home, rng, pace)
    rerun, payload = rerun_as_told(trial, args, ws.home, pace)
    if trial.mode is Mode.REFUSE and rerun.code == 0:
        trial.violations.append(
            Violation("dirty-not-refused", "teardown without --force removed dirty worktrees")
        )
    if trial.mode is not Mode.REFUSE and rerun.code == 0:
        trial.violations += unfinished_teardown(ws, worktrees)
    trial.violations += primary_problems(ws)
    trial.violations += lost_work(ws, worktrees, trial.work)
    return trial


def rerun_as_told(
    trial: Trial, args: tuple[str, ...], cwd: Path, pace: Pace
) -> tuple[Rerun, dict[str, object] | None]:
    """Run the command again, and again after doing what it said, as a user would.

    A git lock file a killed git left behind is refused (``git-locked``) with
    the fix "if no git command is running, remove <lock>": no git runs here
    (:func:`kill_at` waited for every one), so the fix is applied and the
    command run again. Each run must finish or refuse naming its fix.
    """
    for _ in range(MAX_FIXES):
        rerun, payload = run_paced(args, cwd, pace)
        trial.reruns.append(rerun)
        trial.violations += rerun_problems(rerun, payload)
        named = named_locks(payload)
        if not named:
            return rerun, payload
        for lock in named:
            lock.unlink()
    return rerun, payload


MAX_FIXES = 4  # reruns after removing the git lock files a refusal named
_LOCK_PATH = re.compile(r"(/[^\s'\"`]+\.lock)\b")


def named_locks(payload: dict[str, object] | None) -> list[Path]:
    """The git lock files the command named (a ``git-locked`` refusal, a warning), with their fix."""
    text = json.dumps(payload) if payload else ""
    found = {Path(m) for m in _LOCK_PATH.findall(text)}
    return sorted(p for p in found if p.is_file() and not _routers_own(p))


def _routers_own(lock: Path) -> bool:
    """A lock in team-router's own state dir (``.git/team-router/``): its file lock, not git's.

    Only there: ``refs/team-router/snapshots/<branch>.lock`` is git's ref lock,
    one a killed snapshot leaves and the refusal tells the user to remove.
    """
    return (".git", "team-router") in itertools.pairwise(lock.parts)


def _killed(trial: Trial, args: tuple[str, ...], cwd: Path, rng: random.Random, pace: Pace):
    kind = rng.choice(list(KillKind))
    kill = kill_at(args, cwd, kind, rng.uniform(0.0, LATE), pace)
    trial.kills.append(kill)
    if kill.problem:
        detail = f"{args[0]} interrupted in {kill.phase}: {kill.problem}: {kill.stderr}"
        trial.violations.append(Violation("interrupt-exit", detail))


# -- the fixture ----------------------------------------------------------------------


def build(root: Path) -> Workspace:
    """Home ``web`` and the secondaries under ``root/ws``, origins in ``root/origins``."""
    parent = root / "ws"
    home = make_repo(parent, "web")
    topic = new_topic(home, topic_id=TOPIC)
    secondaries = {name: make_repo(parent, name) for name in SECONDARIES}
    write_repos_md(topic, secondaries)
    return Workspace({HOME: home, **secondaries}, topic.plan_dir)


def random_work(rng: random.Random, worktrees: dict[str, Path]) -> list[Work]:
    """Commits and (in some trials) dirt in the worktrees; every piece by its object id.

    Contents carry a per-trial token so a blob can only be reachable because the
    work was kept, never because an unrelated file happens to hold the same bytes.
    """
    dirty_trial = rng.random() < 0.6
    made: list[Work] = []
    for name, worktree in worktrees.items():
        token = f"{rng.getrandbits(48):012x}"
        for i in range(rng.choice((0, 1, 1, 2))):
            sha = commit(worktree, f"src/{name}-{token}-{i}.txt", f"{name} {token} {i}\n")
            made.append(Work(name, WorkKind.COMMIT, sha, patch_id=patch_id(worktree, sha)))
        if not dirty_trial or rng.random() < 0.4:
            continue
        made += _dirt(rng, name, worktree, token)
    return made


def _dirt(rng: random.Random, name: str, worktree: Path, token: str) -> list[Work]:
    made: list[Work] = []
    readme = worktree / "README.md"
    if rng.random() < 0.5:  # a partially staged hunk in a tracked file
        staged = readme.read_text() + f"staged {token}\n"
        write(readme, staged)
        git(worktree, "add", "--", "README.md")
        write(readme, staged + f"unstaged {token}\n")
        made.append(_staged(name, worktree, "README.md"))
        made.append(_file(name, worktree, "README.md"))
    elif rng.random() < 0.7:  # a plain modification of a tracked file
        write(readme, readme.read_text() + f"modified {token}\n")
        made.append(_file(name, worktree, "README.md"))
    if rng.random() < 0.6:  # a new file, staged, then changed again
        rel = f"new-{token}.txt"
        write(worktree / rel, f"new {token} v1\n")
        git(worktree, "add", "--", rel)
        write(worktree / rel, f"new {token} v2\n")
        made.append(_staged(name, worktree, rel))
        made.append(_file(name, worktree, rel))
    if rng.random() < 0.7 or not made:  # an untracked file
        rel = f"notes/{token}.md"
        write(worktree / rel, f"untracked {token}\n")
        made.append(_file(name, worktree, rel))
    return made


def _staged(name: str, worktree: Path, rel: str) -> Work:
    return Work(name, WorkKind.STAGED, git(worktree, "rev-parse", f":{rel}"), rel)


def _file(name: str, worktree: Path, rel: str) -> Work:
    return Work(name, WorkKind.FILE, git(worktree, "hash-object", "--no-filters", "--", rel), rel)


def patch_id(repo: Path, sha: str) -> str:
    diff = git(repo, "show", "--format=", "-p", sha)
    return git(repo, "patch-id", "--stable", input=diff + "\n").split()[0]


# -- running and killing --------------------------------------------------------------


def run_paced(
    args: tuple[str, ...], cwd: Path, pace: Pace
) -> tuple[Rerun, dict[str, object] | None]:
    """Run a command to completion; what it said, and its JSON (None if it printed none)."""
    start = time.monotonic()
    proc = spawn(*args, cwd=cwd, new_group=True)
    out, err, hung = _settle(proc, RUN_TIMEOUT)
    pace.observe(args[0], time.monotonic() - start)
    if hung:
        return Rerun(args[0], proc.returncode, "", "", hung=True), None
    payload = _json(out)
    error = payload.get("error") if payload else None
    error = error if isinstance(error, dict) else {}
    rerun = Rerun(
        args[0], proc.returncode, str(error.get("code", "")), str(error.get("message", ""))
    )
    if "Traceback" in err:
        payload = {"traceback": err.strip().splitlines()[-1], **(payload or {})}
    return rerun, payload


def kill_at(args: tuple[str, ...], cwd: Path, kind: KillKind, fraction: float, pace: Pace) -> Kill:
    """Start the command in its own process group; signal it ``fraction`` of a run later.

    Returns once the command and every process it started have exited, so the
    rerun starts on a settled disk (as a user's rerun, seconds later, would).
    """
    window = pace.window(args[0])
    when = pace.when.get(args[0])
    _let_sigint_through()
    start = time.monotonic()
    proc = spawn(*args, cwd=cwd, new_group=True)
    phase = "finished"
    if when is not None:
        fired = _await_child(proc, when) and not _ended(proc, fraction * WHEN_SPAN)
    else:
        fired = not _ended(proc, fraction * window)
    delay = time.monotonic() - start if fired else fraction * window
    if not fired and when is None:
        pace.observe(args[0], time.monotonic() - start)
    if fired:
        phase = running_phase(proc.pid)
        if kind is KillKind.PROCESS:
            proc.send_signal(signal.SIGKILL)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL if kind is KillKind.GROUP else signal.SIGINT)
    out, err, hung = _settle(proc, INTERRUPT_TIMEOUT if fired else RUN_TIMEOUT)
    said = " | ".join(err.strip().splitlines()[-3:])
    problem = ""
    if hung:
        problem = f"still running {INTERRUPT_TIMEOUT:.0f}s after the signal"
    elif fired and kind is KillKind.INTERRUPT:
        problem = interrupt_problem(proc.returncode, err, answered=_json(out) is not None)
    return Kill(
        args[0],
        kind,
        round(fraction, 3),
        round(window, 3),
        round(delay, 3),
        fired,
        phase,
        when or "",
        proc.returncode,
        said,
        problem,
    )


def _ended(proc: subprocess.Popen[str], seconds: float) -> bool:
    """Whether the command ends within ``seconds`` (its pipes drained meanwhile, so
    one that writes a lot is never mistaken for one still running)."""
    try:
        proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _await_child(proc: subprocess.Popen[str], subcommand: str) -> bool:
    """Wait until the command runs ``subcommand`` (say "git worktree remove"); False
    if it ends first. Polled every millisecond: a git command lasts several."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        for _, ppid, argv in group_members(proc.pid):
            if ppid == proc.pid and _subcommand(argv) == subcommand:
                return True
        time.sleep(0.001)
    return False


def _settle(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str, bool]:
    """Wait for the command and all it started; SIGKILL the group after ``timeout``.

    Returns its stdout, its stderr and whether it had to be killed (it hung).
    """
    hung = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    finally:
        drain(proc.pid)
    return out or "", err or "", hung


def interrupt_problem(code: int, err: str, *, answered: bool) -> str:
    """What is wrong with how a command took Ctrl-C ("" when nothing is).

    The contract: exit 130, no traceback. But a command that ``answered`` (printed
    its JSON) was not stopped: the signal came after its last Python instruction,
    or ended a git child whose failure the answer reports; its exit code is the
    answer's. And outside the router's entry point Python itself decides: before
    the interpreter has installed its handler, or after it restored the default
    one on the way out, SIGINT just ends the process (-2, silently); during
    Python's own start-up (``site``, the console script's imports) it prints a
    traceback that does not pass through ``main()``. Neither is the router's to
    handle; a KeyboardInterrupt that escapes ``main()`` is.
    """
    traceback = "Traceback" in err
    if traceback and ENTRY_FRAME.search(err):
        return f"exit {code} with a traceback"
    if (code == 130 or answered) and not traceback:
        return ""
    if code == -signal.SIGINT or (traceback and code == 1):
        return ""
    return f"exit {code}" + (" with a traceback" if traceback else "")


def _let_sigint_through() -> None:
    """Give the command SIGINT's default action, whatever this process inherited.

    A shell starts a background job with SIGINT ignored, and an ignored signal
    stays ignored across exec: the command would never see the Ctrl-C a trial sends.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def group_members(pgid: int) -> Iterator[tuple[int, int, list[str]]]:
    """Live processes of process group ``pgid``: pid, parent pid, argv (from /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            yield int(entry.name), int(fields[1]), [a.decode(errors="replace") for a in argv if a]


def running_phase(pgid: int) -> str:
    """What the command was doing: the commands it had started and that were running."""
    running = sorted({_subcommand(argv) for _, ppid, argv in group_members(pgid) if ppid == pgid})
    return " + ".join(running) or "python"


def _subcommand(argv: list[str]) -> str:
    if not argv:
        return "starting"  # forked, not yet exec'd (or already gone)
    if Path(argv[0]).name != "git":
        return Path(argv[0]).name
    rest = argv[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in {"-C", "-c"} else rest[1:]
    words = rest[:2] if rest[:1] in (["worktree"], ["remote"]) else rest[:1]
    return " ".join(["git", *words])


def drain(pgid: int) -> None:
    """Wait for what the killed command left running; SIGKILL it after DRAIN_TIMEOUT."""
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while any(True for _ in group_members(pgid)):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
        time.sleep(0.02)


def _json(out: str) -> dict[str, object] | None:
    try:
        data = json.loads(out)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# -- the checks -----------------------------------------------------------------------


def rerun_problems(rerun: Rerun, payload: dict[str, object] | None) -> list[Violation]:
    """The rerun finished (exit 0) or refused with a JSON error naming the fix."""
    what = f"{rerun.command} rerun exited {rerun.code}"
    if rerun.hung:
        return [Violation("hang", f"{rerun.command} rerun still running after {RUN_TIMEOUT:.0f}s")]
    if payload is not None and "traceback" in payload:
        return [Violation("traceback", f"{what}: {payload['traceback']}")]
    if payload is None:
        return [Violation("no-json", f"{what} and printed no JSON object")]
    if rerun.code == 0:
        return [] if payload.get("ok") is True else [Violation("no-json", f"{what} with ok false")]
    if not rerun.error or not rerun.message:
        steps = _stopped_steps(payload)
        return [Violation("no-error", f"{what} with no error in its JSON; stopped steps: {steps}")]
    if not names_a_fix(rerun.message):
        return [Violation("no-fix", f"{what}, [{rerun.error}] names no fix: {rerun.message}")]
    return []


def names_a_fix(message: str) -> bool:
    return FIX.search(PATH.sub(" ", message)) is not None


def _stopped_steps(payload: dict[str, object]) -> str:
    repos = payload.get("repos")
    found = [
        f"{r.get('name')}/{s.get('name')} {s.get('outcome')}: {s.get('detail')}"
        for r in (repos if isinstance(repos, list) else [])
        for s in r.get("steps", [])
        if s.get("outcome") in {"refused", "failed"}
    ]
    return "; ".join(found) or "none"


def finished_worktrees(payload: dict[str, object] | None) -> dict[str, Path]:
    """Repo name -> worktree, for the repos whose worktree is ready."""
    repos = payload.get("repos") if payload else None
    return {
        r["name"]: Path(r["worktree"])
        for r in (repos if isinstance(repos, list) else [])
        if r.get("status") in {"created", "existing"} and r.get("worktree")
    }


def _statuses(payload: dict[str, object] | None) -> str:
    repos = payload.get("repos") if payload else None
    return ", ".join(
        f"{r.get('name')}: {r.get('status')} {r.get('reason') or ''}".rstrip()
        for r in (repos if isinstance(repos, list) else [])
    )


def primary_problems(ws: Workspace) -> list[Violation]:
    """Every primary clone is clean, on main, and idle."""
    found: list[Violation] = []
    for name, repo in ws.primaries.items():
        dirt = status(repo)
        if dirt:
            found.append(Violation("primary-dirty", f"{name}: {' | '.join(dirt.splitlines())}"))
        head = git(repo, "symbolic-ref", "-q", "HEAD", check=False)
        if head != "refs/heads/main":
            found.append(Violation("primary-head", f"{name}: HEAD is {head or 'detached'}"))
        gitdir = repo / ".git"
        busy = [m for m in BUSY_MARKERS if (gitdir / m).exists()]
        if busy:
            found.append(Violation("primary-busy", f"{name}: {', '.join(busy)} left in .git"))
        for lock in sorted(gitdir.rglob("*.lock")):
            rel = lock.relative_to(gitdir)
            if rel.parts == ("objects", "maintenance.lock"):
                # git's auto-maintenance (run by a killed pull or fetch) skips, with
                # a warning, while this exists: no command fails and nothing is lost.
                continue
            if rel.parts[:2] == ("team-router", "locks"):
                if _held(lock):
                    found.append(Violation("lock-held", f"{name}: {rel} is still held"))
            else:
                found.append(Violation("stale-lock", f"{name}: .git/{rel} left behind"))
    return found


def worktree_problems(ws: Workspace, worktrees: dict[str, Path]) -> list[Violation]:
    """Every worktree reported ready is a whole, clean, unlocked checkout of the topic branch.

    ``git worktree add`` registers the worktree (locked, "initializing") before it
    checks the files out: killed in between, it leaves a checkout with no files.
    """
    found: list[Violation] = []
    for name, worktree in worktrees.items():
        if not worktree.is_dir():
            found.append(Violation("worktree-broken", f"{name}: {worktree} is not on disk"))
            continue
        head = git(worktree, "symbolic-ref", "-q", "HEAD", check=False)
        problems = [] if head == f"refs/heads/{TOPIC}" else [f"HEAD is {head or 'detached'}"]
        dirt = status(worktree) if not problems else ""
        if dirt:
            problems.append(f"not a clean checkout: {' | '.join(dirt.splitlines())}")
        listing = git(ws.primaries[name], "worktree", "list", "--porcelain").split("\n\n")
        entry = next((e for e in listing if e.startswith(f"worktree {worktree}\n")), "")
        if not entry:
            problems.append("not registered with git")
        elif "\nlocked" in entry:
            problems.append("still locked (" + entry.split("\nlocked", 1)[1].strip() + ")")
        if problems:
            found.append(Violation("worktree-broken", f"{name}: {'; '.join(problems)}"))
    return found


def _held(lock: Path) -> bool:
    with open(lock, "rb") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


def unfinished_teardown(ws: Workspace, worktrees: dict[str, Path]) -> list[Violation]:
    """After a teardown that exited 0: no worktree and no topic branch is left."""
    found: list[Violation] = []
    for name, repo in ws.primaries.items():
        left = [p for p in worktree_paths(repo) if p != str(repo)]
        if worktrees[name].exists():
            left.append(f"{worktrees[name]} on disk")
        if TOPIC in branches(repo):
            left.append(f"branch {TOPIC}")
        if left:
            found.append(Violation("teardown-unfinished", f"{name}: {', '.join(left)}"))
    return found


def lost_work(ws: Workspace, worktrees: dict[str, Path], work: list[Work]) -> list[Violation]:
    """Every piece of work is still reachable: in its worktree, or from some ref."""
    found: list[Violation] = []
    for name, repo in ws.primaries.items():
        mine = [w for w in work if w.repo == name]
        if not mine:
            continue
        commits = set(git(repo, "rev-list", "--all").split())
        objects = {ln.split()[0] for ln in git(repo, "rev-list", "--all", "--objects").splitlines()}
        patches = _patch_ids(repo)
        for w in mine:
            if w.kind is WorkKind.COMMIT:
                kept = w.oid in commits or w.patch_id in patches
            elif w.oid in objects:
                kept = True
            elif w.kind is WorkKind.FILE:
                kept = _on_disk(worktrees[name] / w.path) == w.oid
            else:
                kept = _in_index(worktrees[name], w.path) == w.oid
            if not kept:
                where = f" ({w.path})" if w.path else ""
                found.append(Violation(f"lost-{w.kind}", f"{name}: {w.oid[:12]}{where}"))
    return found


def _patch_ids(repo: Path) -> set[str]:
    log = git(repo, "log", "--all", "--no-merges", "-p", "--format=commit %H")
    if not log:
        return set()
    return {
        ln.split()[0] for ln in git(repo, "patch-id", "--stable", input=log + "\n").splitlines()
    }


def _on_disk(path: Path) -> str | None:
    if not path.is_file():
        return None
    return git(path.parent, "hash-object", "--no-filters", "--", path.name, check=False) or None


def _in_index(worktree: Path, rel: str) -> str | None:
    if not (worktree / ".git").is_file():
        return None
    return git(worktree, "rev-parse", "-q", "--verify", f":{rel}", check=False) or None


# -- many trials ----------------------------------------------------------------------


def trial_seeds(seed: int, trials: int) -> list[int]:
    """The seeds of a run: each trial is reproducible alone from its own seed."""
    return [seed * 10_000 + i for i in range(trials)]


def summary(trials: list[Trial]) -> str:
    """Trials, kills by kind and by phase, reruns' outcomes, failures with their seeds."""
    kills = [k for t in trials for k in t.kills]
    lines = [f"trials: {len(trials)}, failed: {sum(not t.ok for t in trials)}"]
    lines.append(f"modes: {_count(str(t.mode) for t in trials)}")
    for command in ("worktrees", "teardown"):
        mine = [k for k in kills if k.command == command]
        lines.append(
            f"{command} kills: {_count(str(k.kind) for k in mine if k.fired)}; "
            f"finished before the kill: {sum(not k.fired for k in mine)}"
        )
        lines.append(f"  phases: {_count(k.phase for k in mine if k.fired)}")
        reruns = [r for t in trials for r in t.reruns if r.command == command]
        lines.append(f"  reruns exited: {_count(f'{r.code} {r.error}'.strip() for r in reruns)}")
    kinds: dict[str, list[int]] = {}
    for t in trials:
        for v in t.violations:
            kinds.setdefault(v.kind, []).append(t.seed)
    for kind, seeds in sorted(kinds.items()):
        once = sorted(set(seeds))
        lines.append(
            f"violation {kind}: {len(seeds)} time(s) in {len(once)} trial(s), seeds {once[:10]}"
        )
    lines += [t.describe() for t in trials if not t.ok]
    return "\n".join(lines)


def _count(items: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "-"
