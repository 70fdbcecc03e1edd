"""SIGTERM and SIGHUP end a drill's loop as Ctrl-C does (its finally blocks run), also where SIGINT is ignored (a
script's background job), and a second signal during the cleanup waits for it instead of cutting it short. Each case
runs in a process of its own: the signals go to that process, never to the test runner."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mqtools.drills.interrupts import NOTE

SCRIPT = """
import asyncio, os, signal, sys
from mqtools.drills.interrupts import Deferred, as_interrupts, run

sig = getattr(signal, sys.argv[1])
signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as a terminal's: under nohup (a CI run) SIGHUP is ignored, and stays so
if sys.argv[2] == "ignored":
    signal.signal(signal.SIGINT, signal.SIG_IGN)

async def drill() -> None:
    try:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), sig)
        await asyncio.sleep(60)
    finally:
        with Deferred():
            os.kill(os.getpid(), sig)  # a second signal, while the cluster is restored
            await asyncio.sleep(0.2)
            print("restored", flush=True)

with as_interrupts():
    try:
        run(drill())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""


@pytest.mark.parametrize(("sig", "sigint"), [("SIGTERM", "default"), ("SIGHUP", "default"),
                                             ("SIGTERM", "ignored"), ("SIGINT", "default")])
def test_a_signal_cancels_the_drill_and_a_second_one_waits_for_its_cleanup(sig: str, sigint: str) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, sig, sigint], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, b"restored\ninterrupted\n"), done.stderr
    assert done.stderr == NOTE
