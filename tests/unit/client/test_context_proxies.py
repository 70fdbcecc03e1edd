"""A context keeps its proxies' remoting addresses (the default of every --proxy); files written before contexts had
proxies still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtools.client.contexts import CONTEXTS_FILE, ContextError, ContextStore


def test_proxies_round_trip_and_old_files_load(tmp_path: Path) -> None:
    store = ContextStore.load(tmp_path)
    store.add("local", "127.0.0.1:9876", proxies=("127.0.0.1:8080", "127.0.0.1:8082"))
    store.add("plain", "127.0.0.1:9876")
    store.save()
    again = ContextStore.load(tmp_path)
    assert again.get("local").proxies == ("127.0.0.1:8080", "127.0.0.1:8082")
    assert again.get("plain").proxies == ()
    raw = json.loads((tmp_path / CONTEXTS_FILE).read_text())
    for c in raw["contexts"]:
        del c["proxies"]
    (tmp_path / CONTEXTS_FILE).write_text(json.dumps(raw))
    assert ContextStore.load(tmp_path).get("local").proxies == ()
    with pytest.raises(ContextError, match="not a proxy's host:port"):
        store.add("bad", "127.0.0.1:9876", proxies=("nowhere",))


def test_a_cluster_context_that_cannot_be_saved_is_a_refusal_not_usage(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`mq cluster up --context`: the cluster is up either way; a contexts file that cannot be read or written is
    exit 1 saying so, not the usage error a bad context name is."""
    from mqtools.client.contexts import CONFIG_ENV, ClusterContextNotSaved, record_cluster
    from mqtools.common.exitcodes import EXIT_REFUSED

    monkeypatch.setenv(CONFIG_ENV, str(tmp_path))
    record_cluster("local", "127.0.0.1:9876", "/tmp/state", None, ("127.0.0.1:8080",))
    assert ContextStore.load(tmp_path).get("local").proxies == ("127.0.0.1:8080",)
    (tmp_path / CONTEXTS_FILE).write_text("{not json")
    with pytest.raises(ClusterContextNotSaved, match="the cluster is up, but its context was not saved") as caught:
        record_cluster("local", "127.0.0.1:9876", "/tmp/state", None, ())
    assert caught.value.exit_code == EXIT_REFUSED
