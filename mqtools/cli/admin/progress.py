"""Progress for long admin work: a rich bar on a terminal (stderr), nothing when not on one."""

from __future__ import annotations

import sys
from typing import Any, Self

from mqtools.cli.output import is_terminal


class Progress:
    """`with Progress("resending", total=n) as p: ... p.advance()`; silent when stderr is not a terminal."""

    def __init__(self, description: str, total: int | None = None) -> None:
        self._description = description
        self._total = total
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Self:
        if is_terminal(sys.stderr):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=Console(file=sys.stderr), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self._description, total=self._total)
        return self

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
