"""ACL 2.0 against Apache RocketMQ 5.5.0 as the oracle: two single-broker worlds started with the same
Apache 5.5 auth properties (support.authprops), Apache's and mq's, and the same scenarios on both, Apache's
first, the outcomes normalised (addresses) and compared:

1. `mq admin user|acl2` signed as the init Super user: the same JSON documents and the same refusals;
2. Apache's mqadmin 5.5.0 (createUser ... deleteUser, signed through conf/tools.yml) prints the same for
   mq as for Apache, what it writes reads back the same through `mq admin`, and copyUser/copyAcl carry a
   user and its rules from Apache's broker to mq's;
3. Apache's Java 5.5.0 remoting client signed as 2.0 users: let in and refused alike, with the same
   response code and remark, and nothing refused stored.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache
import pytest
from fetch import require
from javaclient import JavaRun, run_java
from mqadminbatch import MqadminBatch, MqadminOutput
from refsupport import CLUSTER, assert_same
from support.adminsupport import mq_here
from support.authprops import AUTH_PROPS, ROOT
from support.mqproc import MqProcess, start_broker, start_namesrv
from support.presetcluster import wait_for

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.credentials import ACCESS_KEY_ENV, SECRET_KEY_ENV
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.remoting.bodies import TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SIGNED = ClientSecurity(credentials=ROOT)
SIDES = ("apache", "mq")

#: Topics of the Java client's scenarios: a rule allows Acl2Ok, a broad Allow `Acl2D*` covers Acl2Denied
#: where a narrower Deny refuses it (mq's own test shows a broad Allow letting a send in), no rule names
#: Acl2NoRule, and Acl2Ip's Allow is for other source addresses only.
OK_TOPIC, DENIED_TOPIC, NO_RULE_TOPIC, IP_TOPIC = "Acl2Ok", "Acl2Denied", "Acl2NoRule", "Acl2Ip"
TOPICS = (OK_TOPIC, DENIED_TOPIC, NO_RULE_TOPIC, IP_TOPIC)
PUBLISHER = SessionCredentials("acl2pub", "pub-XYZZY-secret")
DISABLED = SessionCredentials("acl2off", "off-XYZZY-secret")

#: The Java client's refusal: `CODE: 16  DESC: <remark> BROKER: <addr>` in its exception's message.
REFUSAL = re.compile(r"CODE: (\d+)\s+DESC: (.*?) BROKER: ")


@dataclass
class World:
    """One side's name server and auth-enabled broker."""

    side: str
    namesrv: str
    broker: str
    config_dir: Path

    def norm(self, text: str) -> str:
        """`text` without this world's addresses, so the two sides' outputs compare."""
        return text.replace(self.broker, "<broker>").replace(self.namesrv, "<namesrv>")


@pytest.fixture(scope="module")
def worlds(ref_root: Path) -> Iterator[dict[str, World]]:
    """Apache 5.5.0's name server and broker, then mq's, both with AUTH_PROPS (cluster RefCluster) and the
    Java scenarios' topics; stopped after the module. mq's broker must not have printed a traceback."""
    root = ref_root / "acl2-apache5"
    stops: list[Callable[[], object]] = []
    mq_broker: MqProcess | None = None
    try:
        namesrv = apache.start_namesrv(root, "apache-5")
        stops.append(namesrv.kill)
        broker = apache.start_broker(root, namesrv.addr, "apache-5", cluster=CLUSTER, security=SIGNED, **AUTH_PROPS)
        stops.append(broker.kill)
        (root / "mq").mkdir()
        mq_namesrv = start_namesrv(root / "mq")
        stops.append(mq_namesrv.stop)
        mq_broker = start_broker(root / "mq", mq_namesrv.addr, brokerClusterName=CLUSTER, **AUTH_PROPS)
        stops.append(mq_broker.stop)
        made = {"apache": World("apache", namesrv.addr, broker.addr, root / "mq-config-apache"),
                "mq": World("mq", mq_namesrv.addr, mq_broker.addr, root / "mq-config-mq")}
        for world in made.values():
            with SyncMQAdmin(world.namesrv, security=SIGNED) as admin:
                for topic in TOPICS:
                    admin.topics.create_topic(TopicConfig(topic, read_queue_nums=2, write_queue_nums=2),
                                              cluster=CLUSTER)
        yield made
    finally:
        for stop in reversed(stops):
            stop()
    assert mq_broker is not None and "Traceback" not in mq_broker.output(), mq_broker.output()
    assert "XYZZY" not in mq_broker.output(), "a password (each has XYZZY) reached mq's broker output"


def admin(world: World, *args: str, stdin: str | None = None,
          creds: SessionCredentials | None = ROOT) -> subprocess.CompletedProcess[str]:
    """`mq admin ARGS -b BROKER -n NAMESRV` in this process, signed with `creds` from the environment (none:
    unsigned), in a config dir of its own so no context's credentials sign it instead."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MQ_CONFIG_DIR", str(world.config_dir))
        for key, value in ((ACCESS_KEY_ENV, creds and creds.access_key), (SECRET_KEY_ENV, creds and creds.secret_key)):
            if value:
                env.setenv(key, value)
            else:
                env.delenv(key, raising=False)
        return mq_here("admin", *args, "-b", world.broker, "-n", world.namesrv, stdin=stdin)


def outcome(world: World, result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """Exit code, the JSON document (or text) and the error line, without addresses."""
    out = world.norm(result.stdout)
    return {"rc": result.returncode, "out": json.loads(out) if out.startswith("{") else out,
            "err": world.norm(result.stderr)}


def on_both(worlds: dict[str, World], scenario: Callable[[World], dict[str, Any]]) -> dict[str, Any]:
    """`scenario` on Apache's world, then on mq's; the outcomes by side."""
    return {side: scenario(worlds[side]) for side in SIDES}


def in_parallel(worlds: dict[str, World], scenario: Callable[[World], dict[str, Any]]) -> dict[str, Any]:
    """`scenario` on both worlds at once (each side's JVM waits on its own; nothing in one side's run
    depends on the other's); the outcomes by side."""
    with ThreadPoolExecutor(len(SIDES)) as pool:
        futures = {side: pool.submit(scenario, worlds[side]) for side in SIDES}
        return {side: future.result() for side, future in futures.items()}


# ---------------------------------------------------------------------------------------------- mq admin

#: Steps of `mq admin` (name, args, stdin, signer), each on Apache's world and then on mq's.
MQ_ADMIN_STEPS: list[tuple[str, tuple[str, ...], str | None, SessionCredentials | None]] = [
    ("create user", ("user", "create", "tk_app", "-o", "json"), "tk-XYZZY-pass\n", ROOT),
    ("create it again", ("user", "create", "tk_app"), "tk-XYZZY-pass\n", ROOT),
    ("create a second", ("user", "create", "tk_other", "--type", "Normal", "-o", "json"), "tk-XYZZY-other\n", ROOT),
    ("disable", ("user", "update", "tk_app", "--status", "disable", "-o", "json"), None, ROOT),
    ("new password", ("user", "update", "tk_app", "--password", "-o", "json"), "tk-XYZZY-pass2\n", ROOT),
    ("update a ghost", ("user", "update", "tk_ghost", "--status", "enable"), None, ROOT),
    ("get", ("user", "get", "tk_app", "-o", "json"), None, ROOT),
    ("get a ghost", ("user", "get", "tk_ghost", "-o", "json"), None, ROOT),
    ("list", ("user", "list", "--filter", "tk_", "-o", "json"), None, ROOT),
    ("list as table", ("user", "list", "--filter", "tk_"), None, ROOT),
    ("list unsigned", ("user", "list"), None, None),
    ("list with a wrong password", ("user", "list"), None, SessionCredentials("tk_other", "wrong")),
    ("list as a Normal user", ("user", "list"), None, SessionCredentials("tk_other", "tk-XYZZY-other")),
    ("a Normal user makes a Super", ("user", "create", "tk_evil", "--type", "Super"), "x\n",
     SessionCredentials("tk_other", "tk-XYZZY-other")),
    ("rules", ("acl2", "create", "tk_app", "-r", "Topic:tk_orders,Group:tk_group", "-a", "Pub,Sub", "-d", "Allow",
               "-o", "json"), None, ROOT),
    ("a Deny with source IPs", ("acl2", "create", "tk_app", "-r", "Topic:tk_o*", "-a", "Pub", "-d", "Deny",
                                "-i", "10.0.0.0/8,192.168.1.1", "-o", "json"), None, ROOT),
    ("a cluster rule", ("acl2", "create", "User:tk_app", "-r", "Cluster:RefCluster,Topic:*", "-a", "Get,List",
                        "-d", "Allow"), None, ROOT),
    ("update a rule", ("acl2", "update", "tk_app", "-r", "Topic:tk_orders", "-a", "Pub", "-d", "Deny",
                       "-o", "json"), None, ROOT),
    ("rules of a ghost", ("acl2", "create", "tk_ghost", "-r", "Topic:x", "-a", "Pub", "-d", "Allow"), None, ROOT),
    ("get rules", ("acl2", "get", "tk_app", "-o", "json"), None, ROOT),
    ("list rules", ("acl2", "list", "--subject", "tk_", "-o", "json"), None, ROOT),
    ("list rules of a resource", ("acl2", "list", "--resource", "tk_orders", "-o", "json"), None, ROOT),
    ("list rules as table", ("acl2", "list", "--subject", "tk_"), None, ROOT),
    ("delete a rule", ("acl2", "delete", "tk_app", "-r", "Topic:tk_o*", "-o", "json"), None, ROOT),
    ("get rules again", ("acl2", "get", "User:tk_app", "-o", "json"), None, ROOT),
    ("get rules of a ghost", ("acl2", "get", "tk_ghost", "-o", "json"), None, ROOT),
    ("delete every rule", ("acl2", "delete", "tk_app", "-o", "json"), None, ROOT),
    ("no rules left", ("acl2", "get", "tk_app"), None, ROOT),
    ("delete users", ("user", "delete", "tk_app", "-o", "json"), None, ROOT),
    ("delete the other", ("user", "delete", "tk_other"), None, ROOT),
    ("none left", ("user", "list", "--filter", "tk_", "-o", "json"), None, ROOT),
]


def test_mq_admin_manages_users_and_rules_as_on_apache(worlds: dict[str, World]) -> None:
    def scenario(world: World) -> dict[str, Any]:
        return {f"{i:02} {step}": outcome(world, admin(world, *args, stdin=stdin, creds=creds))
                for i, (step, args, stdin, creds) in enumerate(MQ_ADMIN_STEPS)}

    out = on_both(worlds, scenario)
    assert_same(out)
    apache_out = out["apache"]
    assert apache_out["06 get"]["out"]["brokers"][0]["users"] == [
        {"username": "tk_app", "password": "****", "userType": "Normal", "userStatus": "disable"}]
    assert "The user is existed" in apache_out["01 create it again"]["err"]
    assert "username cannot be null." in apache_out["10 list unsigned"]["err"]
    assert "no permission to access Cluster:RefCluster" in apache_out["12 list as a Normal user"]["err"]
    entries = apache_out["19 get rules"]["out"]["brokers"][0]["acls"][0]["policies"][0]["entries"]
    assert [(e["resource"], e["decision"]) for e in entries] == [
        ("Topic:tk_orders", "Deny"), ("Group:tk_group", "Allow"), ("Topic:tk_o*", "Deny"),
        ("Cluster:RefCluster", "Allow"), ("Topic:*", "Allow")]
    assert apache_out["30 none left"]["out"]["brokers"][0]["users"] == []


# ---------------------------------------------------------------------------------------------- mqadmin 5.5.0

@pytest.fixture(scope="module")
def mqadmin5(ref_root: Path, worlds: dict[str, World]) -> Iterator[dict[str, MqadminBatch]]:
    """Apache's mqadmin 5.5.0 signed as ROOT through $ROCKETMQ_HOME/conf/tools.yml, a JVM per side (as the
    toolkit's comparisons run it), so the two sides' sequences run at once."""
    root = ref_root / "acl2-mqadmin5"
    conf = apache.home(require("harness-5"), root) / "conf"
    (conf / "tools.yml").write_text(f"accessKey: {ROOT.access_key}\nsecretKey: {ROOT.secret_key}\n")
    batches = {side: MqadminBatch(root, "harness-5") for side in SIDES}
    yield batches
    for batch in batches.values():
        batch.close()


def printed(world: World, result: MqadminOutput) -> dict[str, str]:
    """What mqadmin printed, without addresses and without the Java stack frames of a failure."""
    err = "\n".join(line for line in result.err.splitlines()
                    if not line.startswith("\tat ") and not re.fullmatch(r"\t\.\.\. \d+ more", line))
    return {"out": world.norm(result.out), "err": world.norm(err)}


#: mqadmin 5.5.0 commands (name, args); B is the side's broker.
MQADMIN_STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("createUser", ("createUser", "-u", "tk_mqa", "-p", "mqa-XYZZY-pass", "-t", "Normal")),
    ("createUser again", ("createUser", "-u", "tk_mqa", "-p", "mqa-XYZZY-pass")),
    ("getUser", ("getUser", "-u", "tk_mqa")),
    ("getUser of mq admin's", ("getUser", "-u", "tk_by_mq")),
    ("updateUser", ("updateUser", "-u", "tk_mqa", "-s", "disable")),
    ("listUser", ("listUser", "-f", "tk_")),
    ("createAcl", ("createAcl", "-s", "User:tk_mqa", "-r", "Topic:tk_mqa_t,Group:tk_mqa_g", "-a", "Pub,Sub",
                   "-d", "Allow")),
    ("createAcl with source IP", ("createAcl", "-s", "User:tk_mqa", "-r", "Topic:tk_mqa_*", "-a", "Pub",
                                  "-d", "Deny", "-i", "127.0.0.1")),
    ("createAcl with no action", ("createAcl", "-s", "User:tk_mqa", "-r", "Topic:x", "-a", "Fly", "-d", "Allow")),
    ("updateAcl", ("updateAcl", "-s", "User:tk_mqa", "-r", "Topic:tk_mqa_t", "-a", "Sub", "-d", "Deny")),
    ("listAcl", ("listAcl", "-s", "tk_")),
    ("getAcl", ("getAcl", "-s", "User:tk_mqa")),
    ("getAcl of mq admin's", ("getAcl", "-s", "User:tk_by_mq")),
    ("deleteAcl", ("deleteAcl", "-s", "User:tk_mqa", "-r", "Topic:tk_mqa_*")),
    ("listAcl after", ("listAcl", "-s", "tk_mqa")),
]


def rows(table: str) -> list[list[str]]:
    """The cells of an mqadmin table's rows, its header left out."""
    return [line.split() for line in table.splitlines()[1:] if line.strip()]


def run_steps(batch: MqadminBatch, world: World, steps: list[tuple[str, tuple[str, ...]]]) -> dict[str, Any]:
    """Each step against the world's broker, keyed by its place and name so a difference names the step."""
    return {f"{i:02} {step}": printed(world, batch.run(*args, "-b", world.broker, "-n", world.namesrv))
            for i, (step, args) in enumerate(steps)}


def read_back(world: World, *names: str) -> dict[str, Any]:
    """What `mq admin` reads of these users and their rules."""
    out = {}
    for name in names:
        out[f"user {name}"] = outcome(world, admin(world, "user", "get", name, "-o", "json"))
        out[f"rules {name}"] = outcome(world, admin(world, "acl2", "get", name, "-o", "json"))
    return out


def test_apaches_mqadmin5_manages_mq_as_it_manages_apache(worlds: dict[str, World],
                                                          mqadmin5: dict[str, MqadminBatch]) -> None:
    for world in worlds.values():  # what mq admin writes, for mqadmin to read
        assert admin(world, "user", "create", "tk_by_mq", stdin="by-XYZZY-mq\n").returncode == 0, world.side
        made = admin(world, "acl2", "create", "tk_by_mq", "-r", "Group:tk_by_mq", "-a", "Sub", "-d", "Allow")
        assert made.returncode == 0, (world.side, made.stderr)

    out = in_parallel(worlds, lambda world: run_steps(mqadmin5[world.side], world, MQADMIN_STEPS))
    assert_same(out)
    apache_out = out["apache"]
    assert apache_out["00 createUser"]["out"] == "create user to <broker> success.\n"
    assert "CODE: 16  DESC: The user is existed" in apache_out["01 createUser again"]["err"]
    assert "CODE: 16  DESC: The actions is empty." in apache_out["08 createAcl with no action"]["err"]
    assert rows(apache_out["03 getUser of mq admin's"]["out"]) == [["tk_by_mq", "by-XYZZY-mq", "Normal", "enable"]]
    assert rows(apache_out["12 getAcl of mq admin's"]["out"]) == [
        ["User:tk_by_mq", "Custom", "Group:tk_by_mq", "[Sub]", "null", "Allow"]]

    written = on_both(worlds, lambda world: read_back(world, "tk_mqa"))
    assert_same(written)
    assert written["apache"]["user tk_mqa"]["out"]["brokers"][0]["users"] == [
        {"username": "tk_mqa", "password": "****", "userType": "Normal", "userStatus": "disable"}]
    entries = written["apache"]["rules tk_mqa"]["out"]["brokers"][0]["acls"][0]["policies"][0]["entries"]
    assert [(e["resource"], e["actions"], e["decision"]) for e in entries] == [
        ("Topic:tk_mqa_t", ["Sub"], "Deny"), ("Group:tk_mqa_g", ["Pub", "Sub"], "Allow")]

    deleting = [("deleteUser", ("deleteUser", "-u", "tk_mqa")), ("deleteUser of mq admin's",
                ("deleteUser", "-u", "tk_by_mq")), ("listUser after", ("listUser", "-f", "tk_"))]
    out = in_parallel(worlds, lambda world: run_steps(mqadmin5[world.side], world, deleting))
    assert_same(out)
    gone = on_both(worlds, lambda world: read_back(world, "tk_mqa", "tk_by_mq"))
    assert_same(gone)
    assert gone["apache"]["user tk_mqa"]["out"]["brokers"][0]["users"] == []
    assert "The subject is not exist." in gone["apache"]["rules tk_by_mq"]["err"]


def test_mqadmin5_copies_users_and_rules_from_apache_to_mq(worlds: dict[str, World],
                                                           mqadmin5: dict[str, MqadminBatch]) -> None:
    apache_world, mq_world = worlds["apache"], worlds["mq"]
    batch = mqadmin5["apache"]
    source = ("-n", apache_world.namesrv)
    for args in (("createUser", "-b", apache_world.broker, "-u", "tk_copied", "-p", "copied-XYZZY-pass", *source),
                 ("createAcl", "-b", apache_world.broker, "-s", "User:tk_copied", "-r", "Topic:tk_copied,Group:tk_c",
                  "-a", "Pub,Sub", "-d", "Allow", "-i", "127.0.0.1", *source),
                 ("copyUser", "-f", apache_world.broker, "-t", mq_world.broker, "-u", "tk_copied", *source),
                 ("copyAcl", "-f", apache_world.broker, "-t", mq_world.broker, "-s", "User:tk_copied", *source)):
        done = batch.run(*args)
        assert "success" in done.out and not done.err, (args, done)
    # mqadmin prints the password: the copy on mq's broker has Apache's
    users = {side: printed(world, batch.run("getUser", "-b", world.broker, "-u", "tk_copied", "-n", world.namesrv))
             for side, world in worlds.items()}
    assert_same(users)
    assert "copied-XYZZY-pass" in users["apache"]["out"]
    copied = on_both(worlds, lambda world: read_back(world, "tk_copied"))
    assert_same(copied)
    for world in worlds.values():
        assert admin(world, "user", "delete", "tk_copied").returncode == 0, world.side


# ---------------------------------------------------------------------------------------------- Java client

#: The Java client's cases: (user, password or None for unsigned, topic).
JAVA_CASES: dict[str, tuple[str | None, str | None, str]] = {
    "an Allow rule": (PUBLISHER.access_key, PUBLISHER.secret_key, OK_TOPIC),
    "no rule for the topic": (PUBLISHER.access_key, PUBLISHER.secret_key, NO_RULE_TOPIC),
    "a Deny over a broad Allow": (PUBLISHER.access_key, PUBLISHER.secret_key, DENIED_TOPIC),
    "an Allow for other source IPs": (PUBLISHER.access_key, PUBLISHER.secret_key, IP_TOPIC),
    "a wrong password": (PUBLISHER.access_key, "not-the-password", OK_TOPIC),
    "an unknown user": ("acl2ghost", "whatever", OK_TOPIC),
    "a disabled user": (DISABLED.access_key, DISABLED.secret_key, OK_TOPIC),
    "unsigned": (None, None, OK_TOPIC),
}


def send_outcome(world: World, run: JavaRun) -> tuple[Any, ...]:
    """("sent", status), or ("refused", response code, remark) from the client's exception."""
    if sent := run.of("sent"):
        return ("sent", sent[0]["status"])
    failed = run.of("send_failed")
    assert failed, run.describe()
    error = world.norm(failed[0]["error"])
    refused = REFUSAL.search(error)
    return ("refused", int(refused.group(1)), refused.group(2)) if refused else ("failed", error)


def stored(world: World) -> dict[str, int]:
    """Messages held per topic of the Java cases: what a refused send must not have added to."""
    with SyncMQAdmin(world.namesrv, security=SIGNED) as mqadmin:
        return {topic: sum(hi - lo for lo, hi in mqadmin.queue_offsets.queue_bounds(topic).values())
                for topic in TOPICS}


def test_a_signed_java_client_is_let_in_and_refused_as_on_apache(worlds: dict[str, World]) -> None:
    for world in worlds.values():
        for user in (PUBLISHER, DISABLED):
            made = admin(world, "user", "create", user.access_key, stdin=user.secret_key + "\n")
            assert made.returncode == 0, (world.side, made.stderr)
        for args in ((PUBLISHER.access_key, "-r", f"Topic:{OK_TOPIC},Topic:Acl2D*", "-a", "Pub", "-d", "Allow"),
                     (PUBLISHER.access_key, "-r", f"Topic:{DENIED_TOPIC}", "-a", "Pub", "-d", "Deny"),
                     (PUBLISHER.access_key, "-r", f"Topic:{IP_TOPIC}", "-a", "Pub", "-d", "Allow", "-i", "10.0.0.0/8"),
                     (DISABLED.access_key, "-r", f"Topic:{OK_TOPIC}", "-a", "Pub", "-d", "Allow")):
            made = admin(world, "acl2", "create", *args)
            assert made.returncode == 0, (world.side, made.stderr)
        disabled = admin(world, "user", "update", DISABLED.access_key, "--status", "disable")
        assert disabled.returncode == 0, (world.side, disabled.stderr)

    def attempt(world: World, case: str) -> tuple[Any, ...]:
        user, password, topic = JAVA_CASES[case]
        signed = ("--ak", user, "--sk", password) if user and password else ()
        run = run_java("produce", world.namesrv, "--topic", topic, *signed, "--group", "PG_ACL2", "--retries", "0",
                       client="harness-5", ok=(0, 2))
        return send_outcome(world, run)

    def send(world: World, case: str) -> tuple[Any, ...]:
        """No retry of a refusal (it is final); long send and client API timeouts, as four JVMs share two cores.
        A case that got no answer at all runs once more: CI at 373f07f and at 6d51e77 saw the route lookup time out
        twice at the client's default 3 s API timeout (RemotingTimeoutException, 1520 ms left after connecting)
        under that load, which says nothing about ACL."""
        outcome = attempt(world, case)
        if outcome[0] == "failed" and "RemotingTimeoutException" in outcome[1]:
            outcome = attempt(world, case)
        return outcome

    # one short JVM per case and side, Apache's submitted first, a few at once (most of a run is JVM start)
    with ThreadPoolExecutor(4) as pool:
        futures = {(side, case): pool.submit(send, worlds[side], case) for side in SIDES for case in JAVA_CASES}
        out = {side: {case: futures[side, case].result() for case in JAVA_CASES} for side in SIDES}
    print("\n| case | Apache 5.5.0 | mq |\n|---|---|---|\n"
          + "\n".join(f"| {case} | {out['apache'][case]} | {out['mq'][case]} |" for case in JAVA_CASES))

    no_access = "User:acl2pub has no permission to access Topic:{} from 127.0.0.1, {}"
    expected = {"an Allow rule": ("sent", "SEND_OK"),
                "no rule for the topic": ("refused", 16, no_access.format(NO_RULE_TOPIC, "no matched policies.")),
                "a Deny over a broad Allow": ("refused", 16, no_access.format(DENIED_TOPIC, "the decision is deny.")),
                "an Allow for other source IPs": ("refused", 16, no_access.format(IP_TOPIC, "no matched policies.")),
                "a wrong password": ("refused", 16, "check signature failed."),
                "an unknown user": ("refused", 16, "User:acl2ghost is not found."),
                "a disabled user": ("refused", 16, "User:acl2off is disabled."),
                "unsigned": ("refused", 16, "username cannot be null.")}
    assert out["apache"] == expected, out["apache"]  # the oracle is what the scenarios assume it is
    assert_same(out)

    counts = {}
    for side, world in worlds.items():  # a refused send stored nothing (Apache dispatches just after SEND_OK)
        want = {topic: sum(1 for case, (_, _, t) in JAVA_CASES.items() if t == topic and out[side][case][0] == "sent")
                for topic in TOPICS}
        counts[side] = wait_for(lambda w=world, want=want: (now := stored(w)) == want and now, 10,
                                f"{side}'s topics to hold {want}")
    assert_same(counts)
