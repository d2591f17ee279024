"""The artifact directory ``docs/plans/<id>/``: frontmatter, the artifact inventory,
``repos.md`` (its one ``## Worktrees`` reader and writer), the templates.
"""
