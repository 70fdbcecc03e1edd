"""pysyncobj replaces socket.inet_ntop with a Windows-only function on every OS when it is imported; the raft module
puts the real one back, or every address formatted later in the process fails (psutil's connections of a process in
a test worker that had imported the controller: four tests of one CI run)."""

from __future__ import annotations

import socket

import mqtools.server.controller.raft  # noqa: F401 - imported for what importing it does


def test_importing_the_raft_leaves_inet_ntop_working() -> None:
    assert socket.inet_ntop(socket.AF_INET, b"\x7f\x00\x00\x01") == "127.0.0.1"
    assert socket.inet_ntop(socket.AF_INET6, bytes(15) + b"\x01") == "::1"
