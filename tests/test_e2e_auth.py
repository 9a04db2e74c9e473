"""rldoctor joins in the cluster's own auth mode, whatever a stale token file says.

A plain local `ray.init()` of this Ray leaves a token in ~/.ray/auth_token, so most
engineers' shells hold one that belongs to no cluster in particular. Every test here
gets its own HOME; none reads or writes the real ~/.ray.
"""

from __future__ import annotations

import pytest

from conftest import run_rldoctor
from localcluster import LocalCluster, NodeSpec

pytestmark = pytest.mark.cluster


def _home_with_stale_token(tmp_path) -> str:
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("stale-token-from-an-old-local-ray-init-0123456789")
    return str(home)


def _shell(cluster: LocalCluster, home: str) -> dict:
    """An on-call shell: no RAY_AUTH_* variables, HOME as given."""
    env = cluster.client_env()
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(key, None)
    env["HOME"] = home
    return env


@pytest.fixture(scope="module")
def auth_off():
    """Token auth off on every node (RAY_AUTH_MODE=disabled), one zone."""
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    with LocalCluster(specs, token_auth=False) as cluster:
        yield cluster


def _codes(result) -> list[tuple[str, str]]:
    return sorted((f["code"], f["subject"]) for f in result.findings())


def _only_auth_off_findings(result) -> bool:
    """Exit 1 for token authentication off itself (RLD701, RLD702), and for nothing else."""
    return result.code == 1 and {f["code"] for f in result.findings()} == {"RLD701", "RLD702"}


def test_stale_token_file_does_not_make_healthy_nodes_look_dead(auth_off, tmp_path):
    clean = run_rldoctor("check", "--address", auth_off.address, "--format", "json",
                         env=_shell(auth_off, str(tmp_path / "empty-home")))
    stale_home = _home_with_stale_token(tmp_path)
    stale = run_rldoctor("check", "--address", auth_off.address, "--format", "json",
                         env=_shell(auth_off, stale_home))
    assert _only_auth_off_findings(clean) and _only_auth_off_findings(stale), (clean, stale)
    assert stale.findings("RLD101") == [] and stale.findings("RLD105") == [], stale
    assert _codes(stale) == _codes(clean)
    assert [c["status"] for c in stale.json()["checks"]] == [c["status"] for c in clean.json()["checks"]]
    [note] = [n for n in stale.json()["notes"] if "was not used" in n]
    assert f"{stale_home}/.ray/auth_token" in note and "token authentication is off" in note
    # What rldoctor joined with, and why, is in the snapshot too.
    snap = tmp_path / "snap.json"
    assert run_rldoctor("collect", "--address", auth_off.address, "--output", str(snap),
                        env=_shell(auth_off, stale_home)).code == 0
    import json

    client = json.loads(snap.read_text())["cluster"]["client_auth"]
    assert client["mode"] == "disabled" and client["cluster"] == "disabled"


def test_stale_token_with_address_auto_and_an_explicit_token_mode(auth_off, tmp_path):
    """`--address auto` imports Ray before the mode is chosen; RAY_AUTH_MODE=token is
    overridden by what the cluster wants, and said so."""
    env = _shell(auth_off, _home_with_stale_token(tmp_path))
    result = run_rldoctor("check", "--address", "auto", "--format", "json", env=env)
    assert _only_auth_off_findings(result), result
    env["RAY_AUTH_MODE"] = "token"
    result = run_rldoctor("check", "--address", auth_off.address, "--format", "json", env=env)
    assert _only_auth_off_findings(result), result
    assert any("RAY_AUTH_MODE=token is set here" in n for n in result.json()["notes"]), result


@pytest.mark.slow
def test_smoke_train_joins_an_auth_off_cluster_despite_a_stale_token(auth_off, tmp_path):
    env = _shell(auth_off, _home_with_stale_token(tmp_path))
    # a low target: it ends once it trained (all this test needs), not at the budget's end
    result = run_rldoctor("smoke-train", "--address", auth_off.address, "--format", "json",
                          "--target-return", "30", "--time-budget", "40", env=env, timeout=180)
    report = result.json()
    assert report["figures"]["curve"], result  # it trained: the trainer actor lived
    assert "ActorDied" not in result.stdout + result.stderr


def test_token_cluster_refuses_a_stale_token_in_one_line(cluster3, tmp_path):
    result = run_rldoctor("check", "--address", cluster3.address,
                          env=_shell(cluster3, _home_with_stale_token(tmp_path)))
    assert result.code == 3 and result.seconds < 15, result
    [line] = result.stderr.strip().splitlines()
    assert "refused the token from the default token file" in line and "auth_token" in line
    assert "RAY_AUTH_TOKEN_PATH" in line and "stale-token" not in line


def test_token_cluster_with_no_token_anywhere_is_one_line(cluster3, tmp_path):
    result = run_rldoctor("check", "--address", cluster3.address,
                          env=_shell(cluster3, str(tmp_path / "empty-home")))
    assert result.code == 3 and result.seconds < 15, result
    [line] = result.stderr.strip().splitlines()
    assert "uses token authentication" in line and "found no token" in line


def test_token_cluster_with_the_right_token_from_the_default_file(cluster3, tmp_path):
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(cluster3.token)
    result = run_rldoctor("check", "--address", cluster3.address, "--format", "json",
                          env=_shell(cluster3, str(home)))
    assert result.code == 0 and result.findings() == [], result
    assert cluster3.token not in result.stdout + result.stderr


def test_a_node_in_token_mode_on_an_auth_off_cluster_is_a_mismatch_not_a_dead_node(auth_off, tmp_path):
    # the module's auth-off cluster gains a node started in token mode (the module's last test:
    # the cluster goes with the module)
    node = auth_off.add_node(NodeSpec(labels={"ray.io/availability-zone": "zone-a"},
                                      env={"RAY_AUTH_MODE": "token",
                                           "RAY_AUTH_TOKEN_PATH": str(auth_off.token_path)}))
    result = run_rldoctor("check", "--address", auth_off.address, "--format", "json",
                          env=_shell(auth_off, str(tmp_path / "empty-home")))
    odd = f"node:{node.node_id}"
    assert result.code == 1, result
    assert result.findings("RLD101") == [], result
    [finding] = result.findings("RLD105")
    assert finding["subject"] == odd and finding["severity"] == "fail"
    assert "RAY_AUTH_MODE=disabled" in finding["message"]
    assert "UNAUTHENTICATED" in finding["evidence"]["raylet"]
