"""For tests whose process of its own runs out of file descriptors: the script text that does it."""

from __future__ import annotations

import textwrap

#: `use_up(soft)`: the process's soft open-file limit set to `soft`, then every descriptor left taken (returned).
USE_UP = textwrap.dedent("""
    import os, resource

    def use_up(soft):
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        taken = []
        try:
            while True:
                taken.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            return taken
""")
