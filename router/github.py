"""The one ``gh`` boundary: every GitHub CLI process team-router starts is started here.

Every call names the repository explicitly (``--repo OWNER/NAME``, derived
from origin's URL or the URL the user gave) so gh never guesses it from the
working directory, asks for JSON fields only, runs with prompts disabled,
stdin closed and a timeout. A PR's title and body are never asked for: PR
prose is data that must not reach a command. An issue's title and body, and
review comments, are read only to be shown to the agent in a brief (quoted as
data), never passed to a command.

gh is an optional witness, never a requirement: a missing or unauthenticated
gh is an :class:`Unavailable` value for the caller to report, not an
exception, and a call that fails later raises :class:`GhFailed`, which the
caller reports the same way. Neither is ever read as "merged" or "not merged".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from enum import StrEnum
from pathlib import Path
from typing import Any

from router import git as g
from router import interrupt
from router.reasons import Reason, Why
from router.records import fields, record, values

GH_TIMEOUT = 20.0  # seconds per gh call; a hung network must not hang a cleanup
PR_FIELDS = (
    "number,state,headRefName,headRefOid,baseRefName,mergeCommit,"
    "isCrossRepository,headRepositoryOwner,url"
)
LIST_LIMIT = 100
DEFAULT_HOST = "github.com"

_OWNER = r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))"
_NAME = r"(?P<name>[A-Za-z0-9._-]{1,100}?)"
_HOST = r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
_USER = r"(?:[A-Za-z0-9._~%-]+(?::[^@/\s]*)?@)?"
_TAIL = r"(?:\.git)?/?"
# The three shapes git itself writes for a GitHub remote; anything else (a
# local path, file://, http://, a URL with a query) names no GitHub repo.
_REMOTE_FORMS = (
    re.compile(rf"https://{_USER}{_HOST}(?::[0-9]{{1,5}})?/{_OWNER}/{_NAME}{_TAIL}"),
    re.compile(rf"ssh://{_USER}{_HOST}(?::[0-9]{{1,5}})?/{_OWNER}/{_NAME}{_TAIL}"),
    re.compile(rf"{_USER}{_HOST}:{_OWNER}/{_NAME}{_TAIL}"),
)


def _numbered_url_re(kind: str) -> re.Pattern[str]:
    """``https://HOST/OWNER/NAME/<kind>/N``: a PR's (``pull``) or an issue's (``issues``) URL."""
    return re.compile(
        rf"https://{_HOST}/{_OWNER}/(?P<name>[A-Za-z0-9._-]{{1,100}})/{kind}/(?P<number>[0-9]{{1,10}})/?",
        re.ASCII,
    )


PR_URL_RE = _numbered_url_re("pull")
ISSUE_URL_RE = _numbered_url_re("issues")
_OID_RE = re.compile(g.ANY_OBJECT_ID)


@record
class RepoSlug:
    """A GitHub repository: host, owner and name, as gh's ``--repo`` takes them."""

    host: str
    owner: str
    name: str

    @property
    def arg(self) -> str:
        base = f"{self.owner}/{self.name}"
        return base if self.host.lower() == DEFAULT_HOST else f"{self.host}/{base}"

    def same(self, other: RepoSlug) -> bool:
        # GitHub owner and repository names are case-insensitive.
        return [v.lower() for v in values(self)] == [v.lower() for v in values(other)]


def parse_remote_url(url: str | None) -> RepoSlug | None:
    """The GitHub repo an origin URL names (https, ssh:// or scp-like), else None."""
    if not url:
        return None
    for form in _REMOTE_FORMS:
        match = form.fullmatch(url.strip())
        if match and match["name"] not in {".", ".."}:
            return RepoSlug(match["host"], match["owner"], match["name"])
    return None


@record
class PrUrl:
    slug: RepoSlug
    number: int


def parse_pr_url(text: str) -> PrUrl | None:
    """``https://HOST/OWNER/NAME/pull/N`` (nothing after N but an optional slash), else None."""
    return _numbered_url(PR_URL_RE, text)


def parse_issue_url(text: str) -> PrUrl | None:
    """``https://HOST/OWNER/NAME/issues/N``, else None (the same shape as a PR URL's)."""
    return _numbered_url(ISSUE_URL_RE, text)


def _numbered_url(pattern: re.Pattern[str], text: str) -> PrUrl | None:
    match = pattern.fullmatch(text)
    if match is None:
        return None
    name = match["name"].removesuffix(".git")
    return PrUrl(RepoSlug(match["host"], match["owner"], name), int(match["number"]))


ISSUE_FIELDS = "number,title,body,state,url"
MAX_PROSE = 20_000  # characters of an issue body or a comment a brief quotes


@record
class Issue:
    """An issue as a brief quotes it: what the request names, read rather than guessed."""

    number: int
    title: str
    body: str
    state: str
    url: str

    def to_json(self) -> dict[str, object]:
        return {f.name: value for f, value in zip(fields(self), values(self), strict=True)}


@record
class ThreadComment:
    author: str
    body: str


@record
class ReviewThread:
    """An unresolved review thread of a PR: where it points and what was said."""

    path: str | None
    line: int | None
    outdated: bool
    comments: tuple[ThreadComment, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "outdated": self.outdated,
            "comments": [{"author": c.author, "body": c.body} for c in self.comments],
        }


THREADS_QUERY = (
    "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, "
    "name: $name) { pullRequest(number: $number) { reviewThreads(first: 100) { nodes { "
    "isResolved isOutdated path line comments(first: 50) { nodes { author { login } body "
    "} } } } } } }"
)


@record
class PullRequest:
    """The machine fields of a pull request (never its title or body)."""

    number: int
    state: str  # OPEN, CLOSED or MERGED
    head_ref: str  # NOT validated: a branch name from outside; validate before use
    head_oid: str
    base_ref: str
    merge_commit: str | None
    cross_repo: bool
    head_owner: str | None
    url: str

    @property
    def merged(self) -> bool:
        return self.state == "MERGED"

    @property
    def open(self) -> bool:
        return self.state == "OPEN"

    def same_repo(self, slug: RepoSlug) -> bool:
        """The head branch lives in ``slug`` itself (a fork's same-named branch never counts)."""
        if self.cross_repo:
            return False
        return self.head_owner is None or self.head_owner.lower() == slug.owner.lower()

    def to_json(self) -> dict[str, object]:
        return {
            "number": self.number,
            "state": self.state,
            "head": self.head_ref,
            "base": self.base_ref,
            "head_oid": self.head_oid,
            "merge_commit": self.merge_commit,
            "cross_repository": self.cross_repo,
            "url": self.url,
        }


class GhTrouble(StrEnum):
    """Why gh cannot be asked, or why its answer is none: a ``gh-unavailable`` reason's ``kind``.

    The value is a contract (docs/json-and-errors.md): the record keeps it.
    """

    NOT_INSTALLED = "not-installed"
    NOT_ON_GITHUB = "not-on-github"  # origin's URL names no GitHub repository
    # ``gh auth status`` failed for host ``other``: its failure in ``parts``
    NOT_AUTHENTICATED = "not-authenticated"
    TIMED_OUT = "timed-out"  # gh ``command`` ran ``count`` seconds
    CANNOT_RUN = "cannot-run"  # the system's error in ``text``
    FAILED = "failed"  # gh ``command`` failed: its first line in ``text`` (none: exit ``count``)
    NOT_JSON = "not-json"  # gh ``command`` did not answer JSON
    NOT_A_LIST = "not-a-list"  # gh ``command`` did not answer a JSON list
    ISSUE_UNNUMBERED = "issue-unnumbered"  # issue ``count`` came without its number
    NO_THREADS = "no-threads"  # no review threads of PR ``count``
    PR_NOT_OBJECT = "pr-not-object"
    PR_UNNUMBERED = "pr-unnumbered"  # a PR without a valid number
    PR_STATE_UNKNOWN = "pr-state-unknown"  # PR ``count``
    PR_NO_HEAD = "pr-no-head"  # PR ``count`` without its head and base
    PR_NO_CROSS = "pr-no-cross"  # PR ``count`` without isCrossRepository


def trouble(kind: GhTrouble, **facts: Any) -> Why:
    """Why gh could not be asked (``kind``), with the facts its words name."""
    return Why(Reason.GH_UNAVAILABLE, kind=str(kind), **facts)


_TROUBLE_WORDS = {
    GhTrouble.NOT_INSTALLED: lambda w: "gh is not installed or not on PATH",
    GhTrouble.NOT_ON_GITHUB: lambda w: "origin's URL does not name a GitHub repository",
    GhTrouble.NOT_AUTHENTICATED: lambda w: (
        f"gh is not authenticated for {w.other} ({'; '.join(map(trouble_words, w.parts))})"
    ),
    GhTrouble.TIMED_OUT: lambda w: f"gh {w.command} timed out after {w.count}s",
    GhTrouble.CANNOT_RUN: lambda w: f"gh could not run: {w.text}",
    GhTrouble.FAILED: lambda w: f"gh {w.command} failed: {w.text or f'exit {w.count}'}",
    GhTrouble.NOT_JSON: lambda w: f"gh {w.command} did not answer JSON",
    GhTrouble.NOT_A_LIST: lambda w: f"gh {w.command} did not answer a JSON list",
    GhTrouble.ISSUE_UNNUMBERED: lambda w: f"gh answered issue #{w.count} without its number",
    GhTrouble.NO_THREADS: lambda w: f"gh api graphql answered no review threads of PR #{w.count}",
    GhTrouble.PR_NOT_OBJECT: lambda w: "gh answered a PR that is not a JSON object",
    GhTrouble.PR_UNNUMBERED: lambda w: "gh answered a PR without a valid number",
    GhTrouble.PR_STATE_UNKNOWN: lambda w: f"gh answered PR #{w.count} with an unknown state",
    GhTrouble.PR_NO_HEAD: lambda w: f"gh answered PR #{w.count} without its head and base",
    GhTrouble.PR_NO_CROSS: lambda w: f"gh answered PR #{w.count} without isCrossRepository",
}


def trouble_words(why: Why) -> str:
    """Why gh could not be asked, in words (a ``gh-unavailable`` reason's): one place says
    them, for the teardown's words (router.teardown.factwords) and the brief's alike."""
    return _TROUBLE_WORDS[GhTrouble(why.kind)](why)


@record
class Unavailable:
    """gh cannot be asked (not installed, not authenticated, origin not on GitHub)."""

    why: Why  # a gh-unavailable reason

    @property
    def reason(self) -> str:
        return trouble_words(self.why)

    def __str__(self) -> str:
        return f"gh unavailable: {self.reason}"


class GhFailed(Exception):
    """A gh call failed or answered something that is not the JSON asked for."""

    def __init__(self, kind: GhTrouble, **facts: Any) -> None:
        self.why = trouble(kind, **facts)
        super().__init__(trouble_words(self.why))

    @property
    def reason(self) -> str:
        return trouble_words(self.why)

    def __str__(self) -> str:
        return f"gh unavailable: {self.reason}"


def _command(args: tuple[str, ...]) -> str:
    """The gh command a trouble names: its first two words (``pr list``)."""
    return " ".join(args[:2])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "GH_PROMPT_DISABLED": "1",
            "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_SPINNER_DISABLED": "1",
            "GH_PAGER": "cat",
            "NO_COLOR": "1",
            "CLICOLOR": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }
    )
    # GH_REPO would override nothing (we always pass --repo) but says the
    # caller expected another repository: do not let it leak in.
    env.pop("GH_REPO", None)
    return env


@record
class GitHub:
    """gh bound to one repository; every call carries ``--repo``."""

    slug: RepoSlug
    executable: str
    cwd: Path  # an existing directory (the primary clone): never the process cwd
    timeout: float = GH_TIMEOUT

    def _run(self, *args: str) -> str:
        # As for git (router.interrupt): none starts once a signal stopped the
        # command, and one a signal killed stops it; it is never "gh failed".
        interrupt.check()
        argv = [self.executable, *args]
        try:
            proc = subprocess.run(
                argv,
                cwd=self.cwd,
                env=_env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            raise GhFailed(GhTrouble.NOT_INSTALLED) from None
        except subprocess.TimeoutExpired:
            raise GhFailed(
                GhTrouble.TIMED_OUT, command=_command(args), count=round(self.timeout)
            ) from None
        except OSError as exc:
            raise GhFailed(GhTrouble.CANNOT_RUN, text=exc.strerror or "") from None
        interrupt.check_child(proc.returncode)
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            first = lines[0].strip() if lines else ""
            # The exit status is said only when gh said nothing.
            status = 0 if first else proc.returncode
            raise GhFailed(GhTrouble.FAILED, command=_command(args), text=first, count=status)
        return proc.stdout

    def _json(self, *args: str) -> Any:
        out = self._run(*args)
        try:
            return json.loads(out)
        except ValueError:
            raise GhFailed(GhTrouble.NOT_JSON, command=_command(args)) from None

    def view(self, number: int) -> PullRequest:
        data = self._json(
            "pr", "view", str(number), f"--repo={self.slug.arg}", f"--json={PR_FIELDS}"
        )
        return parse_pr(data)

    def list_by_head(self, branch: str, *, state: str = "all") -> list[PullRequest]:
        """PRs whose head branch is named ``branch`` (forks' same-named branches included)."""
        return self._list(f"--head={branch}", state)

    def list_by_base(self, branch: str, *, state: str = "open") -> list[PullRequest]:
        """PRs that target ``branch`` (a stack's children)."""
        return self._list(f"--base={branch}", state)

    def _list(self, selector: str, state: str) -> list[PullRequest]:
        which = (f"--repo={self.slug.arg}", selector, f"--state={state}", f"--limit={LIST_LIMIT}")
        data = self._json("pr", "list", *which, f"--json={PR_FIELDS}")
        if not isinstance(data, list):
            raise GhFailed(GhTrouble.NOT_A_LIST, command="pr list")
        return [parse_pr(item) for item in data]

    def close(self, number: int) -> None:
        self._run("pr", "close", str(number), f"--repo={self.slug.arg}")

    def check_auth(self) -> None:
        """Raise GhFailed unless gh is logged in to this repository's host."""
        self._run("auth", "status", f"--hostname={self.slug.host}")

    def issue(self, number: int) -> Issue:
        data = self._json(
            "issue", "view", str(number), f"--repo={self.slug.arg}", f"--json={ISSUE_FIELDS}"
        )
        if not isinstance(data, dict) or not isinstance(data.get("number"), int):
            raise GhFailed(GhTrouble.ISSUE_UNNUMBERED, count=number)
        prose = (_prose(data.get(key)) for key in ("title", "body", "state", "url"))
        return Issue(data["number"], *prose)

    def review_threads(self, number: int) -> list[ReviewThread]:
        """The PR's review threads nobody resolved yet, in the order GitHub lists them."""
        strings = {"query": THREADS_QUERY, "owner": self.slug.owner, "name": self.slug.name}
        fields = [arg for key, value in strings.items() for arg in ("-f", f"{key}={value}")]
        api = ("api", "graphql", f"--hostname={self.slug.host}", *fields, "-F", f"number={number}")
        data = self._json(*api)
        try:
            nodes = data["data"]["repository"]["pullRequest"]["reviewThreads"]["nodes"]
        except (KeyError, TypeError):
            raise GhFailed(GhTrouble.NO_THREADS, count=number) from None
        return [_thread(n) for n in nodes if isinstance(n, dict) and not n.get("isResolved")]


def parse_pr(data: Any) -> PullRequest:
    """A PullRequest from gh's JSON; GhFailed when a field is missing or of the wrong type."""
    if not isinstance(data, dict):
        raise GhFailed(GhTrouble.PR_NOT_OBJECT)
    number = data.get("number")
    state = data.get("state")
    head_ref, head_oid = data.get("headRefName"), data.get("headRefOid")
    base_ref, url = data.get("baseRefName"), data.get("url", "")
    cross = data.get("isCrossRepository")
    if not (isinstance(number, int) and not isinstance(number, bool) and number > 0):
        raise GhFailed(GhTrouble.PR_UNNUMBERED)
    if state not in {"OPEN", "CLOSED", "MERGED"}:
        raise GhFailed(GhTrouble.PR_STATE_UNKNOWN, count=number)
    if not (
        isinstance(head_ref, str)
        and isinstance(head_oid, str)
        and isinstance(base_ref, str)
        and isinstance(url, str)
    ):
        raise GhFailed(GhTrouble.PR_NO_HEAD, count=number)
    if not isinstance(cross, bool):
        raise GhFailed(GhTrouble.PR_NO_CROSS, count=number)
    return PullRequest(
        number,
        state,
        head_ref,
        head_oid.lower(),
        base_ref,
        _merge_oid(data.get("mergeCommit")),
        cross,
        _owner_login(data.get("headRepositoryOwner")),
        url,
    )


def _merge_oid(value: Any) -> str | None:
    oid = value.get("oid") if isinstance(value, dict) else None
    return oid.lower() if isinstance(oid, str) and _OID_RE.fullmatch(oid.lower()) else None


def _owner_login(value: Any) -> str | None:
    login = value.get("login") if isinstance(value, dict) else None
    return login if isinstance(login, str) and login else None


def _prose(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return text if len(text) <= MAX_PROSE else text[:MAX_PROSE] + "\n[... cut by team-router]"


def _thread(node: dict[str, Any]) -> ReviewThread:
    comments = (
        node.get("comments", {}).get("nodes", []) if isinstance(node.get("comments"), dict) else []
    )
    line = node.get("line")
    path = node.get("path")
    return ReviewThread(
        path if isinstance(path, str) else None,
        line if isinstance(line, int) and not isinstance(line, bool) else None,
        node.get("isOutdated") is True,
        tuple(
            ThreadComment(_owner_login(c.get("author")) or "?", _prose(c.get("body")))
            for c in comments
            if isinstance(c, dict)
        ),
    )


def connect(
    remote_url: str | None, *, cwd: Path, timeout: float = GH_TIMEOUT
) -> GitHub | Unavailable:
    """gh bound to the repo origin names, or why it cannot be asked.

    ``gh auth status`` must succeed for the repo's host: an unauthenticated gh
    would answer every question with an error, and that error is not an answer.
    """
    slug = parse_remote_url(remote_url)
    if slug is None:
        return Unavailable(trouble(GhTrouble.NOT_ON_GITHUB))
    return connect_slug(slug, cwd=cwd, timeout=timeout)


def connect_slug(slug: RepoSlug, *, cwd: Path, timeout: float = GH_TIMEOUT) -> GitHub | Unavailable:
    """gh bound to ``slug`` (a repository a URL names), or why it cannot be asked."""
    executable = shutil.which("gh")
    if executable is None:
        return Unavailable(trouble(GhTrouble.NOT_INSTALLED))
    hub = GitHub(slug, executable, cwd, timeout)
    try:
        hub.check_auth()
    except GhFailed as exc:
        return Unavailable(trouble(GhTrouble.NOT_AUTHENTICATED, other=slug.host, parts=(exc.why,)))
    return hub
