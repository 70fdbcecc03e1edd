"""`mq admin` on Apache RocketMQ 4.9.7's 2m-2s SYNC cluster, with Apache's mqadmin 4.9.8 as the oracle.

Every reading command of mq's dialect runs with -o table and -o json (the document valid against its
shipped schema); every reading command of the mqadmin dialect prints what Apache's mqadmin prints for
the same cluster at nearly the same moment (catalogue.normalise: addresses, times, ids and rates aside).
"""

from __future__ import annotations

import pytest
from checks import dialect_rows, reading_problems
from mqadminbatch import MqadminBatch
from tkworld import World

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: mqadmin command -> why mq's dialect prints something else, as docs/compatibility.md's "Differences from Apache
#: RocketMQ" says. An entry whose command comes out the same fails the test: it goes.
DOCUMENTED: dict[str, str] = {}


def test_every_reading_command_answers_on_apache(worlds: dict[str, World]) -> None:
    failures = reading_problems(worlds["apache"])
    assert not failures, "\n".join(failures)


def test_the_mqadmin_dialect_prints_what_apaches_mqadmin_prints(worlds: dict[str, World], mqadmin: MqadminBatch,
                                                                 mqadmin5: MqadminBatch) -> None:
    """mq's dialect lays its output out as mqadmin 5.x does. Against a 4.9.7 cluster, Apache's 5.5.0 mqadmin
    fails or guesses where a 4.x broker lacks what 5.x asks (topicStatus, consumerProgress, track types);
    so mq's output must equal 5.5.0's, or, in 4.9.8's layout (catalogue.as_4x), 4.9.8's."""
    rows, differ = dialect_rows(worlds["apache"], mqadmin5, mqadmin, DOCUMENTED)
    print("\n| mqadmin command on Apache 4.9.7 | mq's dialect |\n|---|---|\n" + "\n".join(rows))
    assert not differ, "\n".join(differ)
