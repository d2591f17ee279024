"""router.github: origin URLs to --repo, PR JSON, and gh unavailable as a value, not a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fakegh import OWNER, hide_gh, install_fake_gh, pr

from router import github
from router.github import GhFailed, GitHub, RepoSlug, Unavailable

OID = "a" * 40
MERGE = "b" * 40
URL = f"https://github.com/{OWNER}/web.git"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("https://github.com/acme/web", RepoSlug("github.com", "acme", "web")),
        ("https://github.com/acme/web/", RepoSlug("github.com", "acme", "web")),
        ("https://user:token@github.com/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("ssh://git@github.com/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("ssh://git@github.com:22/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("git@github.com:acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("git@github.com:acme/a.github.io.git", RepoSlug("github.com", "acme", "a.github.io")),
        ("git@ghe.example.com:Team-1/svc_api", RepoSlug("ghe.example.com", "Team-1", "svc_api")),
    ],
)
def test_remote_url_forms_name_the_repo(url: str, expected: RepoSlug) -> None:
    assert github.parse_remote_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "/srv/git/web.git",
        "file:///srv/git/web.git",
        "http://github.com/acme/web.git",
        "https://github.com/acme/web.git?x=1",
        "https://github.com/acme/web/extra.git",
        "https://github.com/acme/..",
        "git@github.com:/acme/web.git",
        "https://github.com/-acme/web.git",
        "https://github.com/acme/we b.git",
        "ext::sh -c touch% x",
    ],
)
def test_anything_else_names_no_repo(url: str | None) -> None:
    assert github.parse_remote_url(url) is None


def test_repo_arg_carries_the_host_only_off_github_com() -> None:
    assert RepoSlug("github.com", "acme", "web").arg == "acme/web"
    assert RepoSlug("ghe.example.com", "acme", "web").arg == "ghe.example.com/acme/web"


def test_pr_urls_parse_strictly() -> None:
    parsed = github.parse_pr_url("https://github.com/acme/web/pull/42")
    assert parsed == github.PrUrl(RepoSlug("github.com", "acme", "web"), 42)
    assert github.parse_pr_url("https://github.com/acme/web/pull/42/") is not None
    for bad in (
        "https://github.com/acme/web/pull/42/files",
        "https://github.com/acme/web/pull/4x",
        "https://github.com/acme/web/issues/42",
        "http://github.com/acme/web/pull/42",
        "https://github.com/acme/web/pull/٤٢",
        "https://github.com/acme/web/pull/42\n",
    ):
        assert github.parse_pr_url(bad) is None, bad


def test_missing_gh_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_gh(tmp_path, monkeypatch)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    assert "not installed" in str(hub)
    assert str(hub).startswith("gh unavailable")


def test_unauthenticated_gh_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch, authenticated=False)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    assert "not authenticated" in hub.reason
    assert fake.calls() == [["auth", "status", "--hostname=github.com"]]


def test_a_non_github_origin_never_reaches_gh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch)
    hub = github.connect("/srv/git/web.git", cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    assert fake.calls() == []


def test_every_pr_call_names_the_repo_and_asks_for_fields_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_gh(
        tmp_path,
        monkeypatch,
        prs=(
            pr(7, "topic", OID, merge_commit=MERGE),
            pr(8, "child", OID, state="OPEN", base="topic"),
        ),
    )
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    seven = hub.view(7)
    assert (seven.number, seven.state, seven.head_ref, seven.head_oid) == (
        7,
        "MERGED",
        "topic",
        OID,
    )
    assert seven.merge_commit == MERGE and seven.merged and seven.same_repo(hub.slug)
    assert [p.number for p in hub.list_by_head("topic")] == [7]
    assert [p.number for p in hub.list_by_base("topic")] == [8]
    hub.close(8)
    assert fake.pr_state(8) == "CLOSED"
    pr_calls = [c for c in fake.calls() if c[0] == "pr"]
    assert len(pr_calls) == 4
    for call in pr_calls:
        assert "--repo=acme/web" in call
        assert not any("title" in a or "body" in a for a in call)


def test_a_fork_pr_is_not_same_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(9, "topic", OID, fork_owner="mallory"),))
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    (fork,) = hub.list_by_head("topic")
    assert fork.cross_repo and not fork.same_repo(hub.slug)
    # Even a PR that claims not to be cross-repo is not ours when its head owner differs.
    spoofed = github.parse_pr(
        {**pr(9, "topic", OID, fork_owner="mallory"), "isCrossRepository": False}
    )
    assert not spoofed.same_repo(hub.slug)


def test_a_failing_gh_raises_gh_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(7, "topic", OID),))
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    fake.update(fail=True)
    with pytest.raises(GhFailed, match="502"):
        hub.view(7)
    with pytest.raises(GhFailed):
        hub.list_by_head("topic")


def test_an_unknown_pr_raises_gh_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_gh(tmp_path, monkeypatch)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    with pytest.raises(GhFailed, match="Could not resolve"):
        hub.view(404)


def test_a_hung_gh_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(7, "topic", OID),))
    # The timeout leaves the answering gh room on a loaded machine; the hung one sleeps far longer.
    hub = github.connect(URL, cwd=tmp_path, timeout=3)
    assert isinstance(hub, GitHub), hub
    fake.update(sleep=60)
    with pytest.raises(GhFailed, match="timed out"):
        hub.view(7)


@pytest.mark.parametrize(
    "broken",
    [
        [],
        {"number": "7"},
        {**pr(7, "t", OID), "state": "WEIRD"},
        {**pr(7, "t", OID), "headRefName": None},
        {**pr(7, "t", OID), "isCrossRepository": "no"},
        {**pr(7, "t", OID), "number": True},
    ],
)
def test_malformed_pr_json_is_refused(broken: object) -> None:
    with pytest.raises(GhFailed):
        github.parse_pr(broken)


def test_a_malformed_merge_commit_is_no_merge_commit() -> None:
    parsed = github.parse_pr({**pr(7, "t", OID), "mergeCommit": {"oid": "not-a-sha; rm -rf /"}})
    assert parsed.merge_commit is None
