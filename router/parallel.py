"""Bounded parallelism over repos: one map for every command that asks many repos at once.

git processes for different repos do not share locks, so they run side by side;
the bound keeps a topic with many repos from starting a process per repo at once.
A few threads pulling from one list do it: ``concurrent.futures`` would bring
``logging``, ``traceback`` and ``textwrap`` along (~10 ms), before any repo.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from router import interrupt

TYPE_CHECKING = False
if TYPE_CHECKING:
    # Annotations only (they are strings at run time): importing typing costs ~3 ms.
    from typing import TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

MAX_PARALLEL = 8  # repos worked on at once


def parallel_map(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(i) for i in items]``, in order, at most ``MAX_PARALLEL`` at a time.

    Every item runs even when one raises; then the first error (in the items'
    order) is raised. One item (or none) runs inline: no thread for the common
    single-repo topic.
    """
    outcomes = parallel_outcomes(fn, items)
    failed = next((o for o in outcomes if isinstance(o, _Raised)), None)
    if failed is not None:
        raise failed.error
    return outcomes  # type: ignore[return-value]


def parallel_outcomes(fn: Callable[[T], R], items: Iterable[T]) -> list[R | _Raised]:
    """Each item's result, or what it raised (as ``_Raised``), in order; all of them run.

    A signal that stops the command at once (router.interrupt) starts no
    further item: those under way finish (their gits got the signal too), so
    nothing is left half-written, and then :class:`~router.interrupt.Stopped`
    is raised. It is never raised while the threads are started or waited for:
    inside threading's own code it would leave their locks half-released.
    """
    items = list(items)
    outcomes: list[R | _Raised] = [_Raised(_NOT_RUN)] * len(items)
    pending = iter(range(len(items)))
    taking = threading.Lock()
    interrupted = threading.Event()  # a KeyboardInterrupt of a handler not ours

    def work() -> None:
        while not (interrupted.is_set() or interrupt.stopping()):
            with taking:
                n = next(pending, None)
            if n is None:
                return
            try:
                outcomes[n] = fn(items[n])
            except BaseException as exc:  # kept for the caller, raised there
                outcomes[n] = _Raised(exc)

    if len(items) <= 1:
        work()
        return outcomes
    with interrupt.held():  # raises Stopped at its end, once the threads are done
        _run_threads(work, min(MAX_PARALLEL, len(items)), interrupted)
    return outcomes


def _run_threads(work: Callable[[], None], count: int, interrupted: threading.Event) -> None:
    """``count`` threads running ``work``, each waited for."""
    threads = [threading.Thread(target=work) for _ in range(count)]
    started: list[threading.Thread] = []
    try:
        for thread in threads:
            started.append(thread)
            thread.start()
        for thread in threads:
            _join(thread)
    except BaseException:
        # Raised by a signal handler that is not router.interrupt's (Python's
        # own Ctrl-C, where no command set ours): the same rule, as far as the
        # threads still allow it.
        interrupted.set()
        for thread in started:
            try:
                thread.join()
            except RuntimeError:  # one whose start() the Ctrl-C cut short
                continue
        raise


JOIN_POLL = 0.1  # seconds: how late a signal's handler may run while the threads work


def _join(thread: threading.Thread) -> None:
    """Wait for ``thread`` in short steps, so that a signal's handler runs meanwhile.

    Python runs handlers in the main thread only, between two of its own steps.
    A kernel may hand a process's signal to any of its threads (macOS does), and
    one handed to a worker does not wake a main thread blocked in one long join:
    the handler (the stop flag of a Ctrl-C or a SIGTERM, router.interrupt) would
    wait for every worker to finish, and so would the `.teamteardown` lines it stops.
    """
    while thread.is_alive():
        thread.join(JOIN_POLL)


class _Raised:
    """What one item raised (an item's own result is never one of these)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_NOT_RUN = RuntimeError("not run")


def raised(outcome: object) -> BaseException | None:
    """The error a :func:`parallel_outcomes` outcome holds, or None for a result."""
    return outcome.error if isinstance(outcome, _Raised) else None
