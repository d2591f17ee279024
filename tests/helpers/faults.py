"""Running the installed ``team-router`` as real processes (locks, crashes, parallel runs)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from helpers import plancheck
from helpers.repos import CliResult

EXE = Path(sys.executable).with_name("team-router")
CRASHED = 137  # the crash seam's exit code
KILLED = -9  # Popen's return code for a process SIGKILLed (git_killer)


def argv(*args: str, cwd: Path) -> list[str]:
    exe = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "router.entry"]
    return [*exe, "-C", str(cwd), *args]


def spawn(
    *args: str,
    cwd: Path,
    crash_at: str | None = None,
    env: dict[str, str] | None = None,
    new_group: bool = False,
) -> subprocess.Popen[str]:
    """Start ``team-router -C cwd args`` (the test's hermetic environment is inherited).

    ``env`` adds to that environment; ``new_group`` starts it as the leader of
    its own process group, which a :func:`git_killer` kills or a test signals.
    """
    full = {**os.environ, **(env or {})}
    full.pop("TEAM_ROUTER_CRASH_AT", None)
    if crash_at is not None:
        full["TEAM_ROUTER_CRASH_AT"] = crash_at
    return subprocess.Popen(
        argv(*args, cwd=cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=full,
        start_new_session=new_group,
        preexec_fn=_signals_as_in_a_terminal,
    )


def _signals_as_in_a_terminal() -> None:
    """SIGINT, SIGTERM and SIGHUP at their defaults, as a command typed in a terminal has them.

    A signal ignored at start stays ignored (``nohup``, a shell's background
    job), and a runner started in the background would pass that on.
    """
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> CliResult:
    out, err = proc.communicate(timeout=timeout)
    return CliResult(proc.returncode, out, err)


def run(
    *args: str,
    cwd: Path,
    crash_at: str | None = None,
    env: dict[str, str] | None = None,
    new_group: bool = False,
) -> CliResult:
    """Run ``team-router -C cwd args`` as a process to its end.

    A real teardown or pr-cleanup is planned first while the plan check is on
    (:mod:`helpers.plancheck`), unless the crash seam stops it part-way.
    """

    def act() -> CliResult:
        return finish(spawn(*args, cwd=cwd, crash_at=crash_at, env=env, new_group=new_group))

    if crash_at is not None or not plancheck.wanted(args):
        return act()
    plan = plancheck.process_plan(argv, cwd, env or {})
    return plancheck.checked(args, cwd, plan, act)


def git_wrapper(bin_dir: Path, when: str, body: str) -> dict[str, str]:
    """Environment whose ``git`` (first on PATH) runs the shell text ``body`` when its arguments contain ``when``.

    Any other git command runs the real git. In ``body`` the real git is
    ``$REAL_GIT`` and its arguments ``"$@"``.
    """
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f"REAL_GIT='{real_git}'\n"
        f'case " $* " in *"{when}"*) ;; *) exec "$REAL_GIT" "$@" ;; esac\n'
        f"{body}\n"
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def git_logger(bin_dir: Path, log: Path) -> dict[str, str]:
    """Environment whose ``git`` (first on PATH) appends each call's arguments to ``log``, then runs git."""
    return git_wrapper(bin_dir, "", f'echo "$*" >> \'{log}\'\nexec "$REAL_GIT" "$@"')


def git_verbs(log: Path) -> Counter[str]:
    """How many git processes ``git_logger`` saw, per git command (past ``-c k=v`` and ``-C dir``)."""
    if not log.exists():
        return Counter()  # no git ran at all
    return Counter(git_verb(line.split()) for line in log.read_text().splitlines())


def git_verb(words: list[str]) -> str:
    """The git command of an argument list (past ``-c k=v`` and ``-C dir``); ``?`` if none."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-c", "-C"):
            skip = True
        elif not word.startswith("-"):
            return word
    return "?"


def git_killer(bin_dir: Path, when: str, then: str = "", *, real: bool = True) -> dict[str, str]:
    """Environment whose ``git`` is killed mid-command, as a kill -9 or a power cut would.

    When its arguments contain ``when``, the ``git`` first on PATH runs the
    real git, then the shell text ``then``, and SIGKILLs its whole process
    group: the ``team-router`` that called it, started with ``new_group=True``
    (never without: the group would be the test's own). With ``real=False``
    the real git does not run there (``then`` stands in for a git killed
    before it finished).
    """
    run_real = '"$REAL_GIT" "$@"\n' if real else ""
    return git_wrapper(bin_dir, when, f"{run_real}{then}\nkill -KILL 0")


def git_signaller(
    bin_dir: Path, when: str, signum: int, *, once: Path, only_if_ok: bool = False
) -> dict[str, str]:
    """Environment whose ``git`` sends ``signum`` to its process group right after a ``when`` command.

    The real git runs first; then the signal goes to the whole group, as a
    terminal's Ctrl-C or a closed terminal's SIGHUP does: the ``team-router``
    that called it (started with ``new_group=True``, never without: the group
    would be the test's own) and the wrapper itself, so that to its caller the
    git died of the signal after doing its work. Only the first time (``once``
    is the marker file); with ``only_if_ok``, only at a ``when`` command git
    answered with exit 0.
    """
    name = signal.Signals(signum).name.removeprefix("SIG")
    ok = ' && [ "$rc" = 0 ]' if only_if_ok else ""
    return git_wrapper(
        bin_dir,
        when,
        f'"$REAL_GIT" "$@"\nrc=$?\n'
        f"if [ ! -e '{once}' ]{ok}; then : > '{once}'; kill -{name} 0; fi\nexit $rc",
    )


def git_then(bin_dir: Path, when: str, then: str) -> dict[str, str]:
    """Environment whose ``git`` runs the shell text ``then`` right after a ``when`` command.

    The real git runs first and its exit code is kept: ``then`` is another
    program acting at exactly that moment (an edit, a commit, a new file).
    """
    return git_wrapper(bin_dir, when, f'"$REAL_GIT" "$@"\nrc=$?\n{then}\nexit $rc')


def slow_git(bin_dir: Path, when: str, started: Path, seconds: float = 30) -> dict[str, str]:
    """Environment whose ``git`` touches ``started`` and sleeps ``seconds`` before running a ``when`` command."""
    return git_wrapper(
        bin_dir, when, f'touch \'{started}\'\nsleep {seconds}\nexec "$REAL_GIT" "$@"'
    )


def run_all(commands: list[tuple[str, ...]], *, cwd: Path) -> list[CliResult]:
    """Start every command at once, then collect them in order."""
    procs = [spawn(*c, cwd=cwd) for c in commands]
    return [finish(p) for p in procs]


def tree(root: Path) -> set[str]:
    """Every path under ``root`` (relative), symlinks not followed."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def wait_until_open(pid: int, path: Path, timeout: float = 30) -> None:
    """Wait until process ``pid`` has ``path`` open (Linux /proc), as a git holding its lock does."""
    deadline = time.monotonic() + timeout
    fds = Path(f"/proc/{pid}/fd")
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) == str(path) for fd in fds.iterdir()):
                return
        time.sleep(0.01)
    raise AssertionError(f"{pid} never opened {path}")


def hold_open(path: Path) -> subprocess.Popen[bytes]:
    """A live process holding ``path`` open (as a running git holds its lock file); kill it when done."""
    proc = subprocess.Popen(["sh", "-c", 'exec 3<"$0"; exec sleep 60', str(path)])
    wait_until_open(proc.pid, path)
    return proc


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A ``tmpfs`` of ``size`` (``16m``) mounted at ``folder`` (made here): a disk that fills up.

    Needs root; skips the test with the reason where mount refuses. Unmounted
    whatever happens (lazily: a process still in it must not keep it mounted).
    """
    import pytest

    folder.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"a full disk needs a tmpfs mount, and mount failed: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextlib.contextmanager
def bind_mounted(source: Path, at: Path, *, within: Path) -> Iterator[Path]:
    """``source`` bind-mounted at ``at`` (made here): the same filesystem, so the same device.

    Skips where mount refuses. Unmounted whatever happens, wherever a rename below
    ``within`` took it (every mount point below ``within`` in the kernel's table).
    """
    import pytest

    from router.mounts import mounts

    at.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "--bind", str(source), str(at)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"a bind mount is not possible here: {made.stderr.strip()}")
    try:
        yield at
    finally:
        below = [m.point for m in mounts() if m.point.startswith(f"{within}/")]
        for point in reversed(below):
            subprocess.run(["umount", "-l", point], check=False)


def fill_disk(disk: Path, *, leave: int = 0) -> Path:
    """Fill the filesystem of ``disk`` but ``leave`` bytes with a file ``filler`` (returned)."""
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize - leave
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        chunk = b"\0" * (1 << 16)
        while free > 0:
            try:
                free -= out.write(chunk[: min(len(chunk), free)])
            except OSError:
                break
    return filler
