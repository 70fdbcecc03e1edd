"""Which front workers stop accepting new clients for now, so that a broker's connections spread over its workers.

Every worker accepts on the same listening socket, and the kernel wakes them in the same order each time: left
alone, one worker takes nearly every client, its core does the network work and its death drops most of them.
The store process counts each worker's client connections (OPEN and CLOSE on its link, relay.py) and asks this
gate, on every change, which workers should pause accepting; it sends ACCEPT_PAUSE / ACCEPT_RESUME for what
changed. Sans-IO: counts and serving in, verdicts out.

A worker more than SLACK connections above the least-loaded *serving* worker is paused, and resumed once within
SLACK. A worker that is not serving (dead, or silent: hung or stopped) is left out of the minimum, so it never
keeps the healthy ones from accepting; it keeps the verdict it had (it accepts nothing anyway) until it serves
again. The least-loaded serving worker is never paused, so some worker always accepts while one serves.
"""

from __future__ import annotations

#: How many connections above the least-loaded serving worker a worker may hold and still accept: one lets the
#: kernel's order take the next client without a pause and a resume on every connection.
SLACK = 1


class AcceptGate:
    """Each worker's connection count and whether it serves in; which workers to pause or resume out (only the
    changes, as {worker: paused}), remembering what each was told."""

    def __init__(self, slack: int = SLACK) -> None:
        self.slack = slack
        self._counts: dict[int, int] = {}
        self._serving: dict[int, bool] = {}
        #: The workers told to pause (and not told to resume since).
        self.paused: set[int] = set()

    @property
    def counts(self) -> dict[int, int]:
        return dict(self._counts)

    def join(self, worker: int, count: int) -> dict[int, bool]:
        """A worker (a new process: it accepts until told otherwise) serves, holding `count` connections."""
        self._counts[worker] = count
        self._serving[worker] = True
        self.paused.discard(worker)
        return self._decide()

    def leave(self, worker: int) -> dict[int, bool]:
        """A worker died: forgotten, and not told anything."""
        self._counts.pop(worker, None)
        self._serving.pop(worker, None)
        self.paused.discard(worker)
        return self._decide()

    def count(self, worker: int, count: int) -> dict[int, bool]:
        """A worker holds `count` connections now (one opened or closed); one not joined yet is counted, not
        judged (its first clients can come before the store has seen it serve)."""
        self._counts[worker] = count
        self._serving.setdefault(worker, False)
        return self._decide()

    def serving(self, worker: int, serving: bool) -> dict[int, bool]:
        """A worker went silent (not serving), or answers again."""
        if worker not in self._counts or self._serving[worker] is serving:
            return {}
        self._serving[worker] = serving
        return self._decide()

    def _decide(self) -> dict[int, bool]:
        live = [worker for worker, serving in self._serving.items() if serving]
        if not live:
            return {}
        ceiling = min(self._counts[worker] for worker in live) + self.slack
        changes: dict[int, bool] = {}
        for worker in live:
            pause = self._counts[worker] > ceiling
            if pause is not (worker in self.paused):
                changes[worker] = pause
                if pause:
                    self.paused.add(worker)
                else:
                    self.paused.discard(worker)
        return changes
