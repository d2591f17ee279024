"""Commands of this area register here (see router/cmd/__init__.py)."""

from __future__ import annotations
