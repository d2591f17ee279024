"""Randomized kill trials over every mutating command of a topic on six repos.

One trial, reproducible from its seed (all but the instant the signal lands):

1. a home repo ``web`` and five sibling secondaries, each with a local bare
   origin (``api`` with an ignored ``node_modules`` of 400 files and a ``.env``
   listed in ``.worktreeinclude``: its copy is a step a kill can land in);
   ``team-router new`` killed and run again; a repos.md naming all six
   (DESIGN §6), one of them (``search``) sparse with a cone of ``src``, so a kill
   can land in the sparse stage of creation and a snapshot and ``restore`` work on
   a sparse worktree;
2. ``team-router worktrees`` started as a real process in a process group of its
   own, killed after a random delay with SIGKILL to the process, SIGKILL to its
   group, or SIGINT (Ctrl-C), SIGTERM or SIGHUP (a closed terminal) to its
   group, then run again;
3. work made in the worktrees: commits, an uncommitted modification, an
   untracked file, a partially staged hunk (a staged version, then the file
   changed again), every piece remembered by its object id;
4. the ending, chosen by the seed, killed the same way and run again:
   ``teardown <id> --integrate`` with nothing dirty, or with dirt and
   ``--force`` (a snapshot must keep it), or with dirt and no ``--force`` (the
   rerun must refuse); or ``pr-cleanup`` in one repo after every repo's branch
   was merged on its origin; or ``restore <id>`` after a forced teardown (every
   uncommitted file and staged blob must be back in its worktree);
5. ``doctor --repair`` killed and run again.

After a teardown's kill, a file is written into each worktree directory the kill
left half-removed (no longer registered with git), as a program still writing
there would: the rerun must keep it. With ``--clock`` each killed run sees a
clock hours ahead or behind (libfaketime) and its rerun another, as after an
NTP step or a resumed VM: no wall-clock time may decide what is deleted.

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
- every worktree ``worktrees`` made holds every ``.worktreeinclude`` file
  whole (the primary's bytes) and no temp name of a copy cut short;
- the rerun exits 0 having finished (every repo has its worktree; every worktree
  and branch is gone after a teardown), or exits non-zero with a JSON ``error``
  whose message names a fix; no traceback either way;
- a run stopped by SIGINT, SIGTERM or SIGHUP that had not yet printed its
  answer exits 130 or 128 + the signal's number; no KeyboardInterrupt ever
  escapes the entry point's ``main()`` as a traceback.

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
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

from helpers.faults import spawn
from helpers.plans import repos_md
from helpers.repos import branches, commit, git, make_repo, own_lock, status, worktree_paths, write
from router.filecopy import TEMP_SUFFIX

TOPIC = "2026-05-01-kill-trial"
DESCRIPTION = "kill trial"
HOME = "home"  # the home repo's name in the topic (its directory is ``web``)
SECONDARIES = ("api", "auth", "billing", "search", "shared")
INCLUDED_IN = "api"  # the repo with a .worktreeinclude tree to copy
SUBMODULE_IN = "auth"  # the repo with a submodule, with Pace.submodules
SUBMODULE_FILES = 400  # in the submodule: its checkout takes long enough to be hit
INCLUDED_FILES = 400
# The secondary whose worktree is sparse (repos.md `sparse:`), and its cone: kills land
# in its sparse stage too. Its `docs/` lies outside the cone and is never written.
SPARSE, CONE = "search", "src"
DRAIN_TIMEOUT = 60.0  # seconds a killed command's leftover git processes get to exit
RUN_TIMEOUT = 300.0  # seconds a run gets before it counts as hung
INTERRUPT_TIMEOUT = 60.0  # seconds a command gets to stop after SIGINT

# The moment to kill at: a seeded fraction (0 to LATE) of the command's usual run
# time, so most kills land inside it and some after it finished (a kill that never
# fired leaves a plain second run, also worth a check). See Pace.
DEFAULT_WINDOWS = {
    "new": 0.6,
    "worktrees": 1.2,
    "teardown": 1.6,
    "pr-cleanup": 1.2,
    "restore": 1.2,
    "doctor": 0.6,
}
LATE = 1.1

# Every repo declares setup commands on its default branch, so kills land in
# creation's setup-commands stage too (the phase "sh"): each line appends its
# name to an ignored file once it is done, the second after a short sleep.
SETUP_LOG = ".setup-ran"
SETUP_LINES = ("one", "two")
WORKTREESETUP = f"echo one >> {SETUP_LOG}\nsleep 0.2; echo two >> {SETUP_LOG}\n"
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
    TERMINATE = "sigterm-group"  # kill, systemd, a CI runner's timeout
    HANGUP = "sighup-group"  # the terminal was closed


# The signal a kind sends to the whole group (PROCESS sends SIGKILL to the router alone).
GROUP_SIGNAL = {
    KillKind.GROUP: signal.SIGKILL,
    KillKind.INTERRUPT: signal.SIGINT,
    KillKind.TERMINATE: signal.SIGTERM,
    KillKind.HANGUP: signal.SIGHUP,
}


class Ending(StrEnum):
    """What the trial does with the topic once its worktrees hold work."""

    TEARDOWN = "teardown"  # teardown --integrate, killed (the modes below)
    PR_CLEANUP = "pr-cleanup"  # merged on every origin, pr-cleanup in one repo killed
    RESTORE = "restore"  # teardown --force, then restore killed


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
    problem: str = ""  # how it took a catchable signal, when that broke the contract
    clock: str = ""  # the killed run's clock offset (libfaketime), "" for the real clock


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
    ending: Ending | None = None
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
        lines = [f"seed {self.seed} ({self.ending}, mode {self.mode}): {kills}; reruns: {reruns}"]
        lines += [f"  {v.kind}: {v.detail}" for v in self.violations]
        if self.violations:
            lines.append(f"  again: {self.again()}")
        return "\n".join(lines)

    def again(self) -> str:
        """The command that runs this trial again, its kills at the same moments."""
        windows = "".join(
            f" --when '{k.command}={k.when}'" if k.when else f" --window {k.command}={k.window}"
            for k in self.kills
        )
        clock = " --clock" if any(k.clock for k in self.kills) else ""
        return f"python bench/kill_trials.py --only-seed {self.seed}{windows}{clock}"


def describe_kill(k: Kill) -> str:
    if k.when:
        aim = f"{k.fraction * WHEN_SPAN * 1000:.0f} ms after {k.when} started"
        moment = f"{aim}, at {k.delay:.2f}s" if k.fired else f"{k.when} never ran or {aim} ended it"
    else:
        moment = f"at {k.delay:.2f}s ({k.fraction:.2f} of a run)"
    clock = f" (clock {k.clock})" if k.clock else ""
    if not k.fired:
        return f"{k.command}: finished before the kill ({moment}){clock}"
    return f"{k.command}: {k.kind} {moment} in {k.phase}{clock}"


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
    # Step the clock: each killed run sees a seeded offset (libfaketime), its rerun another.
    clock: bool = False
    # SUBMODULE_IN gets a submodule its primary has initialised: creation's submodules
    # stage is one more a kill can land in (``--when 'worktrees=git checkout'`` aims there).
    submodules: bool = False

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
        new = ("new", DESCRIPTION, "--id", TOPIC, "--json")
        run_paced(new, ws.home, self)
        write_repos_md(ws.plan_dir, ws.primaries)
        done, payload = run_paced(("worktrees", TOPIC, "--json"), ws.home, self)
        if done.code != 0:
            raise AssertionError(f"calibration: worktrees exited {done.code}: {payload}")
        for name, worktree in finished_worktrees(payload).items():
            commit(worktree, f"src/{name}-calibration.txt", f"{name}\n")
        shipped(ws.plan_dir)
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
    ws = build(root / "trial", submodules=pace.submodules)

    args: tuple[str, ...] = ("new", DESCRIPTION, "--id", TOPIC, "--json")
    _killed(trial, args, ws.home, rng, pace)
    rerun, payload = rerun_as_told(trial, args, ws.home, pace, rng)
    trial.violations += primary_problems(ws)
    if rerun.code == 0 and payload is not None and isinstance(payload.get("home"), dict):
        trial.violations += setup_problems([payload["home"]])
    if rerun.code != 0 or not trial.ok:
        return trial
    write_repos_md(ws.plan_dir, ws.primaries)

    args = ("worktrees", TOPIC, "--json")
    _killed(trial, args, ws.home, rng, pace)
    rerun, payload = rerun_as_told(trial, args, ws.home, pace, rng)
    worktrees = finished_worktrees(payload) if rerun.code == 0 else {}
    if rerun.code == 0 and set(worktrees) != set(ws.primaries):
        trial.violations.append(
            Violation("worktrees-unfinished", f"after the rerun: {_statuses(payload)}")
        )
    trial.violations += primary_problems(ws)
    trial.violations += worktree_problems(ws, worktrees)
    if rerun.code == 0 and payload is not None:
        trial.violations += setup_problems(payload.get("repos"))
    if set(worktrees) != set(ws.primaries) or not trial.ok:
        return trial  # no worktree to work in: what there is to check was checked

    trial.ending = rng.choice(list(Ending))
    dirt = {Ending.PR_CLEANUP: False, Ending.RESTORE: True}.get(trial.ending)
    trial.work = random_work(rng, worktrees, dirt=dirt)
    if trial.ending is Ending.TEARDOWN:
        _teardown(trial, ws, worktrees, rng, pace)
    elif trial.ending is Ending.PR_CLEANUP:
        _pr_cleanup(trial, ws, worktrees, rng, pace)
    else:
        _restore(trial, ws, worktrees, rng, pace)
    trial.violations += primary_problems(ws)
    trial.violations += lost_work(ws, worktrees, trial.work)

    args = ("doctor", "--repair", "--json")
    _killed(trial, args, ws.home, rng, pace)
    rerun_as_told(trial, args, ws.home, pace, rng)
    trial.violations += primary_problems(ws)
    trial.violations += lost_work(ws, worktrees, trial.work)
    return trial


def _teardown(
    trial: Trial, ws: Workspace, worktrees: dict[str, Path], rng: random.Random, pace: Pace
) -> None:
    """teardown --integrate killed and run again, in the mode the work calls for."""
    dirty = any(w.kind is not WorkKind.COMMIT for w in trial.work)
    trial.mode = rng.choice((Mode.FORCE, Mode.REFUSE)) if dirty else Mode.CLEAN
    shipped(ws.plan_dir)  # a shipped run: its artifacts are not what refuses
    args = ("teardown", TOPIC, "--integrate", "--json")
    if trial.mode is Mode.FORCE or (trial.mode is Mode.CLEAN and rng.random() < 0.2):
        args += ("--force",)
    _killed(trial, args, ws.home, rng, pace)
    late = late_files(ws, worktrees, rng)
    trial.work += late
    rerun, _ = rerun_as_told(trial, args, ws.home, pace, rng)
    if trial.mode is Mode.REFUSE and rerun.code == 0:
        trial.violations.append(
            Violation("dirty-not-refused", "teardown without --force removed dirty worktrees")
        )
    if trial.mode is not Mode.REFUSE and rerun.code == 0:
        kept = {w.repo for w in late}
        trial.violations += unfinished_teardown(ws, worktrees, keep=kept)


def _pr_cleanup(
    trial: Trial, ws: Workspace, worktrees: dict[str, Path], rng: random.Random, pace: Pace
) -> None:
    """Every repo's branch merged on its origin; pr-cleanup in each repo, one of them killed."""
    for name, worktree in worktrees.items():
        if not any(w.repo == name for w in trial.work):
            sha = commit(worktree, f"src/{name}-merged.txt", f"{name} merged\n")
            trial.work.append(Work(name, WorkKind.COMMIT, sha, patch_id=patch_id(worktree, sha)))
        git(worktree, "push", "-q", "origin", f"{TOPIC}:{TOPIC}", f"{TOPIC}:main")
    shipped(ws.plan_dir)
    order = [n for n in ws.primaries if n != HOME] + [HOME]  # home last: it holds the plan dir
    victim = rng.choice(order)
    args = ("pr-cleanup", TOPIC, "--yes", "--json")
    for name in order:
        repo = ws.primaries[name]
        if name == victim:
            _killed(trial, args, repo, rng, pace)
        rerun, _ = rerun_as_told(trial, args, repo, pace, rng)
        if rerun.code == 0:
            trial.violations += unfinished_teardown(ws, {name: worktrees[name]}, keep=set())


def _restore(
    trial: Trial, ws: Workspace, worktrees: dict[str, Path], rng: random.Random, pace: Pace
) -> None:
    """teardown --force (a snapshot of every dirty worktree), then restore killed and run again."""
    shipped(ws.plan_dir)
    done, payload = run_paced(("teardown", TOPIC, "--force", "--json"), ws.home, pace)
    trial.reruns.append(done)
    trial.violations += rerun_problems(done, payload)
    if done.code != 0:
        return
    args = ("restore", TOPIC, "--json")
    _killed(trial, args, ws.home, rng, pace)
    rerun, payload = rerun_as_told(trial, args, ws.home, pace, rng)
    if rerun.code == 0:
        trial.violations += unrestored(worktrees, trial.work, payload)


def shipped(plan_dir: Path) -> None:
    """A ``pr.md`` (DESIGN §5): the run shipped, so its artifacts may go with its teardown."""
    if not (plan_dir / "pr.md").exists():
        plan_dir.joinpath("pr.md").write_text(
            "---\ntopic: kill-trial\ndate: 2026-05-01\nphase: pr\n"
            "url: https://example.invalid/pull/1\n---\n\n# PR\n"
        )


def rerun_as_told(
    trial: Trial, args: tuple[str, ...], cwd: Path, pace: Pace, rng: random.Random
) -> tuple[Rerun, dict[str, object] | None]:
    """Run the command again, and again after doing what it said, as a user would.

    A git lock file a killed git left behind is refused (``git-locked``) with
    the fix "if no git command is running, remove <lock>": no git runs here
    (:func:`kill_at` waited for every one), so the fix is applied and the
    command run again. Each run must finish or refuse naming its fix.
    """
    clock = clock_offset(rng) if pace.clock else ""
    for _ in range(MAX_FIXES):
        rerun, payload = run_paced(args, cwd, pace, clock=clock)
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
    clock = clock_offset(rng) if pace.clock else ""
    kill = kill_at(args, cwd, kind, rng.uniform(0.0, LATE), pace, clock=clock)
    trial.kills.append(kill)
    if kill.problem:
        detail = f"{args[0]} interrupted in {kill.phase}: {kill.problem}: {kill.stderr}"
        trial.violations.append(Violation("interrupt-exit", detail))


# Clock steps a machine sees: an NTP correction, a VM resumed after a day, a file
# server's clock some minutes off. Each killed run and each rerun draws one.
CLOCK_OFFSETS = ("+3h", "-3h", "+1d", "-1d", "+10m", "-10m", "")


def clock_offset(rng: random.Random) -> str:
    return rng.choice(CLOCK_OFFSETS)


def clock_env(offset: str) -> dict[str, str]:
    """Environment that shows a process (and the git it runs) a clock ``offset`` away.

    libfaketime through LD_PRELOAD; the monotonic clock stays real, so timeouts
    and waits still measure real seconds (and ``faketime_sleep.c``, preloaded
    first, keeps Python's sleeps working in that mode).
    """
    if not offset:
        return {}
    libs = clock_libraries()
    if libs is None:
        raise RuntimeError("--clock needs libfaketime (Debian package faketime) and a C compiler")
    preload = " ".join(str(lib) for lib in libs)
    return {"LD_PRELOAD": preload, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def clock_libraries() -> tuple[Path, Path] | None:
    """The sleep fix (built here once) and libfaketime, or None when either cannot be had."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    found += sorted(Path("/usr/lib/faketime").glob("libfaketime.so.1"))
    source = Path(__file__).with_name("faketime_sleep.c")
    built = Path(os.environ.get("XDG_CACHE_HOME", "/tmp")) / "team-router-faketime-sleep.so"
    if not found or shutil.which("cc") is None:
        return None
    if not built.exists():
        tmp = built.with_name(f"{built.name}.{os.getpid()}")
        cc = ["cc", "-shared", "-fPIC", "-O2", "-o", str(tmp), str(source)]
        if subprocess.run(cc, capture_output=True, check=False).returncode != 0:
            return None
        os.replace(tmp, built)
    return built, found[0]


# -- the fixture ----------------------------------------------------------------------


def build(root: Path, *, submodules: bool = False) -> Workspace:
    """Home ``web`` and the secondaries under ``root/ws``, origins in ``root/origins``.

    With ``submodules``, SUBMODULE_IN has one (``vendor/lib``, from ``root/subs/lib``).

    No topic yet: the trial makes it with ``new`` (killed), then writes repos.md.
    """
    parent = root / "ws"
    home = _declaring_setup(make_repo(parent, "web"))
    secondaries = {name: make_repo(parent, name) for name in SECONDARIES}
    included_tree(secondaries[INCLUDED_IN])
    if submodules:
        submodule_tree(root, secondaries[SUBMODULE_IN])
    sparse = secondaries[SPARSE]
    for rel in (f"{CONE}/main.py", f"{CONE}/lib/util.py", "docs/guide.md", "docs/api/ref.md"):
        write(sparse / rel, f"{rel}\n")
    git(sparse, "add", "--all")
    git(sparse, "commit", "-q", "-m", "a tree with a part outside the cone")
    git(sparse, "push", "-q", "origin", "main")
    for repo in secondaries.values():
        _declaring_setup(repo)
    plan_dir = home / ".claude" / "worktrees" / TOPIC / "docs" / "plans" / TOPIC
    return Workspace({HOME: home, **secondaries}, plan_dir)


def submodule_tree(root: Path, repo: Path) -> None:
    """``vendor/lib`` in ``repo``, initialised in it, from a repo with a local bare origin."""
    lib = make_repo(root / "subs", "lib")
    for i in range(SUBMODULE_FILES):
        write(lib / "src" / f"m{i}.py", f"value = {i}\n" * 50)
    git(lib, "add", "--all")
    git(lib, "commit", "-q", "-m", "files for a checkout a kill can land in")
    git(lib, "push", "-q", "origin", "main")
    url = git(lib, "remote", "get-url", "origin")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url, "vendor/lib")
    git(repo, "commit", "-q", "-m", "vendor/lib as a submodule")
    git(repo, "push", "-q", "origin", "main")


def submodule_problems(primary: Path, worktree: Path) -> list[str]:
    """Each submodule the primary has checked out is checked out, clean, at the commit the
    worktree's branch records."""
    if not (primary / ".gitmodules").exists():
        return []
    found = []
    for rel in git(primary, "config", "--file", ".gitmodules", "--get-regexp", "path").split("\n"):
        path = rel.split(" ", 1)[1]
        if not (primary / path / ".git").exists():
            continue
        recorded = git(worktree, "rev-parse", f"HEAD:{path}")
        head = git(worktree / path, "rev-parse", "HEAD", check=False)
        if not (worktree / path / ".git").is_file() or head != recorded:
            found.append(f"submodule {path} not checked out at {recorded[:12]} (HEAD {head[:12]})")
        elif status(worktree / path):
            found.append(f"submodule {path} not clean: {status(worktree / path)}")
    return found


def included_tree(repo: Path) -> None:
    """An ignored ``node_modules`` and ``.env`` listed in ``.worktreeinclude``: the copy is
    one more step a kill can land in."""
    for name in (".gitignore", ".worktreeinclude"):
        write(repo / name, "node_modules/\n.env\n")
    git(repo, "add", ".gitignore", ".worktreeinclude")
    git(repo, "commit", "-q", "-m", "include node_modules")
    git(repo, "push", "-q", "origin", "main")
    write(repo / ".env", "TOKEN=kill-trial\n")
    for i in range(INCLUDED_FILES):
        write(repo / "node_modules" / f"pkg{i % 20}" / f"m{i}.js", f"module {i}\n" * 200)


def included_problems(primary: Path, worktree: Path) -> list[str]:
    """A worktree made from ``primary`` holds every included file whole, and no temp name."""
    if not (primary / ".worktreeinclude").exists():
        return []
    rels = [".env"] + [
        str(p.relative_to(primary)) for p in (primary / "node_modules").rglob("*") if p.is_file()
    ]
    missing = [r for r in rels if not (worktree / r).is_file()]
    torn = [
        r
        for r in rels
        if r not in missing and (worktree / r).read_bytes() != (primary / r).read_bytes()
    ]
    temps = [str(p) for p in worktree.rglob(f"*{TEMP_SUFFIX}")]
    return [
        f"{what}: {', '.join(sorted(found)[:3])}"
        for what, found in (("copies missing", missing), ("copies torn", torn), ("temp", temps))
        if found
    ]


def _declaring_setup(repo: Path) -> Path:
    """``repo`` with a .worktreesetup (and its log ignored) on main, pushed."""
    ignored = repo / ".gitignore"
    before = ignored.read_text() if ignored.exists() else ""
    commit(repo, ".gitignore", f"{before}/{SETUP_LOG}\n", "ignore the setup log")
    commit(repo, ".worktreesetup", WORKTREESETUP, "declare setup commands")
    git(repo, "push", "-q", "origin", "main")
    return repo


def setup_problems(reports: object) -> list[Violation]:
    """After a rerun that finished, each worktree's setup is done: every line ran to its end,
    in order, and no line ran again once it was recorded done. One line may show twice: the
    kill landed after it finished and before its record was written (a line's run and its
    record cannot be one atomic step), so the rerun ran it again, once."""
    found: list[Violation] = []
    for report in reports if isinstance(reports, list) else []:
        if not isinstance(report, dict) or report.get("status") not in {"created", "existing"}:
            continue
        setup = report.get("setup") or {}
        name, worktree = report.get("name"), Path(str(report.get("worktree")))
        if setup.get("status") != "done":
            found.append(Violation("setup-unfinished", f"{name}: setup {setup}"))
            continue
        try:
            ran = (worktree / SETUP_LOG).read_text().splitlines()
        except OSError as exc:
            found.append(Violation("setup-unfinished", f"{name}: {exc}"))
            continue
        collapsed = [line for i, line in enumerate(ran) if i == 0 or ran[i - 1] != line]
        if collapsed != list(SETUP_LINES) or len(ran) > len(SETUP_LINES) + 1:
            found.append(Violation("setup-ran-twice", f"{name}: {SETUP_LOG} holds {ran}"))
    return found


def write_repos_md(plan_dir: Path, primaries: dict[str, Path]) -> None:
    """The topic's repos.md naming every secondary (DESIGN §6), no frontmatter."""
    secondaries = [(n, p) for n, p in primaries.items() if n != HOME]
    text = repos_md(primaries[HOME], *secondaries, topic=None, role="service")
    item = f"- **name:** {SPARSE}\n  **path:** {primaries[SPARSE]}\n  **role:** service\n"
    write(plan_dir / "repos.md", text.replace(item, f"{item}  **sparse:** {CONE}\n"))


def random_work(
    rng: random.Random, worktrees: dict[str, Path], *, dirt: bool | None = None
) -> list[Work]:
    """Commits and dirt in the worktrees; every piece by its object id.

    ``dirt``: True, some repos get uncommitted work; False, none; None, the seed decides.
    Contents carry a per-trial token so a blob can only be reachable because the
    work was kept, never because an unrelated file happens to hold the same bytes.
    """
    dirty_trial = rng.random() < 0.6 if dirt is None else dirt
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


def late_files(ws: Workspace, worktrees: dict[str, Path], rng: random.Random) -> list[Work]:
    """A file written into each worktree directory a killed removal left half-done.

    Half-done: the directory is there but git no longer lists it (``git worktree
    remove`` had dropped the registration). A program still working there writes
    on; the rerun must keep what it wrote, whatever the clock said at the kill.
    """
    made: list[Work] = []
    for name, worktree in worktrees.items():
        listed = worktree_paths(ws.primaries[name])
        if not worktree.is_dir() or str(worktree) in listed:
            continue
        rel = f"late-{rng.getrandbits(48):012x}.txt"
        write(worktree / rel, f"written after the kill {rel}\n")
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
    args: tuple[str, ...], cwd: Path, pace: Pace, *, clock: str = ""
) -> tuple[Rerun, dict[str, object] | None]:
    """Run a command to completion; what it said, and its JSON (None if it printed none)."""
    start = time.monotonic()
    proc = spawn(*args, cwd=cwd, new_group=True, env=clock_env(clock))
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


def kill_at(
    args: tuple[str, ...],
    cwd: Path,
    kind: KillKind,
    fraction: float,
    pace: Pace,
    *,
    clock: str = "",
) -> Kill:
    """Start the command in its own process group; signal it ``fraction`` of a run later.

    Returns once the command and every process it started have exited, so the
    rerun starts on a settled disk (as a user's rerun, seconds later, would).
    """
    window = pace.window(args[0])
    when = pace.when.get(args[0])
    _let_sigint_through()
    start = time.monotonic()
    proc = spawn(*args, cwd=cwd, new_group=True, env=clock_env(clock))
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
                os.killpg(proc.pid, GROUP_SIGNAL[kind])
    out, err, hung = _settle(proc, INTERRUPT_TIMEOUT if fired else RUN_TIMEOUT)
    said = " | ".join(err.strip().splitlines()[-3:])
    problem = ""
    sent = GROUP_SIGNAL.get(kind, signal.SIGKILL)
    if hung:
        problem = f"still running {INTERRUPT_TIMEOUT:.0f}s after the signal"
    elif fired and sent is not signal.SIGKILL:
        problem = interrupt_problem(
            proc.returncode, err, answered=_json(out) is not None, sent=sent
        )
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
        clock,
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


def interrupt_problem(
    code: int, err: str, *, answered: bool, sent: signal.Signals = signal.SIGINT
) -> str:
    """What is wrong with how a command took Ctrl-C, SIGTERM or SIGHUP ("" when nothing is).

    The contract: exit 130 (or 128 + the signal's number), no traceback. But a command that ``answered`` (printed
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
    if (code in (130, 128 + sent) or answered) and not traceback:
        return ""
    if code == -sent or (traceback and code == 1):
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
    """What the command was doing: the commands it had started and that were running.

    A setup line runs in a session of its own (outside the group): it is found by its
    parent, and shows as ``sh``.
    """
    running = sorted({_subcommand(argv) for _, ppid, argv in group_members(pgid) if ppid == pgid})
    running += sorted({_subcommand(argv) for argv in _session_leaders_under(pgid)})
    return " + ".join(running) or "python"


def _session_leaders_under(pid: int) -> Iterator[list[str]]:
    """The argv of each child of ``pid`` that leads a session of its own (a setup line)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[1]) == pid and int(fields[3]) == int(entry.name):
            yield [a.decode(errors="replace") for a in argv if a]


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
    """Every worktree reported ready is a whole, clean checkout of the topic branch, locked
    against other tools' cleanup with team-router's own reason (DESIGN §10).

    ``git worktree add`` registers the worktree before it checks the files out:
    killed in between, it leaves a checkout with no files.
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
        elif f"\nlocked {own_lock(TOPIC)}" not in entry:
            why = entry.split("\nlocked", 1)[1].strip() if "\nlocked" in entry else ""
            problems.append(f"locked ({why})" if why else "not locked")
        problems += included_problems(ws.primaries[name], worktree)
        problems += submodule_problems(ws.primaries[name], worktree)
        if name == SPARSE:
            problems += _cone_problems(worktree)
        if problems:
            found.append(Violation("worktree-broken", f"{name}: {'; '.join(problems)}"))
    return found


def _cone_problems(worktree: Path) -> list[str]:
    """The sparse repo's worktree holds its cone and the top level, and nothing else of git's."""
    cone = git(worktree, "sparse-checkout", "list", check=False).splitlines()
    problems = [] if cone == [CONE] else [f"sparse cone is {cone or 'unset'}, not [{CONE!r}]"]
    if not (worktree / CONE / "main.py").is_file():
        problems.append(f"{CONE}/main.py (in the cone) was not checked out")
    if (worktree / "docs" / "guide.md").exists():
        problems.append("docs/guide.md (outside the cone) was checked out")
    return problems


def _held(lock: Path) -> bool:
    with open(lock, "rb") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


def unfinished_teardown(
    ws: Workspace, worktrees: dict[str, Path], *, keep: set[str]
) -> list[Violation]:
    """After a teardown (or pr-cleanup) that exited 0: no worktree and no topic branch is left.

    A repo in ``keep`` had a file written into its half-removed worktree after the
    kill: that directory stays (:func:`lost_work` checks the file), nothing else.
    """
    found: list[Violation] = []
    for name in worktrees:
        repo = ws.primaries[name]
        left = [p for p in worktree_paths(repo) if p != str(repo)]
        if worktrees[name].exists() and name not in keep:
            left.append(f"{worktrees[name]} on disk")
        if TOPIC in branches(repo):
            left.append(f"branch {TOPIC}")
        if left:
            found.append(Violation("teardown-unfinished", f"{name}: {', '.join(left)}"))
    return found


def unrestored(
    worktrees: dict[str, Path], work: list[Work], payload: dict[str, object] | None
) -> list[Violation]:
    """After a restore that exited 0: every uncommitted file and staged blob is back in place."""
    repos = payload.get("repos") if payload else None
    where = {
        str(r.get("name")): Path(str(r["worktree"]))
        for r in (repos if isinstance(repos, list) else [])
        if isinstance(r, dict) and r.get("worktree")
    }
    found: list[Violation] = []
    for w in work:
        if w.kind is WorkKind.COMMIT:
            continue
        worktree = where.get(w.repo, worktrees[w.repo])
        back = (
            _on_disk(worktree / w.path) if w.kind is WorkKind.FILE else _in_index(worktree, w.path)
        )
        if back != w.oid:
            found.append(Violation(f"unrestored-{w.kind}", f"{w.repo}: {w.path} in {worktree}"))
    return found


def lost_work(ws: Workspace, worktrees: dict[str, Path], work: list[Work]) -> list[Violation]:
    """Every piece of work is still reachable: in its worktree, or from some ref."""
    found: list[Violation] = []
    for name, repo in ws.primaries.items():
        mine = [w for w in work if w.repo == name]
        if not mine:
            continue
        try:
            commits = set(git(repo, "rev-list", "--all").split())
        except AssertionError as exc:  # git cannot walk the repository: a state left broken
            found.append(Violation("repo-unreadable", f"{name}: {exc}"))
            continue
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
    lines.append(f"endings: {_count(str(t.ending) for t in trials)}")
    lines.append(f"modes: {_count(str(t.mode) for t in trials if t.mode)}")
    clocks = [k.clock for k in kills if k.fired and k.clock]
    if clocks:
        lines.append(f"clock offsets at the kills: {_count(clocks)}")
    for command in DEFAULT_WINDOWS:
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
