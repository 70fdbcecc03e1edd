"""Start Apache RocketMQ's name servers, brokers and proxies as real JVMs, and run Apache's mqadmin.

Each process runs its own main class (NamesrvStartup, BrokerStartup, ProxyStartup, MQAdminStartup) on the jars
`fetch.py` put in the cache, with a ROCKETMQ_HOME and logback configs this module writes, a small heap
and the JDK 17 module flags RocketMQ's store needs. Ports are picked free on 127.0.0.1 (a broker needs
three: listenPort-2 for its VIP channel, listenPort, listenPort+1 for HA); readiness is a real request,
never a sleep. Every JVM dies with the process that started it (DIE_WITH_PARENT), and `stop_all`
stops what is left at the end of a test session, so no JVM outlives an interrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from fetch import SETS, ArtifactSet, require
from support.grpcstub import MessagingServiceStub
from support.ports import free_port

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.errors import MQClientError
from mqtools.common.security import ClientSecurity

#: Commitlog file size of every reference broker, Apache's and mq's alike: stores handed from one side to
#: the other, and commitlogs compared byte for byte, need the same file layout (str: a properties value).
COMMITLOG_FILE_SIZE = str(64 * 1024 * 1024)

#: Heap per JVM: a 2-master 2-slave Apache cluster and an mq cluster fit on 2 cores and 24 GiB together.
HEAP = "256m"

#: What RocketMQ 4.x/5.x reach into on JDK 17: MappedFile unmaps through sun.nio.ch.DirectBuffer and
#: jdk.internal.ref.Cleaner; without these a broker cannot free a mapped file, even at shutdown.
MODULE_FLAGS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
)

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"

#: 4.x reads $ROCKETMQ_HOME/conf/logback_<role>.xml; 5.x ships its own configs in its jars.
_LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/{role}.log</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5p [%t] %c{{0}} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""

_started: list[ApacheProcess] = []


#: A JVM's exit status once its shutdown hooks have run after SIGTERM (128 + 15).
TERMINATED = 128 + signal.SIGTERM
#: Prefix of every JVM command: the kernel SIGKILLs the JVM when the process that started it dies
#: (util-linux's setpriv sets PR_SET_PDEATHSIG and execs), so an interrupted session leaves none behind.
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL")


def home(aset: ArtifactSet, root: Path) -> Path:
    """A ROCKETMQ_HOME under `root` with the logback configs 4.x reads."""
    path = root / f"rocketmq-home-{aset.name}"
    conf = path / "conf"
    if not conf.is_dir():
        conf.mkdir(parents=True)
        for role in ("namesrv", "broker", "tools"):
            (conf / f"logback_{role}.xml").write_text(_LOGBACK.format(role=role))
    return path


def java_command(aset: ArtifactSet, main: str, workdir: Path, *args: str, heap: str = HEAP) -> list[str]:
    return [*DIE_WITH_PARENT, "java", f"-Xms{heap}", f"-Xmx{heap}", "-XX:MaxDirectMemorySize=256m", "-XX:+UseG1GC",
            "-XX:-UsePerfData", *MODULE_FLAGS, f"-Duser.home={workdir}",
            # Netty's self-signed certificate (Apache's tlsTestModeEnable, on by default) lands in the temp dir
            f"-Djava.io.tmpdir={workdir}", "-Drocketmq.client.logUseSlf4j=false",
            "-cp", aset.classpath(), main, *args]


@dataclass
class ApacheProcess:
    """One Apache RocketMQ JVM: its role, address, files and process."""

    role: str
    aset: ArtifactSet
    workdir: Path
    port: int
    proc: subprocess.Popen
    props: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    #: What its command ran after (`ip netns exec NS`: in a network namespace); a respawn runs there too.
    prefix: tuple[str, ...] = ()
    #: The command and environment it was started with (`relaunch`).
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        """Its stdout/stderr and the tail of its own log, for failure messages."""
        parts = [(self.workdir / "stdout.log").read_text(errors="replace")[-4000:]]
        for log in sorted((self.workdir / "logs").rglob("*.log")):
            parts.append(f"--- {log.name}\n" + log.read_text(errors="replace")[-3000:])
        return "\n".join(parts)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM (Apache's shutdown hook flushes and unlocks the store), SIGKILL when it takes too long; the
        exit status: TERMINATED after a clean stop, -9 after the SIGKILL."""
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        with suppress(ValueError):
            _started.remove(self)
        return self.proc.returncode

    def relaunch(self) -> None:
        """Its command again, in place, after it died at start-up (from the spawner thread: see respawn_broker)."""
        self.proc = _SPAWNER.submit(_popen, self.command, self.env, self.workdir).result()

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait(10)
        with suppress(ValueError):
            _started.remove(self)


def _spawn(role: str, aset: ArtifactSet, root: Path, workdir: Path, port: int, main: str, conf: dict[str, str],
           heap: str = HEAP, *, host: str = "127.0.0.1", prefix: tuple[str, ...] = ()) -> ApacheProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    props_file = workdir / f"{role}.properties"
    props_file.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    return _launch(role, aset, root, workdir, port, main, conf, ("-c", str(props_file)), heap, host=host,
                   prefix=prefix)


def _launch(role: str, aset: ArtifactSet, root: Path, workdir: Path, port: int, main: str, conf: dict[str, str],
            args: tuple[str, ...], heap: str = HEAP, *, host: str = "127.0.0.1",
            prefix: tuple[str, ...] = ()) -> ApacheProcess:
    """Start `main args` in `workdir` (its user.home: its logs go there), after `prefix` (a network
    namespace's `ip netns exec NS`, where it is reached at `host`), and register it for kill_all."""
    env = {**os.environ, "ROCKETMQ_HOME": str(home(aset, root))}
    command = (*prefix, *java_command(aset, main, workdir, *args, heap=heap))
    started = ApacheProcess(role, aset, workdir, port, _popen(command, env, workdir), conf, host, prefix, command, env)
    _started.append(started)
    return started


def _popen(command: tuple[str, ...], env: dict[str, str], workdir: Path) -> subprocess.Popen:
    """A JVM in `workdir`, its stdout and stderr appended to stdout.log there."""
    with open(workdir / "stdout.log", "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=workdir)


#: What a JVM prints when it lists the machine's network interfaces (Apache's NetworkUtil, RemotingUtil, a
#: client's default clientIP) while one is being removed: a partition drill on another xdist worker deletes its
#: veths and bridges in the root namespace. Apache's proxy died of it at start-up in one CI run (5a49667).
INTERFACE_GONE = "getFlags() failed"


def _await(process: ApacheProcess, ready, timeout: float, what: str) -> None:
    """Poll `ready()` (a real request) until it is true; on death or timeout stop it and raise with its logs. A JVM
    that died at start-up because an interface vanished while it listed them (INTERFACE_GONE) is started again,
    once: that is the machine's doing, not Apache's or the test's."""
    deadline = time.monotonic() + timeout
    relaunched = False
    while time.monotonic() < deadline:
        if not process.alive and not relaunched and INTERFACE_GONE in process.output():
            relaunched = True
            process.relaunch()
        if not process.alive:
            break
        with suppress(MQClientError, OSError, TimeoutError):
            if ready():
                return
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"Apache {what} ({process.aset.name}) did not become ready:\n{process.output()}")


def start_namesrv(root: Path, version: str = "apache-4", name: str = "namesrv", timeout: float = 60.0,
                  **props: str) -> ApacheProcess:
    """An Apache name server on a free port, ready when it answers GET_BROKER_CLUSTER_INFO."""
    aset = require(version)
    port = free_port()
    conf = {"listenPort": str(port), **props}
    process = _spawn("namesrv", aset, root, root / name, port, NAMESRV_MAIN, conf)

    def ready() -> bool:
        with SyncMQAdmin(process.addr, timeout=2.0) as admin:
            admin.cluster_info()
        return True

    _await(process, ready, timeout, "name server")
    return process


def start_broker(root: Path, namesrv: str, version: str = "apache-4", *, name: str = "broker-a",
                 broker_id: int = 0, cluster: str = "RefCluster", timeout: float = 90.0,
                 security: ClientSecurity | None = None, wait: bool = True, **props: str) -> ApacheProcess:
    """An Apache broker registered with `namesrv`; ready when the name server lists it at its address and
    it answers GET_BROKER_RUNTIME_INFO (signed with `security` on an ACL broker). `props` are
    broker.properties keys (brokerRole, flushDiskType...). `wait=False`: started, not waited for (`await_broker`)."""
    aset = require(version)
    port = free_port((-2, 0, 1))
    workdir = root / f"{name}-{broker_id}"
    store = workdir / "store"
    conf = {
        "brokerClusterName": cluster, "brokerName": name, "brokerId": str(broker_id), "namesrvAddr": namesrv,
        "listenPort": str(port), "brokerIP1": "127.0.0.1", "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"), "mappedFileSizeCommitLog": COMMITLOG_FILE_SIZE,
        "brokerRole": "ASYNC_MASTER" if broker_id == 0 else "SLAVE", "flushDiskType": "ASYNC_FLUSH",
        "autoCreateTopicEnable": "true", "autoCreateSubscriptionGroup": "true",
        **props,
    }
    process = _spawn("broker", aset, root, workdir, port, BROKER_MAIN, conf)
    if wait:
        await_broker(process, security, timeout)
    return process


def await_broker(process: ApacheProcess, security: ClientSecurity | None = None, timeout: float = 90.0) -> None:
    """Until the name server lists the broker at its address and the broker answers GET_BROKER_RUNTIME_INFO."""
    conf = process.props
    name, broker_id = conf["brokerName"], int(conf["brokerId"])

    def ready() -> bool:
        with SyncMQAdmin(conf["namesrvAddr"].split(";")[0], timeout=2.0, security=security) as admin:
            data = admin.cluster_info().broker_addr_table.get(name)
            if data is None or data.broker_addrs.get(broker_id) != process.addr:
                return False
            admin.brokers.broker_runtime_info(process.addr)
        return True

    _await(process, ready, timeout, f"broker {name}/{broker_id}")


def start_proxy(root: Path, namesrv: str, version: str = "apache-5", *, name: str = "proxy",
                cluster: str = "RefCluster", timeout: float = 90.0, wait: bool = True, **config: object) -> ApacheProcess:
    """Apache's rocketmq-proxy (5.x) in cluster mode in front of the brokers of `cluster` that `namesrv`
    knows; its `addr` is the gRPC port (the remoting one is in `props`). `config`: rmq-proxy.json keys
    (ProxyConfig's field names) over these. Ready when it answers a QueryRoute, which it can only do through
    the name server. Its own logback config writes to <workdir>/logs/rocketmqlogs (user.home). `wait=False`: started,
    not waited for (`await_proxy`)."""
    aset = require(version)
    grpc_port, remoting_port = free_port(), free_port()
    workdir = root / name
    workdir.mkdir(parents=True, exist_ok=True)
    conf = {"rocketMQClusterName": cluster, "namesrvAddr": namesrv, "proxyMode": "cluster",
            "grpcServerPort": grpc_port, "remotingListenPort": remoting_port, **config}
    conf_file = workdir / "rmq-proxy.json"
    conf_file.write_text(json.dumps(conf, indent=1))
    process = _launch("proxy", aset, root, workdir, grpc_port, PROXY_MAIN, {k: str(v) for k, v in conf.items()},
                      ("-pc", str(conf_file), "-pm", "cluster"))
    if wait:
        await_proxy(process, timeout)
    return process


def await_proxy(process: ApacheProcess, timeout: float = 90.0) -> None:
    """Until the proxy answers a QueryRoute (start_proxy with wait=False)."""
    _await(process, lambda: _answers_query_route(process.addr), timeout, "proxy")


def _answers_query_route(addr: str) -> bool:
    """A QueryRoute on the proxy's gRPC port answered with any status (a topic no one has: TOPIC_NOT_FOUND
    comes from the name server, so the proxy is serving and connected)."""
    host, port = addr.rsplit(":", 1)
    request = spb.QueryRouteRequest(topic=pb.Resource(name="ReadinessProbeTopic"), endpoints=pb.Endpoints(
        scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))]))
    with grpc.insecure_channel(addr) as channel:
        try:
            answer = MessagingServiceStub(channel).QueryRoute(
                request, metadata=[("x-mq-client-id", "reference-readiness")], timeout=2)
        except grpc.RpcError:
            return False
    return answer.HasField("status")


def respawn_broker(process: ApacheProcess) -> ApacheProcess:
    """The same broker again after it died (same config, ports and store), as a new process, not waited for
    (a broker in controller mode gets its id from the controller, so when it is back is the caller's to judge).

    PR_SET_PDEATHSIG fires when the *thread* that started a process ends: a JVM started from a helper
    thread (a drill's heal) would die with that thread. So the JVM is started by a spawner thread that
    lives as long as the test process."""
    assert not process.alive, "respawn_broker restarts a broker that is down"
    return _SPAWNER.submit(_spawn, "broker", process.aset, process.workdir.parent, process.workdir, process.port,
                           BROKER_MAIN, process.props, host=process.host, prefix=process.prefix).result()


def restart_broker(process: ApacheProcess, timeout: float = 90.0) -> ApacheProcess:
    """respawn_broker, once the name server lists the broker at the id of its config and it answers."""
    again = respawn_broker(process)
    await_broker(again, None, timeout)
    return again


#: One thread for the life of the process, from which restarted JVMs are started (see respawn_broker).
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jvm-spawner")


def mqadmin(root: Path, *args: str, version: str = "harness", namesrv: str | None = None,
            timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Apache's mqadmin (MQAdminStartup) as a command: 4.9.8's from the harness set, 5.x's from its own."""
    aset = require(version)
    workdir = root / f"mqadmin-{aset.name}"
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ROCKETMQ_HOME": str(home(aset, root))}
    if namesrv is not None:
        env["NAMESRV_ADDR"] = namesrv
    cmd = java_command(aset, MQADMIN_MAIN, workdir, *args, heap="128m")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=workdir, check=False)


def kill_all() -> None:
    """SIGKILL every JVM this process started that still runs (end of a test session: no test reads
    their stores afterwards, and Apache's shutdown hooks take 9-15 s per broker)."""
    for process in _started:
        process.kill()


def version_of(key: str) -> str:
    return SETS[key].name


@dataclass
class ApacheCluster:
    """A name server and its brokers, by name (`broker-a`, and `broker-a-s` for its slave)."""

    namesrv: ApacheProcess
    brokers: dict[str, ApacheProcess]

    @property
    def addr(self) -> str:
        return self.namesrv.addr

    def kill(self) -> None:
        for process in [*self.brokers.values(), self.namesrv]:
            process.kill()


def start_cluster(root: Path, version: str = "apache-4", *, masters: tuple[str, ...] = ("broker-a", "broker-b"),
                  role: str = "SYNC_MASTER", slaves: bool = True, cluster: str = "RefCluster",
                  **props: str) -> ApacheCluster:
    """Apache's 2m-2s layout (as its conf/2m-2s-sync ships): a name server, then the masters together, then
    their slaves together (a slave learns its master's HA address when it registers, so it starts once the
    master is registered)."""
    namesrv = start_namesrv(root, version)
    brokers: dict[str, ApacheProcess] = {}
    try:
        for broker_id in (0, 1) if slaves else (0,):
            stage = []
            for broker in masters:  # each in `brokers` as it starts, so a failure stops what started
                process = start_broker(root, namesrv.addr, version, name=broker, broker_id=broker_id, cluster=cluster,
                                       wait=False, **({"brokerRole": role} if broker_id == 0 else {}), **props)
                brokers[f"{broker}-s" if broker_id else broker] = process
                stage.append(process)
            for process in stage:
                await_broker(process)
    except BaseException:
        ApacheCluster(namesrv, brokers).kill()
        raise
    return ApacheCluster(namesrv, brokers)
