"""The drill's target from a cluster layout (no cluster): the node each scenario needs, or one line saying what is
missing."""

from __future__ import annotations

from typing import Any

import pytest

from mqtools.drills.preflight import choose_target
from mqtools.drills.scenarios import ScenarioError


def layout(proxies: int) -> dict[str, Any]:
    brokers = [{"cluster": "C", "brokerName": "broker-a", "brokerId": i, "addr": f"127.0.0.1:{10911 + i}",
                "name": f"broker-a-{i}", "role": "SYNC_MASTER" if i == 0 else "SLAVE"} for i in (0, 1)]
    return {"namesrv": ["127.0.0.1:9876"], "namesrvNames": ["namesrv-0"], "brokers": brokers,
            "proxies": [{"name": f"proxy-{i}", "addr": f"127.0.0.1:{8081 + i}"} for i in range(proxies)]}


def test_kill_proxy_targets_the_proxies_in_order() -> None:
    target = choose_target(layout(2), None, "proxy")
    assert [(p.name, p.addr, p.role) for p in target.proxies] == [("proxy-0", "127.0.0.1:8081", "PROXY"),
                                                                  ("proxy-1", "127.0.0.1:8082", "PROXY")]
    assert target.to_json()["proxies"][0] == {"name": "proxy-0", "addr": "127.0.0.1:8081", "role": "PROXY"}


@pytest.mark.parametrize("proxies", [0, 1])
def test_kill_proxy_needs_two_proxies_to_move_between(proxies: int) -> None:
    with pytest.raises(ScenarioError, match="two or more gRPC proxies"):
        choose_target(layout(proxies), None, "proxy")
