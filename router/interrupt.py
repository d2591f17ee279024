"""Stopping on a signal: Ctrl-C (SIGINT), SIGTERM and SIGHUP, one way for every command.

Every command runs under :func:`handled`. There the first of the three
signals raises :class:`Stopped` wherever the command is, as Ctrl-C does in any
Python program. A command that works in steps (teardown, pr-cleanup,
local-state, restore, doctor --repair) runs them under :func:`deferred`: the
signal is only noted, the step under way stops at its next git call (the git
layer calls :func:`check` before each one), no step starts after it, and the
command reports what it did and what is left. A second signal stops it at once.

Never inside Python's own threading code, though: a signal raised while the
main thread starts or waits for worker threads (:mod:`router.parallel`) leaves
their locks half-released (a traceback, or a worker taken for finished while
it still runs). There, under :func:`held`, the handler only notes the signal
and asks the workers to start no further item (:func:`stopping`); the command
stops once the items under way are done, when the wait ends.

The signals reach the whole process group, git included. A git they killed
stops the command the same way (:func:`check_child`), and so does one that
failed while the signal came: its answer was cut short, and a cut-short
answer is never "nothing there".
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    R = TypeVar("R")

# Their numbers are the same on every POSIX system. The git layer imports this
# module on the session-start hook's path, which must not pay for `signal`
# (~1.5 ms) before a handler is installed.
SIGHUP, SIGINT, SIGTERM = 1, 2, 15
SIGNALS = (SIGINT, SIGTERM, SIGHUP)

# How the detail of a unit of work (a step, a repo's restore, a repair) a signal
# stopped or kept from starting begins: its words (a step says it typed, ``NotDone``).
NOT_DONE = "not done: interrupted"

_received = 0  # the first of SIGNALS this command received (0: none)
_deferring = False  # inside deferred(): a signal is noted, not raised
_holding = False  # inside held(): the main thread is in threading's code, never raised in
_at_once = 0  # the signal that asked to stop at once while holding (0: none)


class Stopped(BaseException):
    """The command was stopped by signal ``signum``.

    A BaseException, as KeyboardInterrupt is, so that no ``except Exception``
    (nor ``except GitError``, which reads a failure as an answer) swallows
    it. Not a KeyboardInterrupt: a command's handling of Ctrl-C must not catch
    a SIGTERM or SIGHUP, whose exit codes differ (128 + the signal's number).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def name(signum: int) -> str:
    """The signal as a user knows it: ``Ctrl-C`` for SIGINT, else its name (``SIGTERM``)."""
    import signal

    if signum == SIGINT:
        return "Ctrl-C"
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def received() -> int:
    """The signal that stopped this command (0: none)."""
    return _received


def signum_of(exc: BaseException) -> int:
    """The signal behind an interrupt: a :class:`Stopped`'s own, SIGINT for a plain Ctrl-C."""
    return exc.signum if isinstance(exc, Stopped) else SIGINT


def check() -> None:
    """Raise :class:`Stopped` once a signal stopped the command: no git starts after it."""
    if _received:
        raise Stopped(_received)


def unless_stopped(work: Callable[[], R], stopped: Callable[[str, bool], R]) -> R:
    """``work()``, or ``stopped(detail, started)`` when a signal stopped the command before or during it.

    The one rule of every command that works in units (teardown's and
    pr-cleanup's steps, restore's repos, doctor's repairs): none starts after
    the signal (``started`` False), and the one under way stops at its next
    git call (``started`` True: it did part of its work, as a kill would
    leave it). ``detail`` says which, and that a rerun does or finishes it.
    """
    if _received:
        return stopped(stopped_words(_received, started=False), False)
    try:
        return work()
    except Stopped as exc:
        return stopped(stopped_words(exc.signum, started=True), True)


def stopped_words(signum: int, *, started: bool) -> str:
    """The detail of a unit of work signal ``signum`` stopped (``started``: part-way through it)
    or kept from starting, and what a rerun does."""
    rerun = "stopped part-way; a rerun finishes it" if started else "a rerun does it"
    return f"{NOT_DONE} ({name(signum)}): {rerun}"


def check_child(returncode: int) -> None:
    """A child killed by one of the three signals stops the command (``returncode`` is ``-signum``).

    So does one that failed once a signal stopped the command: the signal reached the
    whole group, and a child that caught it (a git wrapper, a hook's shell) and exited 1
    has not answered "no". No child starts after the signal (:func:`check`), so this
    one ran while it came.
    """
    if -returncode in SIGNALS:
        _note(-returncode)
    if _received and returncode != 0:
        raise Stopped(_received)


def _note(signum: int) -> None:
    global _received
    if not _received:
        _received = signum


# The context managers here are small classes, not contextlib's: the session-start hook
# runs under handled(), and importing contextlib would cost it ~1 ms.


class handled:  # lowercase: it is used as a context manager, as contextlib's are
    """Run a command with the three signals handled; outside the main thread nothing changes.

    A signal the command was started with ignored stays ignored: ``nohup``
    (SIGHUP) and a shell's background job (SIGINT) ask for exactly that.
    """

    __slots__ = ("_previous",)

    def __init__(self) -> None:
        self._previous: dict[int, Any] | None = None  # None: nothing was changed

    def __enter__(self) -> None:
        import signal

        if not _main_thread():
            return
        previous = {s: signal.getsignal(s) for s in SIGNALS}
        _clear()
        for signum, handler in previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(signum, _on_signal)
        self._previous = previous

    def __exit__(self, *_exc: object) -> None:
        import signal

        if self._previous is None:
            return
        for signum, handler in self._previous.items():
            if handler is not None:
                signal.signal(signum, handler)
        _clear()


def _main_thread() -> bool:
    """Whether this is the main thread, the one Python runs signal handlers in.

    Every thread of ours is started through ``threading``: before that module is
    imported, only the main thread runs. Not importing it to ask saves the
    session-start hook ~2 ms.
    """
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


def _clear() -> None:
    global _received, _at_once
    _received = _at_once = 0


class deferred:  # lowercase: a context manager
    """Inside, the first signal is noted, not raised: the work stops at its next git call."""

    __slots__ = ("_before",)

    def __enter__(self) -> None:
        global _deferring
        self._before = _deferring
        _deferring = True

    def __exit__(self, *_exc: object) -> None:
        global _deferring
        _deferring = self._before


class held:  # lowercase: a context manager
    """Inside, a signal never raises: the main thread is starting or waiting for threads.

    A signal that would stop the command at once is noted and :func:`stopping`
    turns true; :class:`Stopped` is raised on the way out, once the threads
    are done and the code is ours again. One that is only noted (the first in
    :func:`deferred`) stays so. In another thread nothing changes: handlers
    run in the main thread alone.
    """

    __slots__ = ("_before",)

    def __init__(self) -> None:
        self._before: bool | None = None  # None: another thread, nothing was changed

    def __enter__(self) -> None:
        global _holding
        if _main_thread():
            self._before = _holding
            _holding = True

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        global _holding, _at_once
        if self._before is None:
            return
        _holding = self._before
        if kind is None and _at_once:
            # Raised once, as the handler would have: a command that reports what a
            # stopped unit did (unless_stopped) goes on reporting, its later waits too.
            signum, _at_once = _at_once, 0
            raise Stopped(signum)


def stopping() -> bool:
    """A signal asked the command to stop at once: no further unit of work may start."""
    return bool(_at_once)


def _on_signal(signum: int, _frame: object) -> None:
    global _at_once
    first = not _received
    _note(signum)
    if not (first and _deferring):
        if _holding:
            # Raised here it would land in threading's code: noted, raised by held().
            _at_once = signum
            return
        raise Stopped(signum)
    again = "Ctrl-C again" if signum == SIGINT else "send it again"
    # A closed terminal (SIGHUP) cannot be written to, and the main thread may be
    # inside a write to stderr itself (a reentrant write raises): the note is then
    # dropped, never raised where the command happens to be.
    try:  # noqa: SIM105 (contextlib stays off the hook's path)
        print(
            f"team-router: interrupted ({name(signum)}): stopping at the next step boundary "
            f"({again} to stop at once)",
            file=sys.stderr,
            flush=True,
        )
    except (OSError, ValueError, AttributeError, RuntimeError):
        pass


def interrupted_error(signum: int, where: str) -> dict[str, str]:
    """The ``error`` of a command a signal stopped part-way: ``where`` says what is done and what is left."""
    from router.errors import ErrorCode, error_json

    return error_json(
        ErrorCode.INTERRUPTED,
        f"interrupted ({name(signum or SIGINT)}): {where}; run the same command again to finish",
    )


class nothing_done:  # lowercase: a context manager
    """A signal inside stops ``what`` before it changed anything, and the error says so."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, _kind: object, exc: BaseException | None, _tb: object) -> None:
        if isinstance(exc, Stopped):
            from router.errors import Interrupted

            raise Interrupted(
                f"{self.what} interrupted ({name(exc.signum)}) before anything was changed; "
                "run the same command again",
                signum=exc.signum,
            ) from None
