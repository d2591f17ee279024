"""An OSError named: the operation and path only the code doing the I/O knows
(:class:`io_operation`), and the one wording of it (:func:`describe_io`).

Apart from :mod:`router.errors` (which turns one into a command's ``io-error``): the
session-start hook writes its holder file under :class:`io_operation` and must not
pay for creating the error-code enum (~3 ms) on every session start.
"""

from __future__ import annotations

# The attribute an OSError carries the operation in (see io_operation).
_OPERATION = "team_router_operation"


class io_operation:  # lowercase: it is used as a context manager, as contextlib's are
    """Inside, an OSError names ``operation`` and ``path`` where the system named neither.

    A write or fsync to a full disk fails on a file descriptor: its OSError
    has no file name. The one place that knows both is the code doing the
    I/O, so it says them here, and :func:`describe_io` reads them back.
    """

    __slots__ = ("operation", "path")

    def __init__(self, operation: str, path: object) -> None:
        self.operation = operation
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, _tb: object) -> None:
        # The error goes on as it is (its type included), only named.
        if isinstance(exc, OSError):
            if exc.filename is None:
                exc.filename = str(self.path)
            if not getattr(exc, _OPERATION, ""):
                setattr(exc, _OPERATION, self.operation)


def describe_io(exc: OSError) -> str:
    """The one wording of an I/O error: ``writing /path: No space left on device``.

    The operation is the one :class:`io_operation` named (``accessing`` when
    the code doing the I/O said none), the path git's or the system's (both
    paths of a rename).
    """
    operation = getattr(exc, _OPERATION, "") or "accessing"
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    reason = exc.strerror or str(exc)
    return f"{operation} {paths}: {reason}" if paths else f"{operation}: {reason}"
