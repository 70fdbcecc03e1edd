"""Fetch Apache RocketMQ for the reference suite, by package name with Maven, into a cache outside
the repository; and build our Java harness on Apache's client.

`python tests/reference/fetch.py` (run by `make test` through `make reference`) fills, under
`$MQ_REFERENCE_CACHE` (default `~/.cache/mq-reference`), one directory per artifact set:

    apache-4.9.7/lib/*.jar       name server, broker, tools (4.9.8's servers are not served here)
    apache-5.5.0/lib/*.jar       the same plus the controller and the proxy
    java-harness/lib/*.jar       rocketmq-client, -acl and -tools 4.9.8 (Apache's mqadmin 4.9.8 too)
    java-harness/mq-java-harness-1.jar
    java-harness-5.5.0/...       the same harness on rocketmq-client and -tools 5.5.0
    grpc-java-harness-5.0.8/...  the gRPC harness (tests/reference/java-grpc) on rocketmq-client-java 5.0.8

Each set keeps a stamp: the hash of what produced it (the pom, and the harness's sources). A set whose
stamp matches is not fetched again, so a second run downloads nothing and works offline. A fetch that
fails writes `.error` beside the stamp instead; the reference tests then fail with that one line
(`require`), the rest of the suite runs. Exit status: 0 when every set is ready.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("MQ_REFERENCE_CACHE", Path.home() / ".cache" / "mq-reference"))

#: Apache RocketMQ versions in the suite. 4.9.8 is the newest 4.x, but only its client and tools are
#: served here; its servers are taken at 4.9.7, the newest 4.x broker served.
V4_SERVER = "4.9.7"
V4_CLIENT = "4.9.8"
V5 = "5.5.0"
#: Apache's gRPC client for Java (rocketmq-client-java), which talks to a proxy; its own version line.
GRPC_JAVA = "5.0.8"

#: What `make reference` runs to fill the cache; the one line a reference test fails with names it.
FETCH_COMMAND = "make reference"


@dataclass(frozen=True)
class ArtifactSet:
    """One directory of jars made by one Maven run."""

    name: str
    pom: Path
    args: tuple[str, ...]
    sources: Path | None = None

    @property
    def home(self) -> Path:
        return CACHE / self.name

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    @property
    def stamp(self) -> Path:
        return self.home / ".stamp"

    @property
    def error(self) -> Path:
        return self.home / ".error"

    def digest(self) -> str:
        h = hashlib.sha256(self.pom.read_bytes())
        h.update(" ".join(self.args).encode())
        if self.sources is not None:
            for path in sorted(self.sources.rglob("*.java")):
                h.update(path.relative_to(self.sources).as_posix().encode())
                h.update(path.read_bytes())
        return h.hexdigest()

    def ready(self) -> bool:
        return self.stamp.is_file() and self.stamp.read_text().strip() == self.digest()

    def classpath(self) -> str:
        jars = sorted(str(p) for p in self.home.glob("*.jar"))
        return os.pathsep.join([*jars, str(self.lib / "*")])


SETS = {
    "apache-4": ArtifactSet(f"apache-{V4_SERVER}", HERE / "maven" / "pom.xml",
                            (f"-Drocketmq.version={V4_SERVER}", "-Pfour")),
    "apache-5": ArtifactSet(f"apache-{V5}", HERE / "maven" / "pom.xml", (f"-Drocketmq.version={V5}", "-Pfive")),
    "harness": ArtifactSet("java-harness", HERE / "java" / "pom.xml",
                           (f"-Drocketmq.client.version={V4_CLIENT}",), sources=HERE / "java" / "src"),
    "harness-5": ArtifactSet(f"java-harness-{V5}", HERE / "java" / "pom.xml",
                             (f"-Drocketmq.client.version={V5}", "-Pfive"), sources=HERE / "java" / "src"),
    "grpc-java": ArtifactSet(f"grpc-java-harness-{GRPC_JAVA}", HERE / "java-grpc" / "pom.xml",
                             (f"-Drocketmq.client.java.version={GRPC_JAVA}",), sources=HERE / "java-grpc" / "src"),
}


def _maven(aset: ArtifactSet) -> subprocess.CompletedProcess[str]:
    goals = ["dependency:copy-dependencies"]
    build = aset.home / "build"
    if aset.sources is not None:
        goals = ["package", *goals, f"-Dharness.build.dir={build}"]
    cmd = ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(aset.pom), *goals, *aset.args,
           f"-DoutputDirectory={aset.lib}", "-DincludeScope=runtime"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)


def fetch(aset: ArtifactSet) -> str | None:
    """Make `aset` ready; None when it is, else the one-line reason it is not."""
    if aset.ready():
        return None
    if shutil.which("mvn") is None:
        reason = "Maven (mvn) is not installed"
    else:
        if aset.lib.exists():
            shutil.rmtree(aset.lib)
        aset.home.mkdir(parents=True, exist_ok=True)
        done = _maven(aset)
        if done.returncode == 0 and aset.sources is not None:
            for jar in (aset.home / "build").glob("*.jar"):
                shutil.copy2(jar, aset.home / jar.name)
        if done.returncode == 0:
            aset.stamp.write_text(aset.digest() + "\n")
            aset.error.unlink(missing_ok=True)
            return None
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if "[ERROR]" in ln] or ["mvn failed"]
        reason = lines[0].replace("[ERROR]", "").strip()[:300]
    aset.home.mkdir(parents=True, exist_ok=True)
    aset.error.write_text(reason + "\n")
    return reason


def require(key: str) -> ArtifactSet:
    """The ready artifact set `key`, or a one-line failure naming what to run (no Java stack trace)."""
    aset = SETS[key]
    if aset.ready():
        return aset
    why = aset.error.read_text().strip() if aset.error.is_file() else "never fetched"
    import pytest

    pytest.fail(f"Apache RocketMQ ({aset.name}) is not in {CACHE}: {why}. Run `{FETCH_COMMAND}` on a machine "
                "that reaches the Maven registry (once; later runs are offline).", pytrace=False)


def main() -> int:
    failed = 0
    for aset in SETS.values():
        reason = fetch(aset)
        if reason is None:
            print(f"reference: {aset.name} ready in {aset.home}")
        else:
            failed += 1
            print(f"reference: {aset.name} NOT ready: {reason}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
