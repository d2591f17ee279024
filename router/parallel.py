"""Bounded parallelism over repos: one map for every command that asks many repos at once.

git processes for different repos do not share locks, so they run side by side;
the bound keeps a topic with many repos from starting a process per repo at once.
A few threads pulling from one list do it: ``concurrent.futures`` would bring
``logging``, ``traceback`` and ``textwrap`` along (~10 ms), before any repo.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from router import interrupt

TYPE_CHECKING = False
if TYPE_CHECKING:
    # Annotations only (they are strings at run time): importing typing costs ~3 ms.
    import threading
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

MAX_PARALLEL = 8  # repos worked on at once

# threading is imported where threads are made: a command that loads this module and
# works on one repo (``new``) never needs it.


def parallel_map(fn: Callable[[T], R], items: Iterable[T], *, limit: int = MAX_PARALLEL) -> list[R]:
    """``[fn(i) for i in items]``, in order, at most ``limit`` at a time.

    Every item runs even when one raises; then the first error (in the items'
    order) is raised. One item (or none) runs inline: no thread for the common
    single-repo topic.
    """
    outcomes = parallel_outcomes(fn, items, limit=limit)
    failed = next((o for o in outcomes if isinstance(o, _Raised)), None)
    if failed is not None:
        raise failed.error
    return outcomes  # type: ignore[return-value]


class meanwhile:  # lowercase: a context manager
    """:func:`parallel_map` of ``fn`` over ``items`` in threads started on entry, while the
    block runs in this one; the threads are waited for on the way out, whatever the block
    did. :attr:`results` then holds the items' results, or raises the first error.

    The block's own work (Python, while the items wait on git) overlaps theirs. A
    signal the block gets stops it as anywhere; the items under way finish first.
    """

    __slots__ = ("_done", "_interrupted", "_outcomes", "_threads")

    def __init__(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> None:
        import threading

        self._outcomes, work, self._interrupted = _worked(fn, items)
        count = min(MAX_PARALLEL, len(self._outcomes))
        self._threads = [threading.Thread(target=work) for _ in range(count)]
        self._done = False

    def __enter__(self) -> meanwhile:
        with interrupt.held():
            _start(self._threads, self._interrupted)
        return self

    def __exit__(self, *_exc: object) -> None:
        with interrupt.held():  # raises Stopped at its end, once the threads are done
            _join_all(self._threads, self._interrupted)
        self._done = True

    @property
    def results(self) -> list[Any]:
        assert self._done, "read once the block is over"
        return _unless_raised(self._outcomes)


class fed:  # lowercase: a context manager
    """``fn`` over the items the block hands over (:meth:`put`) while it is still finding
    more, in up to ``limit`` threads: each item starts as soon as it is given and a thread
    is free. On the way out no more come; the threads finish the items given and are
    waited for, whatever the block did. :attr:`results` then holds the results in the
    order given, or raises the first error.

    What the block does to find the items (Python) overlaps the items' own waits on the
    disk. A signal stops the block as anywhere: the items under way finish, and no other
    starts (as in :func:`parallel_outcomes`); so when the block raises anything else.
    """

    __slots__ = ("_done", "_fn", "_interrupted", "_limit", "_outcomes", "_queue", "_threads")

    def __init__(self, fn: Callable[[Any], Any], *, limit: int = MAX_PARALLEL) -> None:
        import queue
        import threading

        self._fn, self._limit = fn, limit
        self._queue: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()
        self._outcomes: list[Any] = []
        self._threads: list[threading.Thread] = []
        self._interrupted = threading.Event()
        self._done = False

    def __enter__(self) -> fed:
        return self

    def put(self, item: Any) -> None:
        """Hand ``item`` over; a thread is started for it while fewer than ``limit`` run."""
        self._outcomes.append(_Raised(_NOT_RUN))
        self._queue.put((len(self._outcomes) - 1, item))
        if len(self._threads) < self._limit:
            import threading

            thread = threading.Thread(target=self._work)
            with interrupt.held():
                _start([thread], self._interrupted)
                self._threads.append(thread)

    def _work(self) -> None:
        while True:
            given = self._queue.get()
            if given is None or self._interrupted.is_set() or interrupt.stopping():
                return
            n, item = given
            try:
                self._outcomes[n] = self._fn(item)
            except BaseException as exc:  # kept for the caller, raised there
                self._outcomes[n] = _Raised(exc)

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        if kind is not None:  # the block stopped (a signal's Stopped): start no more items
            self._interrupted.set()
        with interrupt.held():  # raises Stopped at its end, once the threads are done
            for _ in self._threads:
                self._queue.put(None)  # one end mark for each thread
            _join_all(self._threads, self._interrupted)
        self._done = True

    @property
    def results(self) -> list[Any]:
        assert self._done, "read once the block is over"
        return _unless_raised(self._outcomes)


def parallel_outcomes(
    fn: Callable[[T], R], items: Iterable[T], *, limit: int = MAX_PARALLEL
) -> list[R | _Raised]:
    """Each item's result, or what it raised (as ``_Raised``), in order; all of them run.

    A signal that stops the command at once (router.interrupt) starts no
    further item: those under way finish (their gits got the signal too), so
    nothing is left half-written, and then :class:`~router.interrupt.Stopped`
    is raised. It is never raised while the threads are started or waited for:
    inside threading's own code it would leave their locks half-released.
    """
    outcomes, work, interrupted = _worked(fn, items)
    if len(outcomes) <= 1:
        work()
        return outcomes
    import threading

    threads = [threading.Thread(target=work) for _ in range(min(limit, len(outcomes)))]
    with interrupt.held():  # raises Stopped at its end, once the threads are done
        _start(threads, interrupted)
        _join_all(threads, interrupted)
    return outcomes


def _worked(
    fn: Callable[[T], R], items: Iterable[T]
) -> tuple[list[R | _Raised], Callable[[], None], threading.Event]:
    """The items' outcomes (each filled in as it is done), the work each thread runs (items
    taken one at a time until none is left), and the event that stops it taking more."""
    import threading

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

    return outcomes, work, interrupted


def _start(threads: list[threading.Thread], interrupted: threading.Event) -> None:
    started: list[threading.Thread] = []
    try:
        for thread in threads:
            started.append(thread)
            thread.start()
    except BaseException:
        _stopped(started, interrupted)
        raise


def _join_all(threads: list[threading.Thread], interrupted: threading.Event) -> None:
    try:
        for thread in threads:
            _join(thread)
    except BaseException:
        _stopped(threads, interrupted)
        raise


def _stopped(started: list[threading.Thread], interrupted: threading.Event) -> None:
    """Raised by a signal handler that is not router.interrupt's (Python's own Ctrl-C,
    where no command set ours): the same rule, as far as the threads still allow it."""
    interrupted.set()
    for thread in started:
        try:
            thread.join()
        except RuntimeError:  # one whose start() the Ctrl-C cut short
            continue


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


def _unless_raised(outcomes: list[Any]) -> list[Any]:
    """The items' results in order, or the first error an item raised, raised here."""
    failed = next((o for o in outcomes if isinstance(o, _Raised)), None)
    if failed is not None:
        raise failed.error
    return outcomes
