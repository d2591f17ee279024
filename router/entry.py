"""The console entry point: every argument list goes to :func:`router.cli.main.run`.

The session-start hook runs at the start of every agent session, and agents
run ``phase``, ``next`` and ``status`` at every phase: the one reader of the
declarations (router/cli/spec.py) is small, and a command imports only its own
module, so none of them pays for what it does not use.
"""

from __future__ import annotations

import gc
import os
import sys

from router import forget_pathlib_finder
from router.interrupt import SIGINT, Stopped


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args)
    except Exception as exc:
        # A bug before a command's own handling was in place (an import of a broken
        # install, reading the command line): exit 3 with one line naming the log, as
        # router.cli.output.guarded reports one inside a command.
        from router.cli.output import unexpected
        from router.cli.parse import command_words

        words = command_words(args)
        return unexpected(words[0] if words else "", "--json" in args, exc)
    except KeyboardInterrupt:
        # Ctrl-C while the CLI is still loading (its modules, the commands'
        # registration, the hook's imports), before a handler is in place: an
        # interrupt is exit 130, never a traceback.
        return _interrupted()
    except Stopped as exc:
        # A second signal while the command reported the first one.
        return _interrupted(exc.signum)


def _dispatch(args: list[str]) -> int:
    # Every command, help and usage error: one reading of the declarations in
    # router/cli/spec.py, and the one module the command names.
    from router.cli.main import run

    return run(args)


def _interrupted(signum: int = SIGINT) -> int:
    # Imported here: the session-start hook's path does not pay for the error types.
    from router.errors import ExitCode

    print("team-router: interrupted", file=sys.stderr)
    return ExitCode.for_signal(signum)


def console() -> int:
    """The console script: :func:`main`, then the process ends without the interpreter's teardown.

    At exit the interpreter frees every object it made, module by module: ~15 ms
    after the commands agents run at every phase, longer than some of them
    take. By then nothing of ours is pending (every file is closed, every git
    process waited for, every worker thread joined), so the process ends once
    its output is flushed. Where something is left (an exit handler, a thread
    still running, output that cannot be flushed), the interpreter's own exit
    runs as usual.
    """
    # The first line of ours the console script runs: a Ctrl-C from here on,
    # before main()'s handling or after it (the flush below), is exit 130, quietly.
    try:
        # The cycle collector runs every 700 new objects by default: ~50 times while a
        # command loads its modules, which make objects that all live on (classes,
        # functions, records), so each run finds nothing to free. Every 20,000, cycles
        # are still freed in a long command: ~7 million instructions less for `new`.
        gc.set_threshold(20_000)
        code = main()
        if not (_nothing_left_to_run() and _flushed()):
            # The interpreter's own exit frees its objects in the order it always has:
            # the import system's list holds none of ours then (router/__init__.py).
            forget_pathlib_finder()
            return code
    except KeyboardInterrupt:
        return _interrupted()
    os._exit(code)


def _flushed() -> bool:
    """Every output stream flushed; False when one cannot be (the usual exit reports it:
    a closed pipe is exit 120)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: that fd was closed at start (`>&-`)
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def _nothing_left_to_run() -> bool:
    import atexit

    handlers = getattr(atexit, "_ncallbacks", None)
    if handlers is None or handlers() != 0:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
