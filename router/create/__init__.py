"""Setting a topic up: ``new`` and ``worktrees``, the per-repo creation pipeline (DESIGN §7),
``.worktreeinclude`` and ``init``.
"""
