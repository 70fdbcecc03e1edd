"""The root of every error the toolkit raises on purpose, carrying the exit code it means.

Each error class says once what its failure is to a script (mqtools.common.exitcodes); the CLI's frame
(mqtools.cli.frame) is the one place a ToolkitError becomes one line on stderr and that exit code, so no
command catches an error only to translate it.
"""

from __future__ import annotations

from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_USAGE


class ToolkitError(Exception):
    """A failure the toolkit expects and explains: a refusal, a usage error, an unreachable cluster."""

    exit_code: int = EXIT_REFUSED

    def summary(self) -> str:
        """The one line an operator reads."""
        return str(self)


class UsageError(ToolkitError):
    """A bad argument, file or combination of options: the command did nothing."""

    exit_code = EXIT_USAGE
