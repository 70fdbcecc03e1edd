"""The exit codes of every `mq` command, drill and soak: one table (the README's "Exit codes")."""

from __future__ import annotations

EXIT_OK = 0
EXIT_REFUSED = 1
"""Refused by the cluster or not found (the RocketMQ code and remark in the message); a FAIL verdict;
not safe (`ha ready`)."""
EXIT_USAGE = 2
"""A bad argument, no name server, an unknown name."""
EXIT_UNREACHABLE = 3
"""The cluster (or the Spark server) did not answer, or a preset did not come up."""
EXIT_PARTIAL = 4
"""A read answered in part: some broker set or name server could not be read (the document's `unreachable`
names it, the table's last line too); the figures shown are right for what was read. The mqadmin dialect
exits 0 here, as mqadmin does."""
