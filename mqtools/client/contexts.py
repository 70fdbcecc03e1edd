"""Named contexts: which cluster a tool talks to, kept in the user's config dir (like kubeconfig).

`mq admin`, `mq top` and `mq spark-load` resolve their name servers the same way: `-n` on the command
line, else the `NAMESRV_ADDR` environment variable (as mqadmin does), else the current context.
A context may also name a local cluster's state dir, so tools can show its processes, and the TLS
options its cluster needs (`--tls-ca` ...), so tools reach a TLS cluster without flags.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from mqtools.client import credentials
from mqtools.client.errors import MQClientError
from mqtools.client.tls import options_from_json, options_to_json
from mqtools.common.addresses import parse_addr, parse_namesrv_list
from mqtools.common.atomic_file import write_atomic
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.security import ClientSecurity, TlsClientOptions

CONFIG_ENV = "MQ_CONFIG_DIR"
NAMESRV_ENV = "NAMESRV_ADDR"
CONTEXTS_FILE = "contexts.json"


class ContextError(MQClientError):
    """No such context, a bad context name or an unreadable contexts file."""

    exit_code = EXIT_USAGE


class ClusterContextNotSaved(MQClientError):
    """A local cluster started and its context could not be written (the cluster runs on)."""


class NoNamesrvError(MQClientError):
    """Neither -n, NAMESRV_ADDR nor a current context says where the name servers are."""

    exit_code = EXIT_USAGE


def config_dir() -> Path:
    """$MQ_CONFIG_DIR, else the platform's user config dir for mq (XDG_CONFIG_HOME on Linux)."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit)
    try:
        import platformdirs
    except ImportError:
        return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "mq"
    return Path(platformdirs.user_config_dir("mq"))


@dataclass(frozen=True, slots=True)
class Context:
    name: str
    namesrv: str
    """Name servers as mqadmin's -n takes them: "h1:9876;h2:9876"."""
    state_dir: str | None = None
    """A local cluster's state dir (mq cluster up --dir), when the context is one."""
    tls: TlsClientOptions | None = None
    """TLS for this cluster (CA file, client certificate), when it needs it."""
    credentials: str | None = None
    """Path of this cluster's ACL credentials file (mqtools.client.credentials); the secret is never here."""
    proxies: tuple[str, ...] = ()
    """RocketMQ 5 proxies' remoting addresses (host:8080): where `mq admin proxy`, `mq top`, `mq exporter` and
    `diagnose group` ask about gRPC clients when no --proxy is given."""


@dataclass(slots=True)
class ContextStore:
    """The contexts file: every context and which one is current."""

    path: Path
    contexts: dict[str, Context]
    current: str | None

    @classmethod
    def load(cls, directory: Path | None = None) -> ContextStore:
        path = (directory or config_dir()) / CONTEXTS_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path, {}, None)
        except (OSError, ValueError) as exc:
            raise ContextError(f"cannot read {path}: {exc}") from None
        contexts = {c["name"]: Context(c["name"], c["namesrv"], c.get("stateDir"),
                                   options_from_json(c.get("tls")), c.get("credentials"), tuple(c.get("proxies") or ()))
                    for c in raw.get("contexts", [])}
        current = raw.get("current")
        return cls(path, contexts, current if current in contexts else None)

    def save(self) -> None:
        body = {"current": self.current,
                "contexts": [{"name": c.name, "namesrv": c.namesrv, "stateDir": c.state_dir,
                                 "tls": options_to_json(c.tls) if c.tls else None, "credentials": c.credentials,
                              "proxies": list(c.proxies)}
                             for c in sorted(self.contexts.values(), key=lambda c: c.name)]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(body, indent=2).encode("utf-8"))

    def add(self, name: str, namesrv: str, state_dir: str | None = None,
            tls: TlsClientOptions | None = None, credentials: str | None = None,
            proxies: tuple[str, ...] = ()) -> Context:
        if not name or any(ch.isspace() for ch in name):
            raise ContextError(f"a context name has no spaces and is not empty: {name!r}")
        if not parse_namesrv_list(namesrv):
            raise ContextError(f"no name server address in {namesrv!r} (want host:port;host:port)")
        for proxy in proxies:
            try:
                parse_addr(proxy)
            except ValueError:
                raise ContextError(f"not a proxy's host:port: {proxy!r}") from None
        context = Context(name, namesrv, state_dir, tls, credentials, tuple(proxies))
        self.contexts[name] = context
        if self.current is None:
            self.current = name
        return context

    def get(self, name: str) -> Context:
        try:
            return self.contexts[name]
        except KeyError:
            known = ", ".join(sorted(self.contexts)) or "none"
            raise ContextError(f"no context named {name!r} (known: {known})") from None

    def use(self, name: str) -> Context:
        context = self.get(name)
        self.current = name
        return context

    def remove(self, name: str) -> None:
        self.get(name)
        del self.contexts[name]
        if self.current == name:
            self.current = None

    def current_context(self) -> Context | None:
        return self.contexts.get(self.current) if self.current else None


@dataclass(frozen=True, slots=True)
class Target:
    """Where a tool connects, and where that came from (shown by `mq context show`)."""

    namesrv: str
    source: str
    context: Context | None = None
    security: ClientSecurity | None = None
    """Credentials and TLS settings for this target, when the cluster is secured."""


def client_security(context: Context | None, tls: TlsClientOptions | None = None) -> ClientSecurity | None:
    """The one place a tool's ClientSecurity is built: TLS from the flags, else from the context;
    ACL credentials from the environment, else the context's credentials file."""
    chosen = tls or (context.tls if context is not None else None)
    try:
        creds = credentials.resolve(context.credentials if context is not None else None)
    except credentials.CredentialsError as exc:
        raise ContextError(str(exc)) from None
    return ClientSecurity(creds, chosen) if chosen is not None or creds is not None else None


def resolve(namesrv: str | None = None, context: str | None = None, tls: TlsClientOptions | None = None) -> Target:
    """-n, else --context NAME, else NAMESRV_ADDR, else the current context; NoNamesrvError if none.

    `tls`: TLS options from the command line, which win over the context's."""
    if namesrv:
        return Target(namesrv, "-n", security=client_security(None, tls))
    if context:
        chosen = ContextStore.load().get(context)
        return Target(chosen.namesrv, f"context {chosen.name}", chosen, client_security(chosen, tls))
    env = os.environ.get(NAMESRV_ENV)
    if env:
        return Target(env, NAMESRV_ENV, security=client_security(None, tls))
    current = ContextStore.load().current_context()
    if current is not None:
        return Target(current.namesrv, f"context {current.name}", current, client_security(current, tls))
    raise NoNamesrvError(
        "no name server: give -n host:9876, set NAMESRV_ADDR, or add a context (mq context add NAME -n host:9876)")


def record_cluster(name: str, namesrv: str, state_dir: str, tls: TlsClientOptions | None,
                   proxies: tuple[str, ...]) -> None:
    """`mq cluster up --context NAME`: the cluster just started added to the contexts file; ClusterContextNotSaved
    (exit 1: the cluster is up) saying why not."""
    try:
        store = ContextStore.load()
        store.add(name, namesrv, state_dir, tls, proxies=proxies)
        store.save()
    except (ContextError, OSError) as exc:
        raise ClusterContextNotSaved(f"the cluster is up, but its context was not saved: {exc}") from None
