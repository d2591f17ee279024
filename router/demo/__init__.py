"""``demo``: one topic across three throw-away repos, from ``new`` to a lossless teardown.

The demo runs the real commands in-process (exactly the code a user runs) on
repositories it builds in its own temporary directory, checks that each one
did what the pipeline expects, and narrates the run. It needs nothing set up:
the git processes it starts get a demo identity from the environment, and the
user's own git configuration is neither read nor written.

The scripted scenario (``scenario``), the walk through it (``walk``), what the
run shows (``trace``) and how a command runs in-process (``inprocess``).
"""

from router.demo.walk import run_demo

__all__ = ["run_demo"]
