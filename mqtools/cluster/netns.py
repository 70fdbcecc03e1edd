"""Network namespaces for a local cluster (`mq cluster up --netns`), so a drill can cut one process off.

Every server process runs in a namespace of its own, all joined by one bridge in the root namespace: the
bridge holds the subnet's first address (what the drill's clients and `mq admin` come from), process k
has address .(10+k) on its link `mq0` (a veth whose other end is on the bridge) and a default route
through the bridge. Names and the subnet come from the cluster's base port, so two clusters never share
them. A partition moves a process's link to a bridge of its own that only the root namespace (the clients)
shares (`partition`). A slow link (`throttle`) puts a token bucket (tc tbf) on both ends of a process's link:
tc netem, which adds a fixed delay, is missing on kernels like this project's machines', but a full bucket
both delays (its queue) and drops (past the queue). All of it needs root and iproute2's `ip`; `unavailable()` says so in one line where
they are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from mqtools.common.errors import ToolkitError

#: The link inside every namespace (names are per namespace).
LINK = "mq0"
FIRST_HOST = 10
#: A throttled link: its rate, burst and queue (how long a packet may wait before it is dropped).
SLOW_LINK_RATE, SLOW_LINK_BURST, SLOW_LINK_QUEUE = "1mbit", "16kb", "200ms"


class NetnsError(ToolkitError, RuntimeError):
    """An `ip` or `tc` command failed; the message has the command and what it printed."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Names and addresses of one cluster's namespaces (`tag`: its base port)."""

    tag: int

    @property
    def prefix(self) -> str:
        return f"10.{self.tag // 256 % 256}.{self.tag % 256}"

    @property
    def gateway(self) -> str:
        """The bridge's address: where clients in the root namespace come from."""
        return f"{self.prefix}.1"

    @property
    def bridge(self) -> str:
        return f"mq{self.tag}br"

    def host(self, k: int) -> str:
        return f"{self.prefix}.{FIRST_HOST + k}"

    def namespace(self, k: int) -> str:
        return f"mq{self.tag}n{k}"

    def veth(self, k: int) -> str:
        return f"mq{self.tag}v{k}"

    def isolated(self, k: int) -> str:
        """The bridge a partitioned process k is moved to."""
        return f"mq{self.tag}i{k}"

    def exec_prefix(self, namespace: str) -> list[str]:
        return ["ip", "netns", "exec", namespace]


def unavailable() -> str | None:
    """Why namespaces cannot be made here (one line), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns): run as root, or leave --netns out"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's ip, which is not installed"
    return None


def _run(*cmd: str, check: bool = True) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NetnsError(f"{' '.join(cmd)}: {(done.stderr or done.stdout).strip()}")


def _names(kind: str) -> set[str]:
    """The names `ip KIND list` prints (namespaces or links), first word of each entry."""
    cmd = ["ip", "netns", "list"] if kind == "netns" else ["ip", "-o", "link", "show"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    if kind == "netns":
        return {line.split()[0] for line in out.splitlines() if line.strip()}
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if line.count(":") >= 2}


def leftovers(layout: Layout, count: int) -> tuple[list[str], list[int]]:
    """What an earlier cluster on this tag left (its run killed before it could remove them): the names still
    there, and the pids still running inside its namespaces."""
    namespaces = _names("netns") & {layout.namespace(k) for k in range(count)}
    links = _names("link") & {layout.bridge, *(layout.veth(k) for k in range(count)),
                              *(layout.isolated(k) for k in range(count))}
    pids: list[int] = []
    for ns in sorted(namespaces):
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout
        pids += [int(p) for p in out.split() if p.isdigit()]
    return sorted(namespaces | links), pids


def create(layout: Layout, count: int) -> None:
    """The bridge and `count` namespaces with their links; NetnsError (after removing what was made) on failure.

    Names an earlier cluster on this tag left behind with nothing running in them (a drill killed from outside)
    are removed first; while processes still run inside, NetnsError names them, as stopping them is the
    operator's call."""
    names, pids = leftovers(layout, count)
    if pids:
        raise NetnsError(f"{', '.join(names)} still in use by pids {' '.join(map(str, pids))} (an earlier cluster "
                         f"on base port {layout.tag}: mq cluster down --dir DIR, or stop those pids)")
    if names:
        destroy(layout, count)
    try:
        _run("ip", "link", "add", layout.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{layout.gateway}/24", "dev", layout.bridge)
        _run("ip", "link", "set", layout.bridge, "up")
        for k in range(count):
            ns, veth = layout.namespace(k), layout.veth(k)
            _run("ip", "netns", "add", ns)
            _run("ip", "link", "add", veth, "type", "veth", "peer", "name", LINK, "netns", ns)
            _run("ip", "link", "set", veth, "master", layout.bridge)
            _run("ip", "link", "set", veth, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run("ip", "-n", ns, "addr", "add", f"{layout.host(k)}/24", "dev", LINK)
            _run("ip", "-n", ns, "link", "set", LINK, "up")
            _run("ip", "-n", ns, "route", "add", "default", "via", layout.gateway)
    except NetnsError:
        destroy(layout, count)
        raise


def destroy(layout: Layout, count: int) -> None:
    """Remove the namespaces (their links go with them), partitions' bridges and the bridge; what is already
    gone is skipped."""
    for k in range(count):
        heal(layout, k)
        _run("ip", "link", "del", layout.veth(k), check=False)  # both ends, even while a process holds the namespace
        _run("ip", "netns", "del", layout.namespace(k), check=False)
    _run("ip", "link", "del", layout.bridge, check=False)


def partition(layout: Layout, k: int) -> None:
    """Cut process k off from every other process of the cluster; the clients (the root namespace) still
    reach it: its link moves to a bridge of its own, which also holds the clients' address, with a host
    route to it there. Its packets to anyone else find nobody (no tc: kernels without tc's classifiers
    do this too)."""
    isolated = layout.isolated(k)
    _run("ip", "link", "add", isolated, "type", "bridge")
    _run("ip", "addr", "add", f"{layout.gateway}/32", "dev", isolated)
    _run("ip", "link", "set", isolated, "up")
    _run("ip", "link", "set", layout.veth(k), "nomaster")
    _run("ip", "link", "set", layout.veth(k), "master", isolated)
    _run("ip", "route", "replace", f"{layout.host(k)}/32", "dev", isolated, "src", layout.gateway)


def heal(layout: Layout, k: int) -> None:
    """Undo partition(k); what is already undone is skipped."""
    _run("ip", "route", "del", f"{layout.host(k)}/32", check=False)
    _run("ip", "link", "set", layout.veth(k), "master", layout.bridge, check=False)
    _run("ip", "link", "del", layout.isolated(k), check=False)


def _link_ends(layout: Layout, k: int) -> list[tuple[list[str], str]]:
    """tc and the device of each end of process k's link: the bridge's end (towards k) and k's own (from k)."""
    return [(["tc"], layout.veth(k)), ([*layout.exec_prefix(layout.namespace(k)), "tc"], LINK)]


def throttle(layout: Layout, k: int) -> None:
    """Make process k's link slow both ways: SLOW_LINK_RATE, packets queued up to SLOW_LINK_QUEUE, then dropped."""
    for tc, dev in _link_ends(layout, k):
        _run(*tc, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", SLOW_LINK_RATE, "burst", SLOW_LINK_BURST,
             "latency", SLOW_LINK_QUEUE)


def unthrottle(layout: Layout, k: int) -> None:
    """Undo throttle(k); a link already at full speed is skipped."""
    for tc, dev in _link_ends(layout, k):
        _run(*tc, "qdisc", "del", "dev", dev, "root", check=False)
