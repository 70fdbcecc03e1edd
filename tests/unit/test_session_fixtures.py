"""tests/support/session_fixtures.py: a session fixture ends after the last test that needs it, and one asked
for again after that fails the test that asks, naming the fixture."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = '''
import pytest

pytest_plugins = ["support.session_fixtures"]
EVENTS = []


@pytest.fixture(scope="session")
def world():
    EVENTS.append("world up")
    yield "w"
    EVENTS.append("world down")


@pytest.fixture(scope="session")
def through(world):
    return world


@pytest.fixture(scope="session")
def late(request):
    return request.getfixturevalue("world")
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A suite of its own, run as a child process (this session's plugins stay out of it)."""
    tests = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])))
    pytester.makeconftest(CONFTEST)
    return pytester


def test_a_session_fixture_ends_after_its_last_user_even_through_another_fixture(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_order='''
from conftest import EVENTS

def test_first(world):
    EVENTS.append("first")

def test_second(through):
    EVENTS.append("second")

def test_third():
    EVENTS.append("third")
    assert EVENTS == ["world up", "first", "second", "world down", "third"]
''')
    suite.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_a_fixture_asked_for_again_after_it_ended_fails_that_test_by_name(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_again='''
def test_first(world):
    pass

def test_fetches_it_at_run_time(late):
    pass
''')
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*session fixture 'world' ended after what looked like its last use*"])
