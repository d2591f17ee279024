"""The host's side (Claude Code): the session-start recovery hook, the WorktreeCreate and
WorktreeRemove hooks, and the settings files they are registered in.
"""
