"""`mq cluster up` starts a preset in stages: what starts together, and that every process starts once."""

from __future__ import annotations

from pathlib import Path

from mqtools.cluster.launcher import UpOptions, plan, start_stages


def stages_of(preset: str, tmp_path: Path, proxies: int = 0) -> list[list[str]]:
    state = plan(UpOptions(preset, tmp_path, 1, 40000, {}, proxies=proxies))
    stages = start_stages(state.procs)
    assert sorted(p.name for stage in stages for p in stage) == sorted(p.name for p in state.procs)
    return [[p.name for p in stage] for stage in stages]


def test_masters_start_together_after_the_name_servers_and_before_their_slaves(tmp_path: Path) -> None:
    assert stages_of("2m-2s-sync", tmp_path, proxies=2) == [
        ["namesrv-0"], ["broker-a", "broker-b"], ["broker-a-s", "broker-b-s"], ["proxy-0", "proxy-1"]]


def test_controller_mode_starts_the_first_of_each_set_before_the_others(tmp_path: Path) -> None:
    stages = stages_of("2m-2s-controller", tmp_path)
    assert stages == [["namesrv-0", "namesrv-1", "namesrv-2"], ["broker-a-0", "broker-b-0"],
                      ["broker-a-1", "broker-b-1"]]


def test_no_slaves_means_no_slave_stage(tmp_path: Path) -> None:
    assert stages_of("2m-noslave", tmp_path) == [["namesrv-0"], ["broker-a", "broker-b"]]


def test_three_replicas_start_the_second_and_third_together(tmp_path: Path) -> None:
    assert stages_of("1m-2s-controller", tmp_path)[1:] == [["broker-a-0"], ["broker-a-1", "broker-a-2"]]
