"""Topic ids, slugs, branch names and the portable-name rules (DESIGN §4)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from router.errors import ErrorCode, RouterError
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from typing import NewType
    from typing import cast as cast

    TopicId = NewType("TopicId", str)
    Branch = NewType("Branch", str)
    Sha = NewType("Sha", str)  # a full object id, as git prints it
else:
    # At run time a NewType is the identity on str: str itself does the same
    # without importing typing (~3 ms on every command that creates).
    TopicId = Branch = Sha = str

    def cast(_type: object, value: object) -> object:
        """``typing.cast`` for these types (``cast("Branch | None", found)``): at run time
        the identity, here without importing typing."""
        return value


ID_RE = re.compile(
    r"^(?P<prefix>[A-Za-z][A-Za-z0-9_]*-[0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2})-(?P<topic>[a-z0-9][a-z0-9-]*)$"
)
DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# The patterns below are used only where an id is derived or a branch name checked, not
# where one is read (every command reads ids): they stay strings, compiled (and cached
# by ``re``) on first use.
TICKET_RE = r"^[A-Za-z][A-Za-z0-9_]*-[0-9]+$"
# A ticket key leading a request ("ENG-1234 add ...", "[ENG-1234] ...", "ENG-1234: ...").
# Uppercase only: "covid-19 dashboard" is a description, not a ticket.
_LEADING_KEY_RE = r"^[\[(]?(?P<key>[A-Z][A-Z0-9_]*-[0-9]+)[\])]?(?:[\s:,;]+|$)"
_LEADING_URL_RE = r"^<?(?P<url>https?://[^\s<>]+?)>?(?:[\s:,;]+|$)"
_KEY_SEGMENT_RE = r"^[A-Z][A-Z0-9_]*-[0-9]+$"
# GitHub, Gitea and Forgejo: /<owner>/<repo>/issues/<n> (or pull/<n>).
_ISSUE_KINDS = frozenset({"issues", "pull", "pulls"})
# GitLab: /<group>/<project>/-/issues/<n> (or merge_requests/<n>, work_items/<n>).
_GITLAB_KINDS = frozenset({"issues", "merge_requests", "work_items"})

STOP_WORDS = frozenset(
    ["a", "an", "and", "at", "for", "in", "is", "it", "me", "my", "of", "on", "the", "to", "with"]
)
MAX_WORDS = 6
MAX_SLUG = 40
MAX_NAME = 100
MAX_SUFFIX = 100

_FORBIDDEN = set('<>:"/\\|?*')
_RESERVED = (
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{i}" for i in range(1, 10)}
    | {f"LPT{i}" for i in range(1, 10)}
)


@record
class Topic:
    """A topic id with the parts derived from it: the topic name and its branch."""

    id: TopicId
    topic: str  # the id minus its ticket or date prefix
    branch: Branch


def slugify(description: str) -> str:
    """The slug of a free-text description: ``Add rate limiting ...`` -> ``add-rate-limiting-...``."""
    import unicodedata  # lazy: the hot read-only commands import names but never slug

    text = unicodedata.normalize("NFKD", description)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", text) if w][:MAX_WORDS]
    if not words:
        return "topic"
    kept: list[str] = []
    for word in words:
        if len("-".join([*kept, word])) > MAX_SLUG:
            break
        kept.append(word)
    if not kept:
        # A single word longer than the limit is hard-cut rather than dropped.
        kept = [words[0][:MAX_SLUG]]
    while len(kept) > 1 and kept[-1] in STOP_WORDS:
        kept.pop()
    return "-".join(kept)


@record
class Request:
    """A request split into the ticket it starts with (if any) and the words that follow."""

    ticket: str | None
    words: str


def split_request(description: str) -> Request:
    """Find a ticket key or an issue URL at the start of a request, without any network call.

    ``ENG-1234 add rate limit`` -> ``ENG-1234``; ``https://github.com/org/api/issues/12`` ->
    ``api-12`` (the repo name, ``_`` for what a ticket prefix cannot hold); a Jira or Linear
    URL naming a key (``/browse/ENG-12``) -> that key. An unrecognised leading URL is dropped
    from the words, so it never becomes the slug.
    """
    text = description.strip()
    key = re.match(_LEADING_KEY_RE, text)
    if key:
        return Request(key["key"], text[key.end() :])
    url = re.match(_LEADING_URL_RE, text)
    if url:
        return Request(_ticket_of_url(url["url"]), text[url.end() :])
    return Request(None, description)


def _ticket_of_url(url: str) -> str | None:
    from urllib.parse import urlsplit  # lazy: the recovery hook imports this module

    parts = [p for p in urlsplit(url).path.split("/") if p]
    for part in parts:
        if re.fullmatch(_KEY_SEGMENT_RE, part):
            return part
    for i in range(1, len(parts) - 1):
        project, kind, number = parts[i - 1], parts[i], parts[i + 1]
        if project == "-" and i >= 2:
            project = parts[i - 2]
            if kind not in _GITLAB_KINDS:
                continue
        elif kind not in _ISSUE_KINDS:
            continue
        if number.isdigit():
            return _ticket_prefix(project, number)
    return None


def _ticket_prefix(project: str, number: str) -> str:
    # A ticket prefix is [A-Za-z][A-Za-z0-9_]*: "team-router" becomes "team_router", and
    # a name that cannot start one ("9lives") gives the neutral "issue".
    name = re.sub(r"[^A-Za-z0-9_]+", "_", project).strip("_")
    ticket = f"{name}-{int(number)}"
    return ticket if re.fullmatch(TICKET_RE, ticket) else f"issue-{int(number)}"


def portable_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a branch or directory name on every platform, or None."""
    if not name:
        return "it is empty"
    if name in {".", ".."}:
        return f"{name!r} is a relative path component"
    if len(name) > MAX_NAME:
        return f"it is longer than {MAX_NAME} characters"
    bad = sorted({ch for ch in name if ch in _FORBIDDEN})
    if bad:
        return f"it contains {''.join(bad)!r}"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "it contains a control character"
    if name[-1] in " .":
        return "it ends with a space or a dot"
    if name.split(".", 1)[0].upper() in _RESERVED:
        return "it is a reserved device name on Windows"
    return None


# A branch name from outside (a PR's head, a command line) is allowlisted byte for byte
# before git sees it (DESIGN §11); these names are never deleted, compared case-insensitively.
BRANCH_RE = r"[A-Za-z0-9._/-]+"  # compiled on first use (see TICKET_RE)
PROTECTED = ("main", "master", "develop")
PROTECTED_PREFIX = "release/"


def branch_problem(name: str) -> str | None:
    """Why ``name`` fails the allowlist (before git ever sees it), or None."""
    if not re.fullmatch(BRANCH_RE, name):
        return "only letters, digits and . _ / - are allowed"
    if name.startswith("-"):
        return "it starts with '-'"
    if ".." in name:
        return "it contains '..'"
    return None


def protected_reason(branch: str, default: str | None) -> str | None:
    """Why ``branch`` is never deleted (``default``: the repo's default branch), or None."""
    low = branch.lower()
    if default is not None and low == default.lower():
        return f"it is the default branch ({default})"
    if low in PROTECTED:
        return f"{'/'.join(PROTECTED)} are protected names"
    if low.startswith(PROTECTED_PREFIX):
        return "release/* branches are protected"
    return None


def branch_for(topic_id: str) -> Branch:
    """The branch of a topic: the id with every ``/`` replaced by ``-``."""
    return Branch(topic_id.replace("/", "-"))


def parse_id(value: str) -> Topic:
    """Validate a topic id; raise ``invalid-id`` naming the rule it breaks."""
    match = ID_RE.fullmatch(value)
    if not match:
        raise RouterError(
            ErrorCode.INVALID_ID,
            f"{value!r} is not a topic id: use <TICKET-123>-<slug> or <YYYY-MM-DD>-<slug>, "
            "slug in lowercase letters, digits and '-'",
        )
    if DATE_RE.fullmatch(match["prefix"]):
        _check_date(match["prefix"], what=f"id {value!r}")
    problem = portable_name_problem(value)
    if problem:
        raise RouterError(
            ErrorCode.INVALID_ID, f"{value!r} cannot be a branch or directory name: {problem}"
        )
    return Topic(TopicId(value), match["topic"], branch_for(value))


def derive_id(
    description: str,
    *,
    ticket: str | None = None,
    date: str | None = None,
    today: _dt.date | None = None,
) -> str:
    """``<ticket>-<slug>`` or ``<date>-<slug>`` for a description (not yet validated as a whole).

    Without ``ticket`` and ``date``, a ticket key or issue URL leading the description is
    the ticket (:func:`split_request`).
    """
    request = split_request(description)
    if ticket is None and date is None:
        ticket = request.ticket
    if ticket is not None and ticket == request.ticket:
        description = request.words  # the key is the prefix; it is not repeated in the slug
    elif request.ticket is not None:
        # Another prefix was chosen (--ticket, --date): the key stays in the slug as its
        # key, an issue URL's as web-12, never as the URL's words.
        description = f"{request.ticket} {request.words}"
    elif request.words != description:
        description = request.words  # an unrecognised URL never becomes the slug
    slug = slugify(description)
    if ticket is not None:
        if not re.fullmatch(TICKET_RE, ticket):
            raise RouterError(
                ErrorCode.INVALID_ID,
                f"ticket {ticket!r} must look like ENG-1234 (letters, then -digits)",
            )
        return f"{ticket}-{slug}"
    if date is not None:
        _check_date(date, what="--date")
        return f"{date}-{slug}"
    import datetime as _dt  # lazy: only an id made from today's date needs it

    return f"{(today or _dt.date.today()).isoformat()}-{slug}"


def with_suffix(topic_id: str, n: int) -> str:
    """The n-th collision candidate: the id itself for n == 1, else ``<id>-<n>``.

    The suffix counts in the slug's 40 characters (§4): a long slug is cut on
    a word boundary to make room for it, as :func:`slugify` cuts a long one.
    """
    if n == 1:
        return topic_id
    suffix = f"-{n}"
    match = ID_RE.fullmatch(topic_id)
    if match is None:
        return f"{topic_id}{suffix}"
    slug = _cut_slug(match["topic"], MAX_SLUG - len(suffix))
    return f"{match['prefix']}-{slug}{suffix}"


def _cut_slug(slug: str, limit: int) -> str:
    if len(slug) <= limit:
        return slug
    kept: list[str] = []
    for word in slug.split("-"):
        if len("-".join([*kept, word])) > limit:
            break
        kept.append(word)
    if not kept:
        return slug[:limit].rstrip("-")
    while len(kept) > 1 and kept[-1] in STOP_WORDS:
        kept.pop()
    return "-".join(kept)


def _check_date(value: str, *, what: str) -> None:
    import datetime as _dt  # lazy, as in derive_id

    try:
        if not DATE_RE.fullmatch(value):
            raise ValueError
        _dt.date.fromisoformat(value)
    except ValueError:
        raise RouterError(
            ErrorCode.INVALID_ID, f"{what}: {value!r} is not a calendar date (YYYY-MM-DD)"
        ) from None


# -- a sparse worktree's directories (repos.md `sparse:`, `new --sparse`) ---------

# How a cone is written: in repos.md, in --help, in every message naming the fix.
SPARSE_SYNTAX = "directories relative to the repo root, separated by commas (`packages/api, tools`)"


class BadSparseDir(ValueError):
    """A directory no cone can hold: absolute, through ``..``, empty or not a plain path."""


def sparse_dirs(values: Iterable[str]) -> tuple[str, ...]:
    """The cone's directories from ``values`` (each may list several, comma-separated).

    Normalised (``./a/b/`` is ``a/b``), in the order first given, each once;
    raises :class:`BadSparseDir` naming the bad one and the fix.
    """
    dirs: dict[str, None] = {}
    for value in values:
        for raw in value.split(","):
            text = raw.strip().strip("`").strip()
            if text:
                dirs.setdefault(_sparse_dir(text), None)
    return tuple(dirs)


def _sparse_dir(text: str) -> str:
    if "\0" in text or "\n" in text or "\\" in text:
        raise BadSparseDir(f"{text!r} is not a directory name; write {SPARSE_SYNTAX}")
    if text.startswith("/"):
        raise BadSparseDir(
            f"{text!r} is an absolute path; write it relative to the repo root "
            f"({text.lstrip('/')!r}), as {SPARSE_SYNTAX}"
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadSparseDir(
            f"{text!r} goes through '..'; a cone holds directories inside the repo: write {SPARSE_SYNTAX}"
        )
    if not parts:
        raise BadSparseDir(
            f"{text!r} is the repo root, which is the whole tree: leave sparse out instead"
        )
    if parts[0] == ".git":
        raise BadSparseDir(f"{text!r} is git's own directory; write {SPARSE_SYNTAX}")
    return "/".join(parts)
