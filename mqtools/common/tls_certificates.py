"""A server's TLS certificate, key and trusted CA, loaded again when their files change (RocketMQ's
TlsCertificateManager, NettyRemotingServer.loadSslContext): a certificate renewed before it expires reaches new
connections without a restart, and the connections already open keep the one they agreed on.

One manager serves every TLS port of a process (a broker's remoting, VIP and HA ports; a proxy's gRPC and
remoting ports): each new connection takes `context` as it is then.

Differences from Apache, on purpose: Apache's broker and name server load again only once both the certificate
and the key have changed (or the trusted CA has), so a certificate renewed for the same key is served only after
a restart. Here a change of any of the three loads them again; a set that does not load (a certificate whose new
key is not copied yet: "key values mismatch") is logged once and the previous one stays in use until the next
change, so a pair copied one file after the other is taken when the second arrives.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import ssl
from pathlib import Path

from cryptography import x509

from mqtools.common.configkeys import ConfigError
from mqtools.common.file_watch import FileWatch
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.periodic import every_in_thread
from mqtools.common.tls import TlsMode, TlsServerSettings

log = logging.getLogger("mq.tls")
_failures = LimitedLog(log)

#: How often the files are looked at (Apache's FileWatchService polls every 500 ms).
WATCH_INTERVAL_S = 0.5


def certificate_not_after(pem: bytes) -> float | None:
    """When the first certificate of a PEM file expires (epoch seconds), None when it cannot be read."""
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError:
        return None
    return cert.not_valid_after_utc.timestamp()


class TlsCertificateManager:
    """The SSLContext new connections get, and the poll that builds it again from changed files."""

    def __init__(self, settings: TlsServerSettings, *, interval_s: float = WATCH_INTERVAL_S) -> None:
        """ConfigError (naming the file) when the files do not load: the server does not start."""
        self.settings = settings
        self.interval_s = interval_s
        self._watch = FileWatch(Path(p).expanduser() for p in (settings.cert_path, settings.key_path,
                                                                settings.trust_cert_path) if p)
        self.context: ssl.SSLContext | None = None
        #: The served (key, certificate) as read, one value so that a reader in another thread (gRPC's) never
        #: sees a new certificate with an old key.
        self.pem_pair = (b"", b"")
        #: When the served certificate expires (epoch seconds), None when disabled or unreadable.
        self.not_after: float | None = None
        #: How many times the files were loaded again; a gRPC server asks it to know when to take a new pair.
        self.generation = 0
        self._task: asyncio.Task[None] | None = None
        self._load()

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    @property
    def mode(self) -> TlsMode:
        return self.settings.mode

    def _load(self) -> None:
        context = self.settings.context()
        if context is None:
            return
        try:
            cert = Path(self.settings.cert_path or "").expanduser().read_bytes()
            key = Path(self.settings.key_path or "").expanduser().read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read certificate {self.settings.cert_path} / key {self.settings.key_path}: "
                              f"{exc}") from None
        self.context, self.pem_pair = context, (key, cert)
        self.not_after = certificate_not_after(cert)

    def reload_if_changed(self) -> bool:
        """Load the files again when one changed (and has settled); True when new connections now get them."""
        changed = self._watch.poll()
        if not changed or not self.enabled:
            return False
        names = ", ".join(str(p) for p in changed)
        try:
            self._load()
        except ConfigError as exc:
            log.warning("TLS: %s changed but did not load; new connections still get the previous certificate: %s",
                        names, exc)
            return False
        finally:
            self._watch.loaded()
        self.generation += 1
        log.info("TLS: %s changed; new connections get the certificate valid until %s", names, _when(self.not_after))
        return True

    async def start(self) -> None:
        """Poll the files every `interval_s`, off the event loop, until `shutdown()`."""
        if self.enabled and self._task is None:
            if log.level == logging.NOTSET:
                log.setLevel(logging.INFO)  # a certificate taken (or not) belongs in the server's log
            self._task = asyncio.create_task(every_in_thread(self.interval_s, self.reload_if_changed,
                                                             "TLS certificate watch", _failures),
                                             name="tls-certificates")

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None


def _when(epoch_s: float | None) -> str:
    if epoch_s is None:
        return "an unknown date"
    return datetime.datetime.fromtimestamp(epoch_s, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
