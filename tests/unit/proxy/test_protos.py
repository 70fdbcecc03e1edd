"""The proxy's protos: Apache's three files with their license headers, and generated modules that are what
`make protos` writes from them now (so nobody edits generated code by hand, and a new grpcio-tools shows)."""

from __future__ import annotations

import shutil
from pathlib import Path

import mqtools.apis as protos_pkg
from mqtools.apis.generate import PROTOS, generate

ROOT = Path(protos_pkg.__file__).parent
V2 = ROOT / "apache" / "rocketmq" / "v2"


def test_the_protos_are_apaches_with_their_license_header() -> None:
    for name in PROTOS:
        text = (V2 / name).read_text()
        assert text.startswith("// Licensed to the Apache Software Foundation (ASF)"), name
        assert "package apache.rocketmq.v2;" in text


def test_generated_modules_are_fresh(tmp_path: Path) -> None:
    target = tmp_path / "apache" / "rocketmq" / "v2"
    target.mkdir(parents=True)
    for name in PROTOS:
        shutil.copy(V2 / name, target / name)
    assert generate(tmp_path) == 0
    for made in sorted(target.glob("*_pb2*.py*")):
        committed = V2 / made.name
        assert committed.read_text() == made.read_text(), f"{made.name} is stale: run `make protos`"


def test_generated_modules_load_beside_the_official_clients_copy() -> None:
    """The descriptors live in a private pool: the official Python client's own apache.rocketmq.v2 (in the
    default pool) and these load in one process."""
    from rocketmq.grpc_protocol import definition_pb2 as theirs

    from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as ours
    from mqtools.apis.apache.rocketmq.v2 import service_pb2

    msg = ours.Message(body=b"x")
    msg.topic.name = "T"
    assert theirs.Message.FromString(msg.SerializeToString()).topic.name == "T"
    assert service_pb2.DESCRIPTOR.services_by_name["MessagingService"].methods_by_name["Telemetry"]
