"""Suite-wide setup.

A shell without job control starts a background command with SIGINT ignored, and an ignored
signal stays ignored across exec: pytest, and every `mq` process a test starts, would then ignore
SIGINT, and the tests that stop `mq ... --watch` with it would wait forever. The suite takes
SIGINT back for itself, so its children start with the default whatever launched pytest.

pytest's own formatter fails on a traceback entry without a line number (TypeError on tb_lineno None:
seen at a drill fixture's setup on a loaded machine), and the run then ends in INTERNALERROR without the
real error. Such a report is rebuilt from the standard library's formatting, so the cause is shown.

A session fixture ends after the last test that needs it (support/session_fixtures.py).

`make test` runs everything under `--dist loadgroup`: each file is a unit of work (as `--dist loadfile`), except
that every test that starts JVMs (`reference/`, `spark/`) is in one unit, run in order on one worker while the
other workers take the rest: one JVM cluster at a time, and the JVM phase no longer waits for the others.

Every test is marked by the directory it lives in (unit, integration, compat, reference, spark, tui),
and the directories that start JVMs, a SparkSession or third-party clients are also `slow`, so
`-m "not slow"` or `-m "not reference"` select what they say (tests/README.md).
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Generator, Iterator
from pathlib import Path
from types import TracebackType

import pytest

pytest_plugins = ["support.session_fixtures"]

HERE = Path(__file__).parent
#: The directories whose tests take a marker of their name; the second set are also `slow`.
DIRECTORY_MARKERS = ("unit", "integration", "compat", "reference", "spark", "tui")
SLOW = frozenset({"compat", "reference", "spark", "tui"})
#: The directories that start JVMs or the SparkSession: under `--dist loadgroup` they are one unit of work, run
#: in their collected order on one worker (never two JVM clusters at once) beside the others' files.
JVM = frozenset({"reference", "spark"})
JVM_GROUP = "jvm"


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """First (tryfirst): xdist's loadgroup reads the `xdist_group` marks given here."""
    for item in items:
        try:
            relative = Path(item.path).relative_to(HERE)
        except ValueError:
            continue
        top = relative.parts[0]
        if top in DIRECTORY_MARKERS:
            item.add_marker(top)
            if top in SLOW:
                item.add_marker("slow")
        item.add_marker(pytest.mark.xdist_group(JVM_GROUP if top in JVM else relative.as_posix()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    try:
        return (yield)
    except TypeError:
        if call.excinfo is None:
            raise
        return pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed",
                                 _plain_traceback(call.excinfo.value), call.when, duration=call.duration,
                                 start=call.start, stop=call.stop)


def _plain_traceback(exc: BaseException) -> str:
    """Each frame as file:line in function (`?` where the line is not known), then the error and its causes."""
    parts = []
    while exc is not None:
        frames = [f"  {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno or '?'} in {tb.tb_frame.f_code.co_name}"
                  for tb in _walk(exc.__traceback__)]
        parts.append("\n".join(["Traceback (pytest could not format it; its frames):", *frames,
                                 *traceback.format_exception_only(exc)]))
        exc = exc.__cause__ or exc.__context__
    return "\n\nwhich was raised while handling:\n\n".join(parts)


def _walk(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next
