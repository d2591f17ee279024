"""Where an unexpected error (a bug) goes: a log file holding its traceback.

The user sees one line naming the file (:func:`router.cli.output.unexpected`),
never a traceback: what went wrong, where the details are, and to report it.
Each error gets a file of its own, ``$XDG_CACHE_HOME/team-router/errors/
<UTC time>-<pid>.log`` (``~/.cache`` when ``XDG_CACHE_HOME`` is unset or not
absolute, as the XDG spec says), so the path a line names holds exactly that
error, and two commands failing at once never interleave.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from pathlib import Path

from router import __version__
from router.ioerror import io_operation


def log_dir() -> Path:
    """``$XDG_CACHE_HOME/team-router/errors``; RuntimeError when no home directory is known."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    return base / "team-router" / "errors"


def summary(exc: BaseException) -> str:
    """``ValueError: invalid literal for int()``: the error's type and message, on one line."""
    message = " ".join(str(exc).split())
    kind = type(exc).__name__
    return f"{kind}: {message}" if message else kind


def report(exc: BaseException) -> str:
    """What a bug report needs: version, argv, cwd, Python, then the traceback."""
    try:
        cwd = os.getcwd()
    except OSError as err:
        cwd = f"(unknown: {err.strerror})"
    lines = [
        "team-router: unexpected error",
        f"version: {__version__}",
        f"time: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"argv: {sys.argv!r}",
        f"cwd: {cwd}",
        f"python: {sys.version.split()[0]} ({platform.platform()})",
    ]
    return "\n".join(lines) + "\n\n" + "".join(traceback.format_exception(exc))


def write(exc: BaseException) -> Path:
    """Write ``exc``'s report to a new file under :func:`log_dir` and return its path.

    OSError (or RuntimeError: no home directory) when it cannot be written.
    """
    folder = log_dir()
    with io_operation("creating", folder):
        folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = folder / f"{stamp}-{os.getpid()}.log"
    with io_operation("writing", path):
        # Never over another error's file; readable by the user alone (argv and paths are theirs).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "w", encoding="utf-8", errors="replace") as fh:
            fh.write(report(exc))
    return path
