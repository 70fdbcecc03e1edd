"""How faults reach the cluster, and whether they took effect.

`LocalActions`: real signals to the real processes of a local cluster (pids from its state dir,
mqtools.cluster), graceful stops and starts through the launcher, partitions of processes that run in
network namespaces (mq cluster up --netns). `CommandActions`: the operator's --fault-cmd / --heal-cmd
(ssh, systemctl) for clusters elsewhere, run through the shell with the node in MQ_DRILL_NODE /
MQ_DRILL_ADDR / MQ_DRILL_ACTION.

A fault is confirmed, not assumed: a command that exits non-zero did not apply it (FaultNotApplied), and a kill or
pause must show within OBSERVE_TIMEOUT (a local process gone or stopped; a node elsewhere no longer answering), or the
drill aborts with "fault not observed" and FAILs instead of judging a cluster nothing happened to.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import psutil

from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.cluster import launcher, netns
from mqtools.cluster import supervisor as sv
from mqtools.cluster.health import wait_healthy
from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.drills.scenarios import Node, ScenarioError
from mqtools.remoting.codes import RequestCode

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

ACTIONS = {signal.SIGKILL: "kill", signal.SIGSTOP: "pause", signal.SIGTERM: "stop"}
#: Seconds a fault has to show (the process gone or stopped, the node silent) before it counts as not observed.
OBSERVE_TIMEOUT = 10.0
OBSERVE_POLL = 0.1
#: A probe's request timeout: a SIGSTOPped node's port still accepts connections, only a timeout says it is hung.
PROBE_TIMEOUT = 1.0
TAIL_CHARS = 200

Probe = Callable[[Node], Awaitable[bool]]
"""Whether a node answers a request now."""


class FaultNotApplied(ToolkitError):
    """The operator's command failed, or the fault never showed: the drill aborts (its report FAILs saying why)."""

    exit_code = EXIT_REFUSED


class Actions(Protocol):
    async def fault(self, node: Node, sig: int) -> str: ...
    async def observe(self, node: Node, sig: int) -> str | None:
        """None once the fault shows, else (after OBSERVE_TIMEOUT) why it is not seen to have taken effect."""
    async def partition(self, node: Node) -> str: ...
    async def throttle(self, node: Node) -> str: ...
    async def heal(self, node: Node, how: str) -> str: ...
    async def stop(self, node: Node) -> str: ...
    async def restore(self) -> list[str]: ...
    def left_broken(self) -> list[str]:
        """After restore: what the drill leaves broken, one phrase each (`broker-a left down`)."""


class LocalActions:
    """Signals and restarts for the processes of a local cluster's state dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.touched: set[str] = set()
        self.partitioned: set[int] = set()
        self.throttled: set[int] = set()
        #: What the drill SIGSTOPped (name -> pid): only these are resumed, not a process paused before it began.
        self.paused: dict[str, int] = {}
        state = sv.load_state(root)
        #: The processes that ran when the drill began: one of them not running at its end was left down.
        self.was_up = {p.name for p in state.procs if sv.alive(p)} if state else set()

    def _proc(self, node: Node) -> sv.ProcInfo:
        state = sv.load_state(self.root)
        proc = state.find(node.name) if state else None
        if proc is None:
            raise ScenarioError(f"{node.name} is not a process of the cluster in {self.root}")
        return proc

    async def fault(self, node: Node, sig: int) -> str:
        proc = self._proc(node)
        ps = sv.alive(proc)
        if ps is None:
            raise ScenarioError(f"{node.name} is not running (pid {proc.pid})")
        self.touched.add(node.name)
        if sig == signal.SIGSTOP:
            self.paused[node.name] = proc.pid
        ps.send_signal(sig)
        return f"{signal.Signals(sig).name} {node.name} (pid {proc.pid}, {node.addr})"

    async def observe(self, node: Node, sig: int) -> str | None:
        """The process gone after SIGKILL or SIGTERM, stopped after SIGSTOP."""
        proc = self._proc(node)
        wanted = sv.STOPPED if sig == signal.SIGSTOP else "exited"
        deadline = time.monotonic() + OBSERVE_TIMEOUT
        while (now := sv.run_state(proc)) != wanted:
            if time.monotonic() >= deadline:
                return f"{node.name} (pid {proc.pid}) still {now} {OBSERVE_TIMEOUT:g}s after {signal.Signals(sig).name}"
            await asyncio.sleep(OBSERVE_POLL / 5)
        return None

    def _slot(self, node: Node) -> tuple[netns.Layout, int]:
        state = sv.load_state(self.root)
        proc = self._proc(node)
        if state is None or state.netns_tag is None or not proc.netns:
            raise ScenarioError("a partition needs a cluster whose processes run in network namespaces "
                                "(mq cluster up --netns, as root)")
        return netns.Layout(state.netns_tag), state.procs.index(proc)

    async def partition(self, node: Node) -> str:
        layout, k = self._slot(node)
        self.partitioned.add(k)
        await asyncio.to_thread(netns.partition, layout, k)
        return f"cut {node.name} ({node.addr}) off from every other process; clients still reach it"

    async def throttle(self, node: Node) -> str:
        layout, k = self._slot(node)
        self.throttled.add(k)
        await asyncio.to_thread(netns.throttle, layout, k)
        return (f"{node.name}'s link ({node.addr}) slowed to {netns.SLOW_LINK_RATE} both ways, packets queued "
                f"up to {netns.SLOW_LINK_QUEUE} then dropped")

    async def heal(self, node: Node, how: str) -> str:
        if how == "reconnect":
            layout, k = self._slot(node)
            await asyncio.to_thread(netns.heal, layout, k)
            self.partitioned.discard(k)
            return f"{node.name} ({node.addr}) reconnected"
        if how == "full-speed":
            layout, k = self._slot(node)
            await asyncio.to_thread(netns.unthrottle, layout, k)
            self.throttled.discard(k)
            return f"{node.name}'s link ({node.addr}) back to full speed"
        if how == "cont":
            proc = self._proc(node)
            ps = sv.alive(proc)
            if ps is not None:
                ps.send_signal(signal.SIGCONT)
            self.paused.pop(node.name, None)
            return f"SIGCONT {node.name} (pid {proc.pid})"
        proc = await asyncio.to_thread(launcher.start_one, self.root, node.name, 60.0)
        return f"started {node.name} (pid {proc.pid}, {node.addr})"

    async def stop(self, node: Node) -> str:
        self.touched.add(node.name)
        how = await asyncio.to_thread(launcher.stop_one, self.root, node.name, 15.0)
        return f"SIGTERM {node.name}: {how}"

    def resume_paused(self) -> list[str]:
        """SIGCONT what the drill paused and is still stopped: a paused broker must never outlive the drill paused;
        one paused before the drill began is not the drill's to resume."""
        state = sv.load_state(self.root)
        done = []
        for name, pid in list(self.paused.items()):
            proc = state.find(name) if state else None
            ps = sv.alive(proc) if proc is not None and proc.pid == pid else None
            try:
                if ps is not None and ps.status() == psutil.STATUS_STOPPED:
                    ps.send_signal(signal.SIGCONT)
                    done.append(f"SIGCONT {name}")
            except psutil.Error:
                continue
            self.paused.pop(name, None)
        return done

    async def restore(self) -> list[str]:
        """Leave the cluster as found: reconnect partitioned processes, resume paused ones, start killed ones,
        wait until healthy."""
        done = self.resume_paused()
        state = sv.load_state(self.root)
        if state is not None and state.netns_tag is not None:
            for k in sorted(self.partitioned):
                await asyncio.to_thread(netns.heal, netns.Layout(state.netns_tag), k)
                self.partitioned.discard(k)
                done.append(f"reconnected {state.procs[k].name}")
            for k in sorted(self.throttled):
                await asyncio.to_thread(netns.unthrottle, netns.Layout(state.netns_tag), k)
                self.throttled.discard(k)
                done.append(f"{state.procs[k].name}'s link back to full speed")
        for proc in state.procs if state else []:
            if proc.name in self.touched and sv.alive(proc) is None:
                started = await asyncio.to_thread(launcher.start_one, self.root, proc.name, 60.0)
                done.append(f"started {proc.name} (pid {started.pid})")
        state = sv.load_state(self.root)
        if done and state is not None:
            await wait_healthy(state, time.monotonic() + 60.0)
        return done

    def left_broken(self) -> list[str]:
        try:
            state = sv.load_state(self.root)
        except sv.ClusterStateError as exc:
            return [f"the cluster's state cannot be read ({exc})"]
        broken = []
        for k, proc in enumerate(state.procs if state else []):
            run = sv.run_state(proc)
            if proc.name in self.was_up and run == "exited":
                broken.append(f"{proc.name} left down")
            elif proc.name in self.paused and run == sv.STOPPED:
                broken.append(f"{proc.name} left paused (pid {proc.pid})")
            if k in self.partitioned:
                broken.append(f"{proc.name} left cut off")
            if k in self.throttled:
                broken.append(f"{proc.name} left on a slow link")
        return broken


class CommandActions:
    """The operator's own commands at the fault and heal moments (clusters that are not local). `probe` (whether a
    node answers) confirms a kill or pause took effect; without one, only the command's exit status does."""

    def __init__(self, fault_cmd: str, heal_cmd: str | None, probe: Probe | None = None) -> None:
        self.fault_cmd = fault_cmd
        self.heal_cmd = heal_cmd
        self.probe = probe
        self.healed = False
        self.heal_failed: str | None = None
        self._last: Node | None = None

    async def _run(self, cmd: str, node: Node, action: str, step: str = "fault") -> str:
        """Run `cmd` for `node`; FaultNotApplied (exit status and the output's last line) when it exits non-zero."""
        proc = await asyncio.create_subprocess_shell(
            cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "MQ_DRILL_NODE": node.name, "MQ_DRILL_ADDR": node.addr, "MQ_DRILL_ACTION": action})
        out, _ = await proc.communicate()
        tail = out.decode(errors="replace").strip().splitlines()[-1:] if out else []
        said = f": {tail[0][:TAIL_CHARS]}" if tail else ""
        if proc.returncode != 0:
            raise FaultNotApplied(f"the {step} could not be applied: exit {proc.returncode}{said} (`{cmd}` for "
                                  f"{node.name}, {action})")
        return f"`{cmd}` for {node.name} ({action}): ok{said}"

    async def fault(self, node: Node, sig: int) -> str:
        self._last = node
        return await self._run(self.fault_cmd, node, ACTIONS.get(sig, "kill"))

    async def observe(self, node: Node, sig: int) -> str | None:
        """The node no longer answering a request (a proxy's gRPC port is not asked: nothing cheap to ask there)."""
        if self.probe is None or node.role == "PROXY":
            return None
        deadline = time.monotonic() + OBSERVE_TIMEOUT
        while await self.probe(node):
            if time.monotonic() >= deadline:
                return (f"{_who(node)} still answered {OBSERVE_TIMEOUT:g}s after `{self.fault_cmd}` "
                        f"({ACTIONS.get(sig, 'kill')})")
            await asyncio.sleep(OBSERVE_POLL)
        return None

    async def partition(self, node: Node) -> str:
        self._last = node
        return await self._run(self.fault_cmd, node, "partition")

    async def throttle(self, node: Node) -> str:
        self._last = node
        return await self._run(self.fault_cmd, node, "throttle")

    async def heal(self, node: Node, how: str) -> str:
        if self.heal_cmd is None:
            return f"no --heal-cmd: {node.name} left as the fault left it"
        try:
            done = await self._run(self.heal_cmd, node, how, "heal")
        except FaultNotApplied as exc:
            self.heal_failed = str(exc)
            raise
        self.healed, self.heal_failed = True, None
        return done

    async def stop(self, node: Node) -> str:
        self._last = node
        return await self._run(self.fault_cmd, node, "stop")

    async def restore(self) -> list[str]:
        """The heal the scenario did not get to (or that failed), once more."""
        node = self._last
        if node is None or self.healed or self.heal_cmd is None:
            return []
        return [await self.heal(node, "start")]

    def left_broken(self) -> list[str]:
        node = self._last
        if node is None or self.heal_failed is None:
            return []
        return [f"{_who(node)} may be left as the fault left it: {self.heal_failed}"]


def _who(node: Node) -> str:
    """A node by name and address (a cluster given by -n names its nodes by address: once, then)."""
    return node.addr if node.name == node.addr else f"{node.name} ({node.addr})"


def remoting_probe(admin: MQAdmin) -> Probe:
    """Whether a node answers one request (a refusal is an answer) within PROBE_TIMEOUT. `admin` must be the probe's
    own: a timeout makes an MQAdmin skip that broker for a while, which the drill's reads must not inherit."""

    async def answers(node: Node) -> bool:
        code = RequestCode.GET_BROKER_CLUSTER_INFO if node.role in ("NAMESRV", "CONTROLLER") \
            else RequestCode.GET_BROKER_RUNTIME_INFO
        try:
            await admin.call(node.addr, code, timeout=PROBE_TIMEOUT)
        except MQBrokerError:
            return True
        except MQClientError:
            return False
        return True

    return answers
