"""Setting things up: a topic (``new`` and ``worktrees``, the per-repo creation pipeline of
DESIGN §7, ``.worktreeinclude``), a repository (``init``) and the host's settings files that
``init --allow-agent``, ``new`` and ``install-hooks`` edit (the permission rule, the hooks).
"""
