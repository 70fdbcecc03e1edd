"""The header: where `mq top` is looking, how fresh the figures are, and where in the views you are."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from mqtools.common.presentation import NA
from mqtools.live.tables import age


@dataclass(frozen=True, slots=True)
class HeaderFacts:
    context: str | None
    namesrv: list[str]
    refresh: float
    last_round_wall: float | None
    last_round_mono: float | None
    now_mono: float
    stale: list[tuple[str, float | None]]
    """(job key, ms since its last good value or None) for every job whose last attempt failed."""
    paused: bool
    breadcrumb: list[str]
    filter_text: str | None
    sort: tuple[str, bool] | None


def header_text(f: HeaderFacts) -> Text:
    line = Text()
    line.append("mq top", style="bold")
    line.append(f"  context {f.context or NA}  name servers {';'.join(f.namesrv)}  refresh {f.refresh:g}s  ")
    if f.last_round_wall is None:
        line.append("last refresh n/a")
    else:
        ago = age((f.now_mono - (f.last_round_mono or f.now_mono)) * 1000)
        line.append(f"last refresh {time.strftime('%H:%M:%S', time.localtime(f.last_round_wall))} ({ago} ago)")
    if f.stale:
        shown = ", ".join(f"{k} ({'never read' if ms is None else age(ms) + ' old'})" for k, ms in f.stale[:2])
        more = f" +{len(f.stale) - 2}" if len(f.stale) > 2 else ""
        line.append(f"  STALE {shown}{more}", style="bold reverse red")
    if f.paused:
        line.append("  PAUSED", style="bold reverse yellow")
    line.append("\n")
    line.append(" > ".join(f.breadcrumb), style="bold cyan")
    if f.filter_text:
        line.append(f"  filter /{f.filter_text}", style="magenta")
    if f.sort is not None:
        line.append(f"  sort {f.sort[0]} {'desc' if f.sort[1] else 'asc'}", style="green")
    return line


class TopHeader(Static):
    """Two lines: context, name servers, refresh, last refresh, stale and paused markers; breadcrumb,
    filter and sort."""

    _shown: Text | None = None

    def show(self, facts: HeaderFacts) -> None:
        text = header_text(facts)
        if self._shown is None or text.plain != self._shown.plain or text.spans != self._shown.spans:
            self._shown = text
            self.update(text)
