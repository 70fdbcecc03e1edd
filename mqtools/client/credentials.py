"""ACL credentials for tools: from the environment or a credentials file, never the command line.

Order: `MQ_ACCESS_KEY` + `MQ_SECRET_KEY` in the environment, else the credentials file the context
names (`mq context add ... --credentials FILE`, or the file `mq context credentials NAME` writes
into the config dir). The file is YAML in the shape of RocketMQ's conf/tools.yml (`accessKey`,
`secretKey`, optional `securityToken`) and must not be readable by group or others, as ssh
insists for its keys: a secret in a world-readable file is refused, not used.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from mqtools.client.errors import MQClientError
from mqtools.common.atomic_file import write_atomic
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.security import SessionCredentials

ACCESS_KEY_ENV = "MQ_ACCESS_KEY"
SECRET_KEY_ENV = "MQ_SECRET_KEY"


class CredentialsError(MQClientError):
    """Credentials that cannot be used (half set in the environment, unreadable or open file)."""

    exit_code = EXIT_USAGE


def from_env(environ: Mapping[str, str] | None = None) -> SessionCredentials | None:
    env = os.environ if environ is None else environ
    access, secret = env.get(ACCESS_KEY_ENV), env.get(SECRET_KEY_ENV)
    if not access and not secret:
        return None
    if not access or not secret:
        raise CredentialsError(f"set both {ACCESS_KEY_ENV} and {SECRET_KEY_ENV}, or neither")
    return SessionCredentials(access, secret)


def read_secret(path: Path) -> str:
    """The first line of a file holding one secret (a user's password), stripped; '' for an empty file.
    CredentialsError when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror or exc}") from None
    return text.splitlines()[0].strip() if text.strip() else ""


def read_file(path: str | Path) -> SessionCredentials:
    import yaml  # here, not at the top: every mq command imports this module, few read a file

    path = Path(path)
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise CredentialsError(f"credentials file {path} is readable by others; chmod 600 {path}")
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CredentialsError(f"cannot read credentials file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError:
        raise CredentialsError(f"credentials file {path} is not valid YAML") from None
    if not isinstance(raw, dict) or not raw.get("accessKey") or not raw.get("secretKey"):
        raise CredentialsError(f"credentials file {path} needs accessKey and secretKey")
    token = raw.get("securityToken")
    return SessionCredentials(str(raw["accessKey"]), str(raw["secretKey"]), str(token) if token else None)


def write_file(path: Path, credentials: SessionCredentials) -> None:
    """Write a 0600 credentials file atomically (mkstemp creates it 0600 before the secret is written)."""
    import yaml

    doc: dict[str, str] = {"accessKey": credentials.access_key, "secretKey": credentials.secret_key}
    if credentials.security_token:
        doc["securityToken"] = credentials.security_token
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, yaml.safe_dump(doc).encode("utf-8"))


def resolve(credentials_file: str | None, environ: Mapping[str, str] | None = None) -> SessionCredentials | None:
    """The environment's credentials, else the named file's, else None (no ACL)."""
    env_creds = from_env(environ)
    if env_creds is not None:
        return env_creds
    return read_file(credentials_file) if credentials_file else None
