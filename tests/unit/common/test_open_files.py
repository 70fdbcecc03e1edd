"""The open-file limit: raised to the hard one, and the descriptors held counted against it, at the limit too.

In a process of its own: the limit is the process's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from support.descriptors import USE_UP

SCRIPT = USE_UP + textwrap.dedent("""
    import json, resource
    from mqtools.common.open_files import descriptors, raise_open_files_limit

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    out = {"raised": raise_open_files_limit() == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[0]}
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    before = descriptors()
    held = use_up(64)
    out.update(before=before, opened=len(held), exhausted=descriptors())
    print(json.dumps(out))
""")


def test_the_limit_is_raised_and_a_process_at_it_says_so() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30, check=True)
    out = json.loads(done.stdout)
    assert out["raised"] is True
    held, limit = out["before"]
    assert limit == 64 and held + out["opened"] == 64
    assert out["exhausted"] == [64, 64]  # the count cannot open /proc/self/fd: it is at the limit
