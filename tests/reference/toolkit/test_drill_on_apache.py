"""The kill-master drill on Apache's 2m-2s SYNC cluster, beside the same drill on mq's.

On Apache the drill runs as on any cluster elsewhere: -n, --fault-cmd SIGKILLs the master's JVM by pid,
--heal-cmd asks this test (through a FIFO) to start the same broker again with its config and store.
On mq it runs on the preset's state dir, whose faults the drill makes itself. Both reports are printed
side by side; both must PASS with nothing lost and with what the toolkit read during the fault right
(toolkitTruth: on Apache, broker-a's queues read from its slave), and `drill check` must re-judge each the
same offline.
"""

from __future__ import annotations

from pathlib import Path

import apache
import pytest
from drillsupport import drill, figures, heal_channel
from refsupport import Clusters2m2s

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300), pytest.mark.faults]


def test_kill_master_on_apache_beside_mq(clusters_2m2s: Clusters2m2s, tmp_path: Path) -> None:
    cluster = clusters_2m2s.apache
    master = cluster.brokers["broker-a"]

    def restart() -> None:
        cluster.brokers["broker-a"] = apache.restart_broker(cluster.brokers["broker-a"])

    (tmp_path / "apache").mkdir()
    with heal_channel(tmp_path, restart) as heal_cmd:
        on_apache = drill(tmp_path / "apache", "-n", cluster.addr, "--fault-cmd", f"kill -9 {master.pid}",
                          "--heal-cmd", heal_cmd)
    assert cluster.brokers["broker-a"].alive
    (tmp_path / "mq").mkdir()
    on_mq = drill(tmp_path / "mq", "--dir", str(clusters_2m2s.mq.state))
    sides = {"Apache 4.9.7": figures(on_apache), "mq": figures(on_mq)}
    print(f"\n{'kill-master, SYNC':<18} {'Apache 4.9.7':>14} {'mq':>14}")
    for key in sides["mq"]:
        print(f"{key:<18} " + " ".join(f"{side[key]!s:>14}" for side in sides.values()))
    for name, side in sides.items():
        assert side["verdict"] == "PASS" and side["lost"] == 0, (name, side)
        assert side["toolkitTruth"] == [True], (name, side)  # topic status, group progress, ha status in the fault
