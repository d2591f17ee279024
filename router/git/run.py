"""The one chokepoint: every git process team-router starts is started here.

Commands are argument lists (never a shell), user-supplied names come after
``--`` wherever git accepts it, and output that is parsed is requested in a
machine format (``--porcelain``, ``-z``) under ``LC_ALL=C``. A signal stops
the command before git starts (:func:`router.interrupt.check`), a git killed
by one stops it after (:func:`router.interrupt.check_child`), and a git that
fails becomes a :class:`GitError` (a :class:`router.errors.ToolFailed`).

git runs through ``os.posix_spawn`` (:mod:`router.git.spawn`) rather than GitPython's command
layer: importing GitPython costs about 120 ms (70 ms for ``git.cmd`` alone),
which is twice the whole budget of the session-start hook and more than the
overhead ``new`` may add to a bare ``git worktree add`` (DESIGN §15).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from router import interrupt
from router.errors import ErrorCode, ToolFailed
from router.git import answers
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Self, TypeVar

    from router.git.spawn import Child

    T = TypeVar("T")

# Variables that point git at a repository or index other than the one we ask
# about. They leak in when team-router runs from a git hook or a tool that set
# them, and would silently redirect every command.
_LEAKY_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_VARS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    # Reads never take a lock they can do without (status refreshing the
    # index): a read killed at any instant leaves no index.lock behind, and
    # never collides with the user's own git in that checkout.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    # An ssh password prompt would hang a fetch exactly like a credential prompt.
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    return env


# lockfile.c's message (LC_ALL=C), for index.lock, packed-refs.lock and
# refs/heads/<b>.lock alike; a killed git leaves the file behind.
# packed-refs is rewritten through ``packed-refs.new``, which a killed git leaves
# the same way ("unable to create file <path>: File exists", unquoted).
# The sequencer (cherry-pick, revert) names the file it could not lock, not the
# lock: "could not lock '.git/MERGE_MSG': File exists" is MERGE_MSG.lock.
# Read only when git failed: compiled (and cached by ``re``) then, not by every command.
_LOCK_IN_THE_WAY = (
    r"Unable to create '(?P<path>[^\n]+?\.lock)': File exists"
    r"|unable to create file (?P<new>[^\n]+?/packed-refs\.new): File exists"
    r"|could not lock '(?P<locked>[^\n']+)': File exists"
)


class GitError(ToolFailed):
    """git exited non-zero (or could not run); carries argv, exit code and stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, stdout: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr.strip()
        self.stdout = stdout
        super().__init__(f"{' '.join(self.argv)} exited {returncode}: {self.stderr}")

    @property
    def exited(self) -> bool:
        """git ran and ended by itself: not killed by a signal (a negative exit code), not
        stopped at its timeout, not missing. Only such a failure can say something of the
        repository; the others say something of the moment."""
        return self.returncode > 0

    @property
    def lock_file(self) -> Path | None:
        """The lock file that made git give up ("Unable to create '<x>.lock': File exists")."""
        found = re.search(_LOCK_IN_THE_WAY, self.stderr)
        if found is None:
            return None
        lock = Path(found["path"] or found["new"] or f"{found['locked']}.lock")
        # git names some relative to where it ran (-C), which the message must not depend on.
        repo = self.repo
        return lock if lock.is_absolute() or repo is None else repo / lock

    @property
    def code(self) -> ErrorCode:
        """The error code a refusal caused by this failure carries."""
        return ErrorCode.GIT_LOCKED if self.lock_file is not None else ErrorCode.GIT_FAILED

    @property
    def fix(self) -> str:
        # A lock file in the way: the first line already says what to remove and to run again.
        return "" if self.lock_file is not None else super().fix

    @property
    def first_line(self) -> str:
        """The first line of git's complaint, for one-line user messages.

        A lock file in the way is named with the fix instead: git's own text
        ends in a paragraph that a one-line message would cut off.
        """
        lock = self.lock_file
        if lock is not None:
            return lock_message(lock, self.repo)
        if self.returncode < 0:  # killed: whatever it wrote before is not why it stopped
            return killed_words(-self.returncode)
        lines = [ln for ln in self.stderr.splitlines() if ln.strip()]
        return lines[0] if lines else f"git exited {self.returncode}"

    @property
    def repo(self) -> Path | None:
        """The directory git ran in (``git -C <dir>``)."""
        argv = self.argv
        return Path(argv[2]) if len(argv) > 2 and argv[1] == "-C" else None


def killed_words(signum: int) -> str:
    """A git a signal ended (``signum``), as its exit code ``-signum`` cannot say it."""
    import signal

    try:
        named = f" ({signal.Signals(signum).name})"
    except ValueError:
        named = ""
    return f"git was killed by signal {signum}{named}"


def lock_message(lock: Path, repo: Path | None) -> str:
    """What a git lock file in the way means, and the one safe fix."""
    where = repo or lock.parent
    return (
        f"git found its lock file {lock} in the way: another git command is running in "
        f"{where}, or one was killed and left it behind; if no git command is running in "
        f"{where}, remove {lock}, then run this again"
    )


_NO_GIT = "git is not installed or not on PATH"


class GitMissing(GitError):
    """The git executable is not installed or not on PATH.

    Refused as ``open_repo`` refuses it (``not-a-repo``, "install git"), wherever
    the first git of a command runs: a plain layout is read from its files.
    """

    @property
    def code(self) -> ErrorCode:
        return ErrorCode.NOT_A_REPO

    @property
    def fix(self) -> str:
        return "install git"

    @property
    def exited(self) -> bool:
        return False


class GitTimedOut(GitError):
    """git was killed at the timeout its command was given."""

    def __init__(self, argv: Sequence[str], timeout: float | None) -> None:
        super().__init__(argv, 124, f"timed out after {timeout or 0:.0f}s")

    @property
    def exited(self) -> bool:
        return False


@record
class Result:
    """A finished git command: exit code and decoded output."""

    returncode: int
    stdout: str
    stderr: str
    argv: tuple[str, ...] = ()  # the command as it ran

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def as_error(self) -> GitError:
        """The GitError ``check`` raises for this command; built on exit 0 too, since some
        complaints (a lock file in the way of ``cherry-pick --abort``) come with exit 0."""
        return GitError(self.argv, self.returncode, self.stderr, self.stdout)


class Running:
    """A git process started by :meth:`Git.start`; :meth:`wait` collects it (once, then remembered).

    Its timeout counts from the start. Output is collected at the end (both pipes read at
    once, so a long answer never stalls it): the commands started this way (a quiet fetch,
    a status) print little.
    """

    def __init__(
        self,
        argv: list[str],
        child: Child | None,
        timeout: float | None,
        *,
        changes: bool = True,
    ):
        self._argv = argv
        self._changes = changes
        self._child = child
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout
        self._outcome: Result | GitError | None = None

    def wait(self) -> Result:
        """The finished command's result; raises GitError as :meth:`Git.run` does."""
        if self._outcome is None:
            try:
                self._outcome = self._collect()
            finally:
                if self._changes:
                    answers.forget()  # what it changed is in place now
        if isinstance(self._outcome, GitError):
            raise self._outcome
        return self._outcome

    def error(self) -> GitError | None:
        """None when the command succeeded, else its error (never raised)."""
        try:
            self.wait()
        except GitError as exc:
            return exc
        return None

    def stop(self, exc: BaseException) -> None:
        """Once the command is stopped (``exc``) before :meth:`wait`: git gets the signal
        that stopped it and its end is waited for (killed at once for any other error)."""
        if self._child is not None and self._outcome is None:
            _end_for(self._child, exc)

    def _collect(self) -> Result | GitError:
        child = self._child
        if child is None:
            return GitMissing(self._argv, 127, _NO_GIT)
        from router.git.spawn import TimedOut

        try:
            returncode, out, err = child.communicate(self._deadline)
        except TimedOut:  # killed and reaped, its pipes closed unread
            return GitTimedOut(self._argv, self._timeout)
        except BaseException as exc:
            _end_for(child, exc)
            raise
        interrupt.check_child(returncode)
        result = _git_result(self._argv, returncode, out, err)
        return result if result.ok else result.as_error()


def _git_result(argv: Sequence[str], returncode: int, out: bytes, err: bytes) -> Result:
    """A finished git's result. Read as bytes, decoded here: text mode would also translate
    newlines, turning a blob's CRLF (or a \r inside a -z path) into \n and breaking sized reads."""
    stdout, stderr = out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape")
    return Result(returncode, stdout, stderr, tuple(argv))


# How long a git the command's signal was passed on to may take to end (its own
# cleanup: `git worktree add` removes the worktree it was making) before it is killed.
STOP_WAIT = 10.0


def _run_to_its_end(
    argv: list[str],
    *,
    env: Mapping[str, str],
    timeout: float | None = None,
    input: bytes | None = None,
) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of ``argv`` run to its end; a signal that stops the
    command never SIGKILLs git.

    git stopped by a signal (the terminal's Ctrl-C, a SIGTERM to the group)
    undoes what it was making, `git worktree add` its registration and then
    its checkout: killed in the middle of that, it left a checkout no
    registration names, which the next run takes for someone else's. So git
    gets the signal that stopped the command (it already has it when the
    whole group got it), and its end is waited for; only a second signal, or
    a git that outlives :data:`STOP_WAIT`, kills it. Raises FileNotFoundError
    when there is no git, :class:`router.git.spawn.TimedOut` after ``timeout``.
    """
    from router.git.spawn import Child

    child = Child(argv, env, input)
    try:
        return child.communicate(None if timeout is None else time.monotonic() + timeout)
    except BaseException as exc:
        _end_for(child, exc)
        raise


def _end_for(child: Child, exc: BaseException) -> None:
    """``child`` ended as the error ``exc`` that cut its command short asks: passed the
    signal that stopped the command (a Ctrl-C's, a SIGTERM's) and waited for, else killed."""
    if isinstance(exc, (interrupt.Stopped, KeyboardInterrupt)):
        child.stop(interrupt.signum_of(exc), STOP_WAIT)
    else:
        child.kill()


def verified(res: Result) -> str | None:
    """``rev-parse -q --verify``'s answer: the object, None (exit 1: it does not resolve), or raise.

    Any other exit (128: not a repository, a corrupt object store) is git
    failing to answer, never "absent".
    """
    if res.ok:
        return res.stdout.strip() or None
    if res.returncode == 1:
        return None
    raise res.as_error()


class Runner:
    """git anchored to one directory (``git -C <cwd>``): the commands that start it.

    :class:`router.git.Git` adds what it asks git, grouped by git concept.
    A slotted class rather than a dataclass: every command makes one, and
    importing ``dataclasses`` brings ``inspect``, ``ast`` and ``tokenize``.
    """

    __slots__ = ("cwd", "env")

    def __init__(self, cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env: Mapping[str, str] = {} if env is None else env

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(cwd={self.cwd!r}, env={self.env!r})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Runner)
        return (self.cwd, self.env) == (other.cwd, other.env)

    __hash__ = None  # type: ignore[assignment]  # compared by value and mutable, as a dataclass

    # -- running --------------------------------------------------------------

    def run(
        self,
        *args: str,
        check: bool = True,
        timeout: float | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        config: Iterable[str] = (),
    ) -> Result:
        """Run ``git -C cwd [-c k=v ...] args``; raise GitError on failure when ``check``."""
        fed = None if input is None else input.encode("utf-8", "surrogateescape")
        result = _git_result(*self._ended(args, config, timeout, fed, env))
        if check and not result.ok:
            raise result.as_error()
        return result

    def _ended(
        self,
        args: Sequence[str],
        config: Iterable[str] = (),
        timeout: float | None = None,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> tuple[list[str], int, bytes, bytes]:
        """``git -C cwd [-c k=v ...] args`` run to its end: its argv, exit status and output.

        Never once a signal stopped the command, and a git killed by one raises
        (:class:`router.interrupt.Stopped`) whatever the caller checks: a cut-short
        answer is never an answer.
        """
        from router.git.spawn import TimedOut

        interrupt.check()
        argv = self._argv(args, config)
        try:
            with _changing(args):
                ended = _run_to_its_end(
                    argv,
                    env={**base_env(), **self.env, **(env or {})},
                    timeout=timeout,
                    input=input,
                )
        except FileNotFoundError as exc:
            raise GitMissing(argv, 127, _NO_GIT) from exc
        except TimedOut as exc:
            raise GitTimedOut(argv, timeout) from exc
        interrupt.check_child(ended[0])
        return (argv, *ended)

    def _recall(self, question: tuple[str, ...], ask: Callable[[], T]) -> T:
        return recall_about(self, question, ask)

    def _about(self, question: tuple[str, ...], ask: Callable[[], T]) -> T:
        """:meth:`_recall`, when every revision asked about (``question[1:]``) is a full ref
        or an object id; else asked each time (a checkout's HEAD is never remembered)."""
        return self._recall(question, ask) if answers.about_refs(*question[1:]) else ask()

    def _argv(self, args: Iterable[str], config: Iterable[str] = ()) -> list[str]:
        # core.fsmonitor names a command git runs whenever it reads an index
        # (status, fetch, pull, cherry-pick, worktree add ...): the checkouts we
        # work in are someone else's, and their config must not run code through us.
        argv = ["git", "-C", str(self.cwd), "-c", "core.fsmonitor="]
        for item in config:
            argv += ["-c", item]
        return argv + list(args)

    def run_bytes(self, *args: str) -> bytes:
        """stdout of a successful command, as bytes (text mode would turn CRLFs into LFs)."""
        argv, returncode, out, err = self._ended(args)
        if returncode != 0:
            raise GitError(argv, returncode, err.decode("utf-8", "replace"))
        return out

    def out(self, *args: str, **kw: object) -> str:
        """stdout of a successful command, trailing newline stripped."""
        return self.run(*args, **kw).stdout.rstrip("\n")  # type: ignore[arg-type]

    def ok(self, *args: str) -> bool:
        """True when the command exits 0 (for predicates such as ``merge-base --is-ancestor``)."""
        return self.run(*args, check=False).ok

    def says_yes(self, *args: str) -> bool:
        """The answer of a command that says yes by exiting 0 and no by exiting 1
        (``show-ref --verify``, ``reflog exists``); any other end (a fatal error, a git
        killed before it answered) raises :class:`GitError`: it is no "no"."""
        res = self.run(*args, check=False)
        if res.returncode not in (0, 1):
            raise res.as_error()
        return res.ok

    def at(self, path: Path) -> Self:
        """The same git, anchored elsewhere."""
        return type(self)(path, self.env)

    def start(self, *args: str, timeout: float | None = None) -> Running:
        """Start ``git -C cwd args`` and return at once; :meth:`Running.wait` ends it."""
        interrupt.check()
        argv = self._argv(args)
        changes = not answers.read_only(args)
        if changes:
            answers.forget()
        from router.git.spawn import Child

        try:
            child = Child(argv, {**base_env(), **self.env}, None)
        except FileNotFoundError:
            return Running(argv, None, timeout, changes=changes)
        return Running(argv, child, timeout, changes=changes)


def recall_about(git: Runner, question: tuple[str, ...], ask: Callable[[], T]) -> T:
    """``ask()``'s answer to ``question`` about ``git``'s directory, remembered while a
    command gathers its facts (:mod:`router.git.answers` says when that is safe)."""
    key = (str(git.cwd), tuple(sorted(git.env.items())), question)
    return answers.recall(key, ask)


class _changing:
    """Around a git command that may change the repository: every remembered answer is
    forgotten before it starts and again once it ended, however it ended
    (:mod:`router.git.answers`)."""

    __slots__ = ("_changes",)

    def __init__(self, args: Sequence[str]) -> None:
        self._changes = not answers.read_only(tuple(args))

    def __enter__(self) -> None:
        if self._changes:
            answers.forget()

    def __exit__(self, *exc: object) -> None:
        if self._changes:
            answers.forget()
