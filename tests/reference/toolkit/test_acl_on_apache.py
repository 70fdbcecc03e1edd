"""ACL 1.0 both ways, on the ACL broker of each side (`acl_pair`: Apache 4.9's and mq's, the same
plain_acl.yml): `mq admin` signed with a context's credentials, and Apache's mqadmin 4.9.8 signed from its
tools.yml. The right secret is accepted and a wrong one refused on both; an account written by either tool
lands in each broker's own plain_acl.yml the same way, and a white address Apache refuses (`10.1.*`, three
octets) is refused by both with Apache's message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apache
import pytest
import yaml
from fetch import require
from mqadminbatch import MqadminBatch
from readback import route
from refsupport import ACL_ACCOUNT
from support.adminsupport import mq_here, one_line_error

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.credentials import ACCESS_KEY_ENV, SECRET_KEY_ENV, write_file
from mqtools.common.security import SessionCredentials

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

WRONG_SECRET = "not-the-secret"
ACCOUNT = "TkAclUser"
REFUSED_ACCOUNT = "TkAclRefused"
#: What each side's broker answers a wrong signature with (docs/compatibility.md, Differences from Apache RocketMQ).
REFUSAL = {"apache": "SYSTEM_ERROR", "mq": "NO_PERMISSION"}


def acl_broker(namesrv: str) -> str:
    with SyncMQAdmin(namesrv) as admin:
        return admin.cluster_info().broker_addr_table["broker-acl"].master_addr()


def acl_file(ref_root: Path, side: str) -> Path:
    """The plain_acl.yml each side's ACL broker reads and rewrites (see the acl_pair fixture)."""
    if side == "apache":
        return apache.home(apache.SETS["apache-4"], ref_root / "apache4-acl") / "conf" / "plain_acl.yml"
    return ref_root / "mq-acl" / "plain_acl.yml"


def account(ref_root: Path, side: str, access_key: str) -> dict[str, Any] | None:
    accounts = yaml.safe_load(acl_file(ref_root, side).read_text()).get("accounts") or []
    return next((a for a in accounts if a["accessKey"] == access_key), None)


@pytest.fixture
def contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, acl_pair: dict[str, str]) -> dict[str, str]:
    """Contexts `<side>-good` and `<side>-wrong` in a config dir of the test's own, credentials in files."""
    monkeypatch.setenv("MQ_CONFIG_DIR", str(tmp_path / "mq-config"))
    monkeypatch.delenv(ACCESS_KEY_ENV, raising=False)
    monkeypatch.delenv(SECRET_KEY_ENV, raising=False)
    for side, namesrv in acl_pair.items():
        for kind, secret in (("good", ACL_ACCOUNT[1]), ("wrong", WRONG_SECRET)):
            path = tmp_path / f"{side}-{kind}.yml"
            write_file(path, SessionCredentials(ACL_ACCOUNT[0], secret))
            added = mq_here("context", "add", f"{side}-{kind}", "-n", namesrv, "--credentials", str(path))
            assert added.returncode == 0, added.stderr
    return acl_pair


def test_mq_admin_signed_by_its_context(contexts: dict[str, str], ref_root: Path) -> None:
    for side, namesrv in contexts.items():
        addr = acl_broker(namesrv)
        topic = f"TkAclTopic{side.title()}"
        made = mq_here("admin", "topic", "create", topic, "-b", addr, "-r", "2", "-w", "2", "--context", f"{side}-good")
        assert made.returncode == 0, (side, made.stderr)
        assert route(ref_root, namesrv, topic) == {"broker-acl": (2, 2, 6)}, side
        refused = mq_here("admin", "topic", "create", f"{topic}Refused", "-b", addr, "--context", f"{side}-wrong")
        one_line_error(refused, 1, REFUSAL[side])
        # an account of its own: Apache's broker remembers the key of an update it then refuses (the
        # account is in its table, not in its file), so a later good update of that key writes nothing
        short = mq_here("admin", "acl", "update", REFUSED_ACCOUNT, "-b", addr, "--white-addr", "10.1.*",
                        "--context", f"{side}-good", stdin="tk-user-secret\n")
        one_line_error(short, 1, "Netaddress examine scope Exception netaddress is 10.1.*")
        updated = mq_here("admin", "acl", "update", ACCOUNT, "-b", addr, "--default-topic-perm", "PUB",
                          "--white-addr", "10.1.*.*", "--context", f"{side}-good", stdin="tk-user-secret\n")
        assert updated.returncode == 0, (side, updated.stderr)
    written = {side: account(ref_root, side, ACCOUNT) for side in contexts}
    assert written["apache"] is not None and written["apache"]["secretKey"] == "tk-user-secret", (
        written, acl_file(ref_root, "apache").read_text())
    assert written["mq"] == written["apache"], written
    for side, namesrv in contexts.items():
        gone = mq_here("admin", "acl", "delete", ACCOUNT, "-b", acl_broker(namesrv), "--context", f"{side}-good")
        assert gone.returncode == 0, (side, gone.stderr)
        assert account(ref_root, side, ACCOUNT) is None, side


@pytest.fixture
def tools_yml(ref_root: Path) -> Iterator[dict[str, MqadminBatch]]:
    """Apache's mqadmin 4.9.8 with conf/tools.yml holding the right secret ("good") or a wrong one, a JVM each."""
    batches = {}
    for kind, secret in (("good", ACL_ACCOUNT[1]), ("wrong", WRONG_SECRET)):
        root = ref_root / f"mqadmin-acl-{kind}"
        conf = apache.home(require("harness"), root) / "conf"
        (conf / "tools.yml").write_text(f"accessKey: {ACL_ACCOUNT[0]}\nsecretKey: {secret}\n")
        batches[kind] = MqadminBatch(root)
    yield batches
    for batch in batches.values():
        batch.close()


def test_apaches_mqadmin_signed_by_tools_yml(acl_pair: dict[str, str], tools_yml: dict[str, MqadminBatch],
                                             ref_root: Path) -> None:
    good, wrong = tools_yml["good"], tools_yml["wrong"]
    for side, namesrv in acl_pair.items():
        addr = acl_broker(namesrv)
        topic = f"TkAclByMqadmin{side.title()}"
        made = good.run("updateTopic", "-b", addr, "-t", topic, "-r", "2", "-w", "2", "-n", namesrv)
        assert "success" in made.out and "Exception" not in made.err, (side, made)
        assert route(ref_root, namesrv, topic) == {"broker-acl": (2, 2, 6)}, side
        refused = wrong.run("updateTopic", "-b", addr, "-t", f"{topic}Refused", "-n", namesrv)
        assert "success" not in refused.out and "Exception" in refused.out + refused.err, (side, refused)
        added = good.run("updateAclConfig", "-b", addr, "-a", ACCOUNT, "-s", "tk-user-secret", "-i", "PUB",
                         "-n", namesrv)
        assert "success" in added.out, (side, added)
    written = {side: account(ref_root, side, ACCOUNT) for side in acl_pair}
    assert written["apache"] is not None and written["mq"] == written["apache"], (
        written, acl_file(ref_root, "apache").read_text())
    for side, namesrv in acl_pair.items():
        gone = good.run("deleteAccessConfig", "-b", acl_broker(namesrv), "-a", ACCOUNT, "-n", namesrv)
        assert "success" in gone.out, (side, gone)
        assert account(ref_root, side, ACCOUNT) is None, side
