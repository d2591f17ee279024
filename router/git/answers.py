"""git's answers remembered while a command gathers its facts, so each fact is asked once.

The rule, which is what makes a remembered answer never a stale one:

- Nothing is remembered outside :class:`remembered`, the stretch where a
  command reads its facts (teardown's plan, a read-only report). Leaving it
  forgets everything, and code that never opens one always asks git.
- Only the questions the git package opts in are remembered: refs and what
  they name, the worktree list, config, ancestry and the merge proof's
  questions. A checkout's own state (its status, index and files, its HEAD
  asked of it) is never remembered: the user and the agents change it while
  we run, and the checks that guard a deletion read it when they act. (The
  worktree list names each checkout's HEAD as it was when listed: a step
  that acts reads it after the stretch ended, afresh.)
- Every git command that may change the repository (anything not known to be
  read-only: a ref update, checkout, cherry-pick, fetch, worktree add, lock or
  remove, config write...) forgets every answer of every repository, before
  it starts and again when it ends, whether it succeeded or not. An answer
  being read while a change runs is not kept (the generation it started under
  is gone), so a thread reading one repository never stores what another
  thread's change made stale. A change the package makes without git (a
  worktree's lock lifted from its file) forgets as well.
- Where the command waits for something (a lock another run holds) or hands
  over to something else (commands a repository declares), :func:`forget`.

Writes made outside the git package by other processes are not seen until
then: a fact read twice in one stretch is the same fact, as it would be had
the first answer been passed along by hand.
"""

from __future__ import annotations

import _thread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable
    from typing import TypeVar

    T = TypeVar("T")

_lock = _thread.allocate_lock()  # the threads that survey repositories at once share it
_open = 0  # how many stretches of remembering are open (they nest)
_generation = 0  # moves on every change; an answer read under an older one is not kept
_answers: dict[Hashable, object] = {}


class remembered:
    """Remember git's answers until the block ends (or a write or :func:`forget` clears them)."""

    def __enter__(self) -> None:
        global _open
        with _lock:
            _open += 1

    def __exit__(self, *exc: object) -> None:
        global _open
        with _lock:
            _open -= 1
            if _open == 0:
                _drop_all()


def forget() -> None:
    """Drop every remembered answer: something else may have changed a repository."""
    with _lock:
        _drop_all()


def _drop_all() -> None:
    global _generation
    _generation += 1
    _answers.clear()


def recall(key: Hashable, ask: Callable[[], T]) -> T:
    """The remembered answer to ``key``, or ``ask()``'s (remembered when nothing changed meanwhile).

    A list, set or dict answer is handed out as a copy: a caller that edits
    its answer never edits the one remembered.
    """
    with _lock:
        if not _open:
            generation = None
        else:
            generation = _generation
            if key in _answers:
                return _copy(_answers[key])  # type: ignore[return-value]
    value = ask()
    if generation is not None:
        with _lock:
            if _open and _generation == generation:
                _answers[key] = value
    return _copy(value)


def _copy(value: T) -> T:
    if isinstance(value, (list, dict, set)):
        return value.copy()  # type: ignore[return-value]
    return value


def about_refs(*revs: str) -> bool:
    """Each of ``revs`` names a full ref or an object id, or a range of those: what it
    answers follows the refs, never a checkout's HEAD (which is never remembered)."""
    return all(_about_refs(rev) for rev in revs)


def _about_refs(rev: str) -> bool:
    for part in rev.removeprefix("^").replace("...", "..").split(".."):
        if not (
            part.startswith("refs/") or (len(part) >= 40 and not part.strip("0123456789abcdef"))
        ):
            return False
    return True


# -- which git commands change nothing -----------------------------------------

# Commands that never change refs, the index, a checkout, config or the
# worktree registrations. Anything not named here forgets every answer.
# merge-tree --write-tree only adds objects, which changes no answer
# remembered here (an object absent is never remembered, only refs are).
_READ_ONLY = frozenset(
    {
        "blame",
        "cat-file",
        "check-ignore",
        "check-ref-format",
        "cherry",
        "count-objects",
        "describe",
        "diff",
        "diff-files",
        "diff-index",
        "diff-tree",
        "for-each-ref",
        "grep",
        "log",
        "ls-files",
        "ls-remote",
        "ls-tree",
        "merge-base",
        "merge-tree",
        "name-rev",
        "rev-list",
        "rev-parse",
        "show",
        "show-ref",
        "status",
        "var",
        "version",
    }
)
_CONFIG_READS = frozenset(
    {"-l", "--list", "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--show-origin"}
)


def read_only(args: tuple[str, ...] | list[str]) -> bool:
    """``git <args>`` surely changes nothing an answer here depends on."""
    if not args:
        return True
    verb, rest = args[0], args[1:]
    if verb in _READ_ONLY:
        return True
    if verb == "config":
        return any(a in _CONFIG_READS for a in rest) and not any(
            a.startswith(("--unset", "--add", "--replace", "--remove", "--rename")) for a in rest
        )
    if verb == "worktree":
        return bool(rest) and rest[0] == "list"
    if verb == "symbolic-ref":
        # Reading names one ref; writing names the ref and its new target, or deletes.
        names = [a for a in rest if not a.startswith("-")]
        return len(names) == 1 and not any(a in {"-d", "--delete"} for a in rest)
    if verb == "hash-object":
        return "-w" not in rest
    return False
