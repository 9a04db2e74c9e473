"""A real autoscaling cluster on this machine: the head from tests/localcluster.py, started with
an `--autoscaling-config` of its own, and Ray's autoscaler (v1 or v2) launching real raylets
as nodes through Ray's fake multi-node provider (or tests/fake_providers.py's FaultyProvider,
which fails launches like a cloud). Never ray.cluster_utils.AutoscalingCluster: it runs
`ray stop --force`, which would kill every Ray process on the machine.

The fake nodes are started by the head's monitor process, so they inherit the cluster's
marker and LocalCluster.stop() ends them with the rest.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from localcluster import LocalCluster, NodeSpec

HERE = Path(__file__).resolve().parent
FAKE_HEAD_NODE_ID = "fffffffffffffffffffffffffffffffffffffffffffffffffff00000"
MIB = 2**20


def worker_type(cpus: float = 1, max_workers: int = 2, min_workers: int = 0,
                store_mib: int = 80, **resources) -> dict:
    return {"resources": {"CPU": cpus, "object_store_memory": store_mib * MIB, **resources},
            "node_config": {}, "min_workers": min_workers, "max_workers": max_workers}


def config(cluster: LocalCluster, node_types: dict, *, max_workers: int = 2,
           idle_timeout_minutes: float = 5.0, v2: bool = False, provider: dict | None = None,
           head_cpus: float = 0) -> dict:
    """A complete autoscaling config (v1 fills in no defaults, so every field is given)."""
    provider_config = {
        "type": "external",
        "module": "fake_providers.FaultyProvider",
        "use_node_id_as_ip": True, "disable_node_updaters": True,
        "disable_launch_config_check": True,
        "gcs_address": cluster.address, "launch_multiple": True,
        "head_node_id": FAKE_HEAD_NODE_ID,
        **(provider or {})}
    types = {"ray.head.default": {"resources": {"CPU": head_cpus}, "node_config": {},
                                  "max_workers": 0}, **node_types}
    return {"cluster_name": "rldoctor-fake", "max_workers": max_workers,
            "upscaling_speed": 1.0, "idle_timeout_minutes": idle_timeout_minutes,
            "provider": provider_config, "available_node_types": types,
            "head_node_type": "ray.head.default",
            "auth": {}, "docker": {}, "initialization_commands": [], "setup_commands": [],
            "head_setup_commands": [], "worker_setup_commands": [],
            "head_start_ray_commands": [], "worker_start_ray_commands": [],
            "file_mounts": {}, "cluster_synced_files": [],
            "file_mounts_sync_continuously": False, "rsync_exclude": [], "rsync_filter": []}


def autoscaling_cluster(node_types: dict, *, v2: bool = False, head_cpus: float = 0,
                        bin_dir: Path | None = None, token_auth: bool = True,
                        **kwargs) -> LocalCluster:
    """A head (0 CPUs by default) whose autoscaler launches `node_types` (not started yet),
    with the Ray of `bin_dir` (another release's venv, tests/ray_venvs.py) or rldoctor's own."""
    env = {"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1",
           "PYTHONPATH": str(HERE),
           # the fake nodes take the head's marker env; keep their dashboards' agents lean
           "RAY_OVERRIDE_NODE_ID_FOR_TESTING": FAKE_HEAD_NODE_ID,
           "RAY_CLOUD_INSTANCE_ID": FAKE_HEAD_NODE_ID}
    if v2:
        env["RAY_enable_autoscaler_v2"] = "1"
    head = NodeSpec(num_cpus=head_cpus)
    cluster = LocalCluster([head], head_env=env, bin_dir=bin_dir, token_auth=token_auth)
    path = cluster.root / "autoscaling.yaml"
    path.write_text(json.dumps(config(cluster, node_types, v2=v2, head_cpus=head_cpus, **kwargs)))
    head.extra_args = [f"--autoscaling-config={path}"]
    cluster.autoscaling_config = path
    return cluster


def wait_nodes(cluster: LocalCluster, alive: int, timeout_s: float = 90) -> int:
    """Wait until `alive` nodes (the head included) are alive; returns the count seen last."""
    deadline = time.monotonic() + timeout_s
    seen = -1
    while time.monotonic() < deadline:
        out = cluster.run_driver("print('=>', sum(1 for n in ray.nodes() if n['Alive']))",
                                 expect_lines=1)
        seen = int(out)
        if seen >= alive:
            return seen
        time.sleep(2)
    raise RuntimeError(f"{seen} node(s) alive after {timeout_s}s, wanted {alive}")
