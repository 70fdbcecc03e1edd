"""Session fixtures end after the last test that needs them, not when the session ends.

The reference phase starts some twenty JVMs over its course (Apache's clusters, proxies, controllers), most in
session fixtures, and an idle Apache broker spends 7 % (4.9.7) to 15 % (5.5.0) of a core on its own timers: the
late tests ran with every earlier world still alive beside them, on two cores, two to three times slower than
alone (the Spark read of an Apache 5.5.0 topic: 44 s alone, 140 s late in CI). So each session fixture is
finished once the last test of the run that needs it, directly or through another fixture, has been torn down.

A fixture must name what it uses as arguments, not fetch it at run time (request.getfixturevalue), for its last
use to be known; one ended and then asked for again fails that test, saying so, rather than starting a second
copy of a cluster. Under xdist a worker runs its units of work in the order they are handed out, not the collected
order, so there a fixture ends early only when every test that needs it is in one `xdist_group` (run in its
collected order on one worker: the JVM tests, tests/conftest.py); the others end with the worker's session.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


class SessionFixtures:
    """Which session fixtures end after which test, and which have ended."""

    def __init__(self, items: list[pytest.Item], grouped: bool) -> None:
        last_user: dict[Any, pytest.Item] = {}  # a fixture definition: the last test that needs it
        groups: dict[Any, set[str | None]] = {}  # a fixture definition: the xdist groups of the tests that need it
        for item in items:
            for name in getattr(item, "fixturenames", ()):
                defs = item._fixtureinfo.name2fixturedefs.get(name)  # type: ignore[attr-defined]
                if defs and defs[-1].scope == "session":
                    last_user[defs[-1]] = item
                    groups.setdefault(defs[-1], set()).add(_group(item))
        self.last: dict[pytest.Item, list[Any]] = {}
        for fixturedef, item in last_user.items():
            if not grouped or (len(groups[fixturedef]) == 1 and None not in groups[fixturedef]):
                self.last.setdefault(item, []).append(fixturedef)
        self.ended: set[Any] = set()

    def end_after(self, item: pytest.Item) -> None:
        for fixturedef in self.last.get(item, ()):
            if fixturedef.cached_result is not None:
                self.ended.add(fixturedef)
                fixturedef.finish(request=item._request)  # type: ignore[attr-defined]


_KEY = pytest.StashKey[SessionFixtures]()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Last (trylast): after the deselection by -m and every reordering."""
    under_xdist = hasattr(config, "workerinput")
    if not under_xdist or config.getvalue("loadgroup"):
        session.stash[_KEY] = SessionFixtures(items, grouped=under_xdist)


def _group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0]) if mark is not None and mark.args else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    yield
    fixtures = item.session.stash.get(_KEY, None)
    if fixtures is not None:
        fixtures.end_after(item)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Generator[None, object, object]:
    fixtures = request.session.stash.get(_KEY, None)
    if fixtures is not None and fixturedef in fixtures.ended:
        raise RuntimeError(f"session fixture {fixturedef.argname!r} ended after what looked like its last use, and "
                           f"{request.node.nodeid} asks for it again: make it an argument of the fixture that fetches "
                           "it with request.getfixturevalue (tests/support/session_fixtures.py)")
    return (yield)
