"""A folder that cannot be read, even by root: ``chmod 000`` and no DAC override.

Root reads a ``chmod 000`` folder all the same (CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH). :func:`unreadable` takes those two out of this thread's
effective capabilities while the block runs, so the folder is as unreadable to
the code under test as it is to a user who does not own it; they stay in the
permitted set and come back on leaving. A git the code runs is exec'd as root
and gets them back: only this process's own reads are refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

_V3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3
_DAC = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _call(name: str, data: ctypes.Array[_Data]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(ctypes.byref(_Header(_V3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), name)


@contextlib.contextmanager
def _without_dac() -> Iterator[None]:
    data = (_Data * 2)()
    _call("capget", data)
    saved = data[0].effective
    data[0].effective &= ~_DAC
    _call("capset", data)
    try:
        yield
    finally:
        data[0].effective = saved
        _call("capset", data)


@contextlib.contextmanager
def unreadable(folder: Path) -> Iterator[None]:
    """``folder`` made unreadable (``chmod 000``) for this process while the block runs."""
    folder.chmod(0)
    try:
        with _without_dac() if os.geteuid() == 0 else contextlib.nullcontext():
            try:
                os.listdir(folder)
            except PermissionError:
                pass
            else:
                pytest.skip("a chmod 000 folder stays readable here (capabilities not droppable)")
            yield
    finally:
        folder.chmod(0o755)
