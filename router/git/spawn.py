"""A child process started with ``os.posix_spawn``, fed and read through pipes: the one way
:mod:`router.git.run` starts git.

:mod:`subprocess` brings ``threading``, ``selectors``, ``locale`` and ``signal`` along
(~6 ms), more than a command that starts a few gits pays for the processes
themselves. What it did for us is kept: the program found on the ``PATH`` of
the environment it gets, stdin from ``/dev/null`` unless fed, no descriptor of
ours but the pipes inherited, SIGPIPE and SIGXFSZ back to their defaults
(Python ignores them, and an ignored signal stays ignored across exec), both
pipes read at once so that neither fills while the other is waited on.

Private to :mod:`router.git`.
"""

from __future__ import annotations

import contextlib
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_READ_SIZE = 65536
_cleared = False  # whether the descriptors this process inherited were made private


class TimedOut(Exception):
    """The child outlived its deadline: it was killed and reaped, its output dropped."""


class Child:
    """One started process: :meth:`communicate` ends it (once), :meth:`stop` and
    :meth:`kill` cut it short."""

    __slots__ = ("_chunks", "_ended", "_feed", "_open", "_status", "argv", "pid")

    def __init__(self, argv: list[str], env: Mapping[str, str], input: bytes | None) -> None:
        """Start ``argv`` (its program looked up on ``env``'s PATH); FileNotFoundError when
        there is none."""
        self.argv = argv
        self._status: int | None = None
        path = _program(argv[0], env)
        _private_descriptors()
        out, err = os.pipe(), os.pipe()
        feed = os.pipe() if input is not None else None
        stdin = (
            (os.POSIX_SPAWN_DUP2, feed[0], 0)
            if feed is not None
            else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
        )
        actions = [stdin, (os.POSIX_SPAWN_DUP2, out[1], 1), (os.POSIX_SPAWN_DUP2, err[1], 2)]
        ours = (out[0], err[0], *(feed[1:] if feed is not None else ()))
        try:
            self.pid = os.posix_spawn(
                path, argv, env, file_actions=actions, setsigdef=_default_signals()
            )
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            # The child's ends: ours kept open would keep its pipes from ever ending.
            for fd in (out[1], err[1], *(feed[:1] if feed is not None else ())):
                os.close(fd)
        self._chunks: dict[int, list[bytes]] = {out[0]: [], err[0]: []}
        self._open = set(self._chunks)
        self._feed = (feed[1], memoryview(input or b"")) if feed is not None else None
        self._ended = _exit_watch(self.pid)

    def communicate(self, deadline: float | None = None) -> tuple[int, bytes, bytes]:
        """(exit status as ``subprocess`` gives it, stdout, stderr) once the child ended;
        :class:`TimedOut` when it is not done by ``deadline`` (``time.monotonic()``)."""
        try:
            self._pump(deadline)
            # Where no pidfd tells the end, the pipes ending did: a child that closed them
            # early is still waited for only until its deadline.
            status = self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except TimedOut:
            self.kill()
            raise
        out_fd, err_fd = self._chunks
        return status, b"".join(self._chunks[out_fd]), b"".join(self._chunks[err_fd])

    def _pump(self, deadline: float | None) -> None:
        """Feed stdin and read stdout and stderr until the child ended (its pidfd), or all
        three are closed where there is no pidfd; :class:`TimedOut` once ``deadline`` passed,
        however much it still writes and whether or not it closed its pipes early."""
        import select

        poller = select.poll()
        for fd in self._open:
            poller.register(fd, select.POLLIN)
        if self._feed is not None:
            # Never blocked writing while the child waits for its output to be read.
            os.set_blocking(self._feed[0], False)
            poller.register(self._feed[0], select.POLLOUT)
        if self._ended is not None:
            poller.register(self._ended, select.POLLIN)
        while self._open or self._feed is not None or self._ended is not None:
            left = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            ready = poller.poll(left)
            for fd, _event in ready:
                if fd == self._ended:
                    self._read_what_is_left()
                    return
                if self._feed is not None and fd == self._feed[0]:
                    if not self._feed_some():
                        poller.unregister(fd)
                elif not self._drain(fd):
                    poller.unregister(fd)
            # Checked on every turn, not only when nothing was ready: a child that never stops
            # writing is as late as one that never writes.
            if deadline is not None and time.monotonic() >= deadline:
                raise TimedOut(self.argv)

    def _read_what_is_left(self) -> None:
        """Once the child ended: what it wrote is all in the pipes, read without waiting for
        them to end. A process it left behind (a hook's ``cmd &``) may hold them open for as
        long as it runs, and the command would wait for it; what that one writes is not read."""
        import fcntl

        for fd in list(self._open):
            os.set_blocking(fd, False)
            # What git wrote and is not read yet fits in the pipe: no more is read, however
            # fast what was left behind keeps writing.
            left = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
            with contextlib.suppress(BlockingIOError):
                while left > 0 and self._drain(fd, left):
                    left -= len(self._chunks[fd][-1])
        self._close()

    def _drain(self, fd: int, most: int = _READ_SIZE) -> bool:
        """Read what ``fd`` holds (``most`` bytes at most); False once it ended (then closed)."""
        chunk = os.read(fd, min(most, _READ_SIZE))
        if chunk:
            self._chunks[fd].append(chunk)
            return True
        self._open.discard(fd)
        os.close(fd)
        return False

    def _feed_some(self) -> bool:
        """Feed what stdin can take; False once all is fed (then closed)."""
        assert self._feed is not None
        fd, left = self._feed
        try:
            left = left[os.write(fd, left[:_READ_SIZE]) :] if left else left
        except BlockingIOError:
            pass  # less room than poll promised: the rest when there is more
        except BrokenPipeError:
            left = left[:0]  # the child stopped reading: what it read is its input
        if left:
            self._feed = (fd, left)
            return True
        os.close(fd)
        self._feed = None
        return False

    def wait(self, timeout: float | None = None) -> int:
        """The exit status (``-signum`` for a signal), the child reaped; :class:`TimedOut`
        when it has not ended within ``timeout`` seconds."""
        if self._status is not None:
            return self._status
        if timeout is None:
            _, status = os.waitpid(self.pid, 0)
        else:
            status = self._wait_until(time.monotonic() + timeout)
        self._status = os.waitstatus_to_exitcode(status)
        self._close()
        return self._status

    def _wait_until(self, deadline: float) -> int:
        delay = 0.0005
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimedOut(self.argv)
            delay = min(delay * 2, left, 0.05)
            time.sleep(delay)

    def stop(self, signum: int, patience: float) -> None:
        """Pass ``signum`` on and wait ``patience`` seconds for the child to end; kill it if it
        does not, or if another signal cuts the wait short (the first one's error is the one
        the caller raises)."""
        try:
            if self._status is None:
                os.kill(self.pid, signum)
            self.wait(patience)
        except BaseException:  # a second signal, or it outlived the wait: stopped at once
            self.kill()

    def kill(self) -> None:
        """SIGKILL, reaped, its pipes closed unread: a child it started (a transport, a hook)
        may hold them open long after it is gone."""
        if self._status is None:
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile: reaped below
                os.kill(self.pid, _SIGKILL)
            self.wait()
        self._close()

    def _close(self) -> None:
        for fd in self._open:
            os.close(fd)
        self._open.clear()
        if self._feed is not None:
            os.close(self._feed[0])
            self._feed = None
        if self._ended is not None:
            os.close(self._ended)
            self._ended = None


_SIGKILL = 9  # the same number on every POSIX system


def _program(name: str, env: Mapping[str, str]) -> str:
    """The file ``name`` runs as, found as ``execvp`` would on ``env``'s PATH, for each command
    (a few ``access`` calls: a git put on PATH or taken off it meanwhile is seen, as a shell
    sees it); FileNotFoundError when no directory there holds it."""
    for folder in os.get_exec_path(env) if os.sep not in name else [""]:
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(2, "No such file or directory", name)


def _exit_watch(pid: int) -> int | None:
    """A descriptor that turns readable when ``pid`` ends (a pidfd); None where the kernel
    or Python has none: the pipes ending then tell it, as they did."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _default_signals() -> tuple[int, ...]:
    import signal

    return (signal.SIGPIPE, signal.SIGXFSZ)


def _private_descriptors() -> None:
    """Make every descriptor this process inherited (but stdin, stdout and stderr) one a
    child does not inherit, once: ``subprocess`` closed them in each child it started, and a
    pipe a host handed us must not stay open in a git that outlives us."""
    global _cleared
    if _cleared:
        return
    try:
        names = os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")
    except OSError:
        names = []
    for name in names:
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
                os.set_inheritable(fd, False)
    _cleared = True
