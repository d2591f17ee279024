"""Config: values git sees in a repository, and the committer identity they give."""

from __future__ import annotations

from collections.abc import Mapping

from router.git.run import GitError, Runner, base_env, recall_about
from router.records import record


class ConfigMethods(Runner):
    """Single config values, and removing a section."""

    __slots__ = ()

    def config_get(self, key: str) -> str | None:
        return self._recall(("config --get", key), lambda: self._config_get(key))

    def _config_get(self, key: str) -> str | None:
        res = self.run("config", "--get", "--", key, check=False)
        return res.stdout.strip() if res.ok else None

    def remove_config_section(self, section: str) -> None:
        self.run("config", "--remove-section", "--", section)

    def drop_branch_config(self, branch: str) -> str:
        """Remove ``branch.<name>`` as ``git branch -D`` would: "" once gone (or never there),
        else git's first line saying why the section stays."""
        try:
            self.remove_config_section(f"branch.{branch}")
        except GitError as exc:
            # No section (never pushed), or one set only in a global file, which
            # `git branch -D` leaves too.
            if "no such section" not in exc.stderr:
                return exc.first_line
        return ""


@record
class ConfigView:
    """Every config value git sees in a repository (all scopes and includes), from one process.

    Keys as ``git config -l`` prints them: section and name lower-cased, a
    subsection as written (``remote.origin.url``, ``branch.Topic.merge``).
    """

    values: Mapping[str, tuple[str, ...]]

    def get(self, key: str) -> str | None:
        found = self.values.get(key)
        return found[-1] if found else None  # the last one wins, as for `git config --get`

    def is_true(self, key: str) -> bool:
        """git's reading of a boolean: a bare key, true/yes/on, or a non-zero number."""
        value = self.get(key)
        if value is None:
            return False
        value = value.strip().lower()
        return value in {"", "true", "yes", "on"} or (value.isdigit() and int(value) != 0)

    def has_section(self, section: str) -> bool:
        """A key of exactly ``section`` (``branch.a`` is not ``branch.a.b``'s subsection)."""
        prefix = f"{section}."
        return any(key.startswith(prefix) and "." not in key[len(prefix) :] for key in self.values)

    def has_remote(self, name: str) -> bool:
        return self.has_section(f"remote.{name}")

    def remote_urls(self) -> dict[str, tuple[str, ...]]:
        """Each remote the config names a URL for, with its URLs (``remote.<name>.url``)."""
        urls = {}
        for key, values in self.values.items():
            name = key.removeprefix("remote.").removesuffix(".url")
            if key.startswith("remote.") and key.endswith(".url") and name:
                urls[name] = values
        return urls

    def names_committer(self, env: Mapping[str, str]) -> bool:
        """git's strict committer check surely passes: a name and an e-mail were given.

        False means "ask git" (``git var``), never "there is none": git may
        still find an identity elsewhere (the password database, the host name).
        """
        # A variable set to "" still wins over config (and then fails git's check).
        if self.is_true("user.useconfigonly"):
            return False  # git then ignores EMAIL and the host name: let it judge
        name = env.get("GIT_COMMITTER_NAME")
        name = name if name is not None else self.get("committer.name") or self.get("user.name")
        email = env.get("GIT_COMMITTER_EMAIL")
        email = (
            email
            if email is not None
            else self.get("committer.email") or self.get("user.email") or env.get("EMAIL")
        )
        # git refuses a name made only of "crud" (ident.c): blanks and ,:;<>"\'
        return bool(email) and any(c > " " and c not in ",:;<>\"\\'" for c in name or "")


def config_view(git: ConfigMethods) -> ConfigView:
    """``git config -l -z``: every value, for the questions a command asks of one repo."""
    return recall_about(git, ("config -l",), lambda: _config_view(git))


def _config_view(git: ConfigMethods) -> ConfigView:
    values: dict[str, list[str]] = {}
    for item in git.run("config", "-l", "-z").stdout.split("\0"):
        if item:
            key, _, value = item.partition("\n")
            values.setdefault(key, []).append(value)
    return ConfigView({k: tuple(v) for k, v in values.items()})


def committer_unknown(git: ConfigMethods, config: ConfigView | None = None) -> GitError | None:
    """git's complaint when it cannot name a committer (no ``user.name``/``user.email``), else None.

    A cherry-pick needs a committer; asking first means a missing identity is
    reported as what it is, before anything is applied. A ``config`` that
    names one answers without a process.
    """
    if config is not None and config.names_committer({**base_env(), **git.env}):
        return None
    try:
        git.run("var", "GIT_COMMITTER_IDENT")
    except GitError as exc:
        return exc
    return None


def is_identity_error(exc: GitError) -> bool:
    text = exc.stderr.lower()
    return (
        "identity unknown" in text
        or "please tell me who you are" in text
        or ("unable to auto-detect email" in text)
    )
