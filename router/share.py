"""Where the shipped non-Python files live: the wheel's ``_share/`` copy, else the checkout.

The recovery hook resolves its templates through this too, so it imports nothing heavy.
"""

from __future__ import annotations

import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def share_path(name: str) -> str:
    """``templates``, ``skills``, ``agents``...: the installed copy first, then the checkout's."""
    installed = os.path.join(_PACKAGE, "_share", name)
    if os.path.isdir(installed) or os.path.isfile(installed):
        return installed
    return os.path.join(os.path.dirname(_PACKAGE), name)
