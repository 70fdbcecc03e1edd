"""The cluster-command frame: a command's one ClusterOptions parameter becomes -n/--context in its place and the
TLS flags last, handed over as one object; under `mq admin` the options given before the noun count too."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from mqtools.cli.admin.common import NO_OPTIONS, ClusterOptions, cluster_command
from mqtools.cli.main import app as mq
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.security import TlsClientOptions

seen: list[ClusterOptions] = []


@cluster_command
def probe(
    first: Annotated[int, typer.Option("--first")] = 1,
    where: ClusterOptions = NO_OPTIONS,
    last: Annotated[str, typer.Option("--last")] = "x",
) -> None:
    seen.append(where)


def test_the_options_parameter_becomes_namesrv_and_context_in_its_place_and_tls_last() -> None:
    names = list(inspect.signature(probe).parameters)
    assert names == ["first", "namesrv", "context", "last", "tls", "tls_ca", "tls_cert", "tls_key"]


def test_the_command_gets_what_was_given_as_one_object() -> None:
    app = typer.Typer()
    app.command()(probe)
    seen.clear()
    result = CliRunner().invoke(app, ["-n", "127.0.0.1:9876", "--tls", "--last", "y"])
    assert result.exit_code == 0, result.output
    assert seen == [ClusterOptions("127.0.0.1:9876", None, TlsClientOptions())]
    seen.clear()
    assert CliRunner().invoke(app, ["--context", "prod"]).exit_code == 0
    assert seen == [ClusterOptions(None, "prod", None)]


def test_bad_tls_flags_are_a_usage_error_before_the_command_runs() -> None:
    result = CliRunner().invoke(mq, ["top", "--once", "--tls-cert", "c.pem"], prog_name="mq")
    assert result.exit_code == EXIT_USAGE
    assert "--tls-cert and --tls-key go together" in result.output


def test_options_given_to_mq_admin_reach_a_framed_command_below_it() -> None:
    """`mq admin -n NS drill run --preset P` is refused as `mq admin drill run -n NS --preset P` is: the name
    servers were given either way, and a preset brings its own cluster."""
    for args in (["admin", "-n", "127.0.0.1:9876", "drill", "run", "kill-master", "--preset", "2m-2s-sync"],
                 ["admin", "drill", "run", "kill-master", "--preset", "2m-2s-sync", "-n", "127.0.0.1:9876"]):
        result = CliRunner().invoke(mq, args, prog_name="mq")
        assert result.exit_code == EXIT_USAGE, result.output
        assert "--preset brings its own cluster" in result.output


def test_keep_logs_is_for_a_preset_cluster(tmp_path: Path) -> None:
    """A local cluster keeps its logs in its --dir; only --preset's goes when the drill ends."""
    result = CliRunner().invoke(mq, ["admin", "drill", "run", "kill-master", "--dir", str(tmp_path), "--keep-logs",
                                     str(tmp_path / "logs")], prog_name="mq")
    assert result.exit_code == EXIT_USAGE, result.output
    assert "--keep-logs is for --preset's cluster" in result.output


def test_what_mq_admin_was_given_does_not_reach_a_later_command_of_the_same_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tests (and anything embedding `main`) run many commands in one process: `mq top` after `mq admin -n NS`
    has no name server of its own."""
    from mqtools.cli.main import main

    monkeypatch.setenv("MQ_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert main(["admin", "-n", "no-such-host:1"]) == 0
    assert main(["top", "--once"]) == EXIT_USAGE
    assert "no name server" in capsys.readouterr().err


#: `mq admin` commands that talk to no cluster: the schemas, help, and the drills' catalogue, offline re-judging
#: and soaks (which bring up their own clusters).
OFFLINE = {"schema", "help", "drill list", "drill check", "drill soak"}
TLS_FLAGS = ["--tls", "--tls-ca", "--tls-cert", "--tls-key"]


def _commands(group: Any, ctx: typer.Context, prefix: str = "") -> dict[str, Any]:
    """Every command below `group` (typer's click groups and commands), by its words after `mq admin`."""
    found: dict[str, Any] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if hasattr(cmd, "list_commands"):
            found |= _commands(cmd, typer.Context(cmd, parent=ctx, info_name=name), f"{prefix}{name} ")
        elif cmd is not None:
            found[f"{prefix}{name}"] = cmd
    return found


def test_every_mq_admin_command_that_talks_to_a_cluster_takes_the_tls_flags_after_its_noun() -> None:
    """In either dialect, as -n and --context are: `mq admin topic list -n NS --tls-ca ca.pem` as well as `mq
    admin --tls-ca ca.pem topic list -n NS`, `mq admin topicList --context prod`; the flags come last, after the
    command's own options."""
    from mqtools.cli.admin import mqadmin

    root = typer.main.get_command(mq)
    admin = root.get_command(typer.Context(root), "admin")
    ctx = typer.Context(admin, info_name="admin")
    commands = _commands(admin, ctx)
    commands |= {name: admin.get_command(ctx, name) for name in mqadmin.every()}
    assert len(commands) > 100
    for name, cmd in commands.items():
        if name in OFFLINE:
            continue
        opts = {opt for p in cmd.params for opt in p.opts}
        assert "-a" in opts or {"-n", "--context"} <= opts, name  # controllers (-a), else name servers or a context
        flags = [opt for p in cmd.params for opt in p.opts if opt.startswith("--tls")]
        assert flags == TLS_FLAGS, name
        last = [p.opts[0] for p in cmd.params if p.param_type_name == "option"][-4:]
        assert last == TLS_FLAGS, name


def test_tls_flags_after_the_noun_win_over_those_before_it() -> None:
    from mqtools.cli.admin.common import remember_group, with_tls

    def command() -> None:
        seen.append(ClusterOptions.given())

    app = typer.Typer()
    app.command()(with_tls(command))
    before = TlsClientOptions(ca_file="/etc/ssl/before.pem")
    remember_group(ClusterOptions("127.0.0.1:9876", None, before))
    try:
        seen.clear()
        assert CliRunner().invoke(app, []).exit_code == 0
        assert CliRunner().invoke(app, ["--tls"]).exit_code == 0
        assert seen == [ClusterOptions("127.0.0.1:9876", None, before),
                        ClusterOptions("127.0.0.1:9876", None, TlsClientOptions())]
    finally:
        remember_group(NO_OPTIONS)
