"""Taking a topic apart without losing work: the eight steps and the merge proof, the
``teardown`` command, snapshots and ``restore``, the residue sweep, ``.teamteardown`` and temp
paths, repositories nested in a worktree, and ``pr-cleanup``.
"""
