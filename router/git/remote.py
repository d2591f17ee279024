"""Remotes: fetching, asking a remote what it has, pushing and deleting there, and which
commits no remote holds."""

from __future__ import annotations

from collections.abc import Sequence

from router.git.config import ConfigMethods, config_view
from router.git.run import GitError, Running

FETCH_TIMEOUT = 20.0  # seconds; a network command must never hang a pipeline


class RemoteMethods(ConfigMethods):
    """The repository's remotes, and fetching from one."""

    __slots__ = ()

    def has_remote(self, name: str = "origin") -> bool:
        return name in self.out("remote").splitlines()

    def remote_url(self, name: str = "origin") -> str | None:
        return self.config_get(f"remote.{name}.url")

    def fetch(self, remote: str = "origin", *, timeout: float = FETCH_TIMEOUT) -> GitError | None:
        """Best-effort ``git fetch --quiet remote``: None on success, else the error."""
        return self.start_fetch(remote, timeout=timeout).error()

    def start_fetch(self, remote: str = "origin", *, timeout: float = FETCH_TIMEOUT) -> Running:
        """:meth:`fetch`, started: the process runs while the caller goes on."""
        # No auto-maintenance: a background gc is the user's git's business,
        # not a cost to add to every worktree we create.
        return self.start("fetch", "--quiet", "--no-auto-maintenance", remote, timeout=timeout)


def remote_names(git: RemoteMethods) -> list[str]:
    """The remotes the repository's config names a URL for."""
    return list(config_view(git).remote_urls())


def _remote_tags(git: RemoteMethods, remote: str) -> list[str]:
    """The objects ``remote``'s tags point at right now, asked of it (not of fetched tags,
    which a local-only tag of the same name is indistinguishable from); none when it cannot answer."""
    try:
        out = git.out("ls-remote", "--tags", "--refs", remote, timeout=FETCH_TIMEOUT)
    except GitError:
        return []  # not known to hold anything: its tags do not count
    return [line.partition("\t")[0] for line in out.splitlines() if "\t" in line]


def gone_remotes(git: RemoteMethods) -> list[str]:
    """Remotes whose URL is a local path where nothing exists (``file://`` or a plain path)."""
    gone = []
    for name, urls in config_view(git).remote_urls().items():
        paths = [local_path(url) for url in urls]
        if paths and all(p is not None and not (git.cwd / p).exists() for p in paths):
            gone.append(name)
    return gone


def local_path(url: str) -> str | None:
    """The path a remote URL names on this machine; None for a network (or scp-like) URL."""
    if url.startswith("file://"):
        return url.removeprefix("file://")
    if "://" in url:
        return None
    # git reads `host:path` as ssh unless a slash comes before the first colon.
    head = url.split("/", 1)[0]
    return None if ":" in head else url


def commits_on_no_remote(git: RemoteMethods, *, gone: Sequence[str] | None = None) -> int:
    """Commits any ref, HEAD or reflog entry reaches that no live remote's tracking refs do.

    Reflogs count: a commit left behind by leaving a detached HEAD, by an
    amend or a reset, or an older stash entry (``stash@{1}`` lives only in
    the stash's reflog) exists only there, and deleting the repository
    deletes it. A remote whose URL is a local path that is gone holds
    nothing any more: its tracking refs are then the only record
    (``gone``: those remotes, when the caller already asked :func:`gone_remotes`).
    Nor do commits the refs of a repository it borrows objects from (alternates,
    as ``clone --reference`` and a new worktree's submodules have) reach: they
    live in that repository, which deleting this one leaves as it is.
    """
    gone = gone_remotes(git) if gone is None else gone
    # An --exclude before --remotes matches the name below refs/remotes/.
    skip = [f"--exclude={name}/*" for name in gone]
    args = [
        "rev-list", "--count", "--all", "--reflog", "--not", *skip, "--remotes", "--alternate-refs",
    ]  # fmt: skip
    count = int(git.out(*args, "--") or 0)
    if not count:
        return 0
    # Tags have no remote-tracking refs: a commit only a tag holds is on a remote
    # only if that remote has the tag now. Asked only when something looks unpushed.
    held = [
        oid for name in remote_names(git) if name not in gone for oid in _remote_tags(git, name)
    ]
    if not held:
        return count
    # On stdin, each negated: a repository may have thousands of tags. A remote's tag
    # this repository never fetched is no object here: skipped (--ignore-missing).
    tags = "".join(f"^{oid}\n" for oid in held)
    return int(git.out(*args, "--ignore-missing", "--stdin", "--", input=tags) or 0)


def remote_prune_refs(
    git: RemoteMethods, remote: str = "origin", *, timeout: float = FETCH_TIMEOUT
) -> list[str]:
    """``git remote prune``; the remote-tracking refs it dropped (``origin/<branch>``)."""
    out = git.out("remote", "prune", remote, timeout=timeout)
    return [line.split("]", 1)[1].strip() for line in out.splitlines() if "[pruned]" in line]


def remote_branch_tip(
    git: RemoteMethods, remote: str, branch: str, *, timeout: float = FETCH_TIMEOUT
) -> str | None:
    """The commit ``remote`` has on ``refs/heads/<branch>`` right now (None: it has none).

    Asked of the remote itself, not read from ``refs/remotes/``: a branch
    deleted on the server leaves its tracking ref behind until a prune.
    Raises GitError when the remote cannot be asked.
    """
    ref = f"refs/heads/{branch}"
    out = git.out("ls-remote", "--heads", remote, ref, timeout=timeout)
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        if name == ref:  # ls-remote patterns match on a suffix: compare exactly
            return sha.strip()
    return None


def push_delete(
    git: RemoteMethods, remote: str, branch: str, *, expect: str, timeout: float = FETCH_TIMEOUT
) -> None:
    """Delete ``branch`` on ``remote`` only if it still points at ``expect``.

    The lease makes a push someone made since we looked fail the deletion
    instead of being deleted with it.
    """
    ref = f"refs/heads/{branch}"
    lease = f"--force-with-lease={ref}:{expect}"
    git.run("push", "--quiet", "--no-verify", lease, remote, f":{ref}", timeout=timeout)


def push(git: RemoteMethods, remote: str, branch: str, *, set_head: bool = False) -> None:
    """Push ``branch`` with upstream tracking; ``set_head`` also points ``<remote>/HEAD`` at it."""
    git.run("push", "--quiet", "--set-upstream", remote, f"refs/heads/{branch}:refs/heads/{branch}")
    if set_head:
        git.run("remote", "set-head", remote, branch)


def add_remote(git: RemoteMethods, name: str, url: str) -> None:
    git.run("remote", "add", "--", name, url)
