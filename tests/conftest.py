"""Hermetic git for every test: own HOME, no system config, fixed identity and dates.

Named fixtures: ``workspace``, ``home_repo``, ``topic`` (a ``Topic``), ``questioned_topic``,
``questioned_multi_topic``, ``transcript`` (a golden-file scenario, ``helpers.golden``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import signal

from helpers import plancheck
from helpers.golden import UPDATE_OPTION, Transcript
from helpers.plans import artifact
from helpers.repos import LEAKY_ENV, format_env, hermetic_env, make_repo
from helpers.topics import Topic, multi_topic, new_topic

# A test run started as a shell's background job inherits SIGINT ignored, and an
# ignored signal stays ignored across exec: a fake git's `kill -INT $$` would then do
# nothing, and the tests of a Ctrl-C reaching git would test nothing. A handled
# signal is the default again in every child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The modules whose every real teardown and pr-cleanup is planned first and compared with what
# it did (helpers.plancheck), in every run: the ones that drive teardown and pr-cleanup through
# the states the steps decide on. TEAM_ROUTER_TEST_PLAN_CHECK=all turns it on for every module, =off for none.
PLAN_CHECKED = frozenset(
    {
        "test_dry_run",
        "test_teardown",
        "test_teardown_facts",
        "test_cleanup",
        "test_unshipped",
        "test_sweep",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "no_plan_check(reason): the real teardown/pr-cleanup of this test is not compared "
        "with its dry run, for the reason given",
    )


@pytest.fixture(autouse=True)
def plan_check(request: pytest.FixtureRequest):
    """Turn the plan check (helpers.plancheck) on or off for this test."""
    module = request.module.__name__.rpartition(".")[2]
    marker = request.node.get_closest_marker("no_plan_check")
    mode = os.environ.get(plancheck.MODE_ENV, "")
    on = mode == "all" or (module in PLAN_CHECKED and mode != "off")
    skip = (marker.args[0] if marker.args else "no reason given") if marker else ""
    plancheck.current = plancheck.Setting(on, skip)
    yield
    plancheck.current = plancheck.Setting()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        UPDATE_OPTION,
        action="store_true",
        help="rewrite tests/golden/*.txt from the outputs of this run instead of comparing",
    )


@pytest.fixture
def transcript(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Transcript:
    """A golden-file scenario named after the test (``test_`` dropped, ``_`` as ``-``); the
    help texts laid out for 80 columns whatever the terminal."""
    monkeypatch.setenv("COLUMNS", "80")
    name = request.node.name.removeprefix("test_").replace("_", "-")
    return Transcript(name, tmp_path, bool(request.config.getoption(UPDATE_OPTION)))


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    for key, value in hermetic_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    return tmp_path


@pytest.fixture
def git_format(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The format every repository of the test is made in (``helpers.repos.FORMATS``;
    parametrize it with ``indirect=True``, and ask for it before the repositories)."""
    fmt: str = getattr(request, "param", "sha1")
    env = format_env(fmt)
    if isinstance(env, str):
        pytest.skip(env)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return fmt


@pytest.fixture
def workspace(tmp_path: Path, git_format: str) -> Path:
    """The parent directory in which sibling repos live (origins live beside it), in the
    test's ``git_format``."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def home_repo(workspace: Path) -> Path:
    return make_repo(workspace, "web")


@pytest.fixture
def topic(home_repo: Path) -> Topic:
    """A topic made by ``new`` in ``home_repo``: id ``TOPIC_ID``, its worktree, an empty plan dir."""
    return new_topic(home_repo)


def _questioned(made: Topic) -> Topic:
    artifact(made.plan_dir, "task.md")
    artifact(made.plan_dir, "questions.md")
    return made


@pytest.fixture
def questioned_topic(topic: Topic) -> Topic:
    """``topic`` with task.md and questions.md written in its plan dir."""
    return _questioned(topic)


@pytest.fixture
def questioned_multi_topic(workspace: Path) -> Topic:
    """Home repo ``web`` and secondary ``api``, each with a worktree; task.md and questions.md written."""
    return _questioned(multi_topic(workspace, ("api",)))


def pytest_terminal_summary(terminalreporter) -> None:
    """How many real runs the plan check compared with their plan, and what it skipped (why)."""
    if len(plancheck.tally) > 1 or plancheck.tally["checked"]:
        terminalreporter.write_line(f"plan check: {plancheck.tally}")


@pytest.fixture
def second_stamped(tmp_path: Path) -> Iterator[Path]:
    """An ext4 file system whose inodes keep whole seconds only (128-byte inodes), as ext3,
    some network file systems and FAT do: every write of one second gets the same stamps."""
    if shutil.which("mkfs.ext4") is None or os.geteuid() != 0:
        pytest.skip("needs mkfs.ext4 and root to mount a loop device")
    image, mnt = tmp_path / "ext4.img", tmp_path / "ext4"
    with open(image, "wb") as fh:
        fh.truncate(16 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-I", "128", str(image)], check=True, capture_output=True)
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount an ext4 image here: {mounted.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
