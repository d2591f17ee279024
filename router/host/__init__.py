"""The host's side (Claude Code): the session-start recovery hook and the WorktreeCreate and
WorktreeRemove hooks, which create and remove through create/ and teardown/.
"""
