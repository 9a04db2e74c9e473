"""Re-record the snapshots in fixtures/ from real local clusters, with `rldoctor collect`.

    python tests/record_fixtures.py [SCENARIO ...]

Each scenario builds the cluster state it is named after, records it, and trims
what varies from run to run without meaning anything (the collector timings).
The findings expected of each snapshot live beside it in <name>.expected.json;
they are written by hand after reading the snapshot, never by this script.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from localcluster import BIN, LocalCluster, NodeSpec, three_nodes  # noqa: E402

FIXTURES = HERE.parent / "fixtures"


def collect(cluster: LocalCluster, name: str) -> dict:
    out = FIXTURES / f"{name}.json"
    subprocess.run([*cluster.client_prefix, str(BIN / "rldoctor"), "collect", "--output", str(out),
                    "--address", cluster.address], env=cluster.client_env(), check=True)
    doc = json.loads(out.read_text())
    for collector in doc["collectors"].values():
        collector.pop("duration_s", None)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"recorded {out.relative_to(HERE.parent)}")
    return doc


def wait_dead(cluster: LocalCluster, node_id: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = cluster.run_driver(
            f"print('=>', [n['Alive'] for n in ray.nodes() if n['NodeID'] == {node_id!r}])")
        if "False" in out:
            return
        time.sleep(1)
    raise TimeoutError(f"node {node_id} not marked dead in {timeout_s}s")


def record_three_node_scenarios() -> None:
    """healthy-3node, infeasible-demands, node-dead: one cluster, three states."""
    with three_nodes() as cluster:
        collect(cluster, "healthy-3node")
        cluster.run_driver((
            "@ray.remote(resources={'no_such_accelerator': 1})\n"
            "class NeedsAccelerator:\n    pass\n"
            "NeedsAccelerator.options(name='hungry', lifetime='detached').remote()\n"
            "from ray.util.placement_group import placement_group\n"
            "placement_group([{'CPU': 1}, {'CPU': 1}], strategy='STRICT_PACK', name='ppo-runners',"
            " lifetime='detached')\n"))
        time.sleep(4)  # raylets report demand to the GCS about once a second
        collect(cluster, "infeasible-demands")
        cluster.run_driver((
            "from ray.util.placement_group import get_placement_group, remove_placement_group\n"
            "ray.kill(ray.get_actor('hungry'))\n"
            "remove_placement_group(get_placement_group('ppo-runners'))\n"))
        killed = cluster.kill_node(2)
        wait_dead(cluster, killed)
        collect(cluster, "node-dead")


def record_version_mismatch() -> None:
    """version-mismatch: one worker node runs an older gymnasium than the rest."""
    with tempfile.TemporaryDirectory() as site:
        subprocess.run([str(BIN / "pip"), "install", "--quiet", "--no-deps", "--target", site,
                        "gymnasium==1.0.0"], check=True)
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}),
                 NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, env={"PYTHONPATH": site})]
        with LocalCluster(specs) as cluster:
            collect(cluster, "version-mismatch")


def record_worker_faults() -> None:
    """worker-faults: a crash-looping actor and a SIGKILLed worker on node 1, memory kills on node 2."""
    from faults import (actor_that_crashes_three_times, task_on_memory_starved_node,
                        worker_killed_with_sigkill)

    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[2].env["RAY_memory_usage_threshold"] = "0.02"
    with LocalCluster(specs) as cluster:
        node1, node2 = cluster.nodes[1].node_id, cluster.nodes[2].node_id
        actor_that_crashes_three_times(cluster, node1)
        worker_killed_with_sigkill(cluster, node1)
        task_on_memory_starved_node(cluster, node2)
        time.sleep(3)  # task and worker events reach the GCS about once a second
        collect(cluster, "worker-faults")


def record_memory_pressure() -> None:
    """memory-pressure: node 1 stores objects on disk and sits near its kill threshold;
    node 2's 80 MiB object store is filled by an actor, then pushed until it spills."""
    from faults import hoard_objects

    info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    used = 1 - int(info["MemAvailable"].split()[0]) / int(info["MemTotal"].split()[0])
    with tempfile.TemporaryDirectory(dir="/tmp") as plasma:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
        specs[1].env["RAY_memory_usage_threshold"] = f"{used + 0.06:.3f}"
        specs[1].extra_args = ["--plasma-directory", plasma]
        specs[2].object_store_memory = 80 * 2**20
        specs[2].env["RAY_object_spilling_threshold"] = "1.0"
        with LocalCluster(specs) as cluster:
            hoard_objects(cluster, cluster.nodes[2].node_id, chunks=21)
            time.sleep(2)
            collect(cluster, "memory-pressure")


def record_network_delayed() -> None:
    """network-delayed: node 1 receives object chunks 200 ms late; node 2 is in zone-b and
    its workers get every task 30 ms late (Ray's own RAY_testing_asio_delay_us)."""
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[1].env["RAY_testing_asio_delay_us"] = "ObjectManagerService.grpc_server.Push=200000:200000"
    specs[2].labels = {"ray.io/availability-zone": "zone-b"}
    specs[2].env["RAY_testing_asio_delay_us"] = "CoreWorkerService.grpc_server.PushTask=30000:30000"
    with LocalCluster(specs) as cluster:
        collect(cluster, "network-delayed")


def _wait_for_call_age(cluster: LocalCluster, seconds: float, timeout_s: float = 120) -> None:
    from conftest import check_json

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        trainings = check_json(cluster).json().get("training") or []
        ages = [m.get("call_age_s") or 0 for t in trainings for m in t["runners"]]
        if ages and max(ages) >= seconds:
            return
        time.sleep(2)
    raise TimeoutError(f"no runner call reached {seconds}s")


def record_trainings() -> None:
    """training-healthy, training-hung, training-lost: PPO jobs (tests/ppo_job.py) as
    their own drivers on a 3-node cluster: healthy; one runner stuck in env.step();
    one runner SIGKILLed with restarts off."""
    import os
    import signal

    from conftest import PPOJob

    with three_nodes() as cluster:
        with PPOJob(cluster, "--runners", "2", "--no-restarts") as job:
            job.wait_iterations(3)
            doc = collect(cluster, "training-healthy")
            victim = doc["training"]["trainings"][0]["runners"][0]["pid"]
            os.kill(victim, signal.SIGKILL)
            time.sleep(3)
            collect(cluster, "training-lost")
        with PPOJob(cluster, "--runners", "2", "--hang-runner", "1"):
            _wait_for_call_age(cluster, 30)
            collect(cluster, "training-hung")


def record_training_hung_ray240() -> None:
    """training-hung-ray240: the hung-runner PPO job on a 3-node cluster of Ray 2.40.0 (its
    own RLlib, no token auth), recorded through the dashboard: what an older release shows
    (no per-runner env-step counter) beside what every release shows (the stuck frame)."""
    from conftest import PPOJob
    from ray_venvs import ray_venv

    with LocalCluster([NodeSpec() for _ in range(3)], token_auth=False,
                      bin_dir=ray_venv("2.40.0")) as cluster:
        with PPOJob(cluster, "--runners", "2", "--hang-runner", "1", env=cluster.client_env()):
            _wait_for_call_age(cluster, 30)
            collect(cluster, "training-hung-ray240")


def record_runs() -> None:
    """fixtures/runs/: four real Tune trials of tests/ppo_job.py --grid (lr 1e-3 or 0, rewards
    real or NaN), their result.json rows cut to the first 25 and their configs to the
    training settings."""
    import shutil

    from conftest import PPOJob

    out = FIXTURES / "runs"
    names = {("False", "0.0010"): "healthy", ("False", "0.0000"): "lr0",
             ("True", "0.0010"): "nan-rewards", ("True", "0.0000"): "nan-rewards-lr0"}
    with tempfile.TemporaryDirectory() as storage, three_nodes() as cluster:
        with PPOJob(cluster, "--runners", "0", "--tune", storage, "--name", "grid", "--grid",
                    "--iterations", "25") as job:
            job.wait_for(lambda j: any(line.startswith("=> done") for line in j.lines), 300)
        for trial in (Path(storage) / "grid").iterdir():
            if not trial.is_dir():
                continue
            key = (trial.name.split("nan_rewards=")[1].split(",")[0],
                   trial.name.split("lr=")[1].split("_")[0])
            target = out / names[key]
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            rows = []
            for line in (trial / "result.json").read_text().splitlines()[:25]:
                row = json.loads(line)
                row["config"] = {k: v for k, v in row["config"].items()
                                 if k in ("env", "lr", "num_env_runners", "minibatch_size",
                                          "num_epochs", "train_batch_size_per_learner")}
                rows.append(json.dumps(row))
            (target / "result.json").write_text("\n".join(rows) + "\n")
            print(f"recorded {target.relative_to(HERE.parent)}")


# An actor that serves something of its own on every interface, as a user's web UI would.
LISTENING_ACTOR = """
import socket

@ray.remote(num_cpus=0)
class OwnServer:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen()

    def port(self):
        return self.sock.getsockname()[1]

server = OwnServer.options(name="own-server", lifetime="detached", label_selector={
    "ray.io/node-id": NODE}).remote()
print("=>", ray.get(server.port.remote()))
"""


def record_auth_off_exposed() -> None:
    """auth-off-exposed: head + 1 worker with RAY_AUTH_MODE=disabled, the head's dashboard on
    0.0.0.0, and on the worker an actor listening on 0.0.0.0 (a port of the user's own)."""
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(2)]
    with LocalCluster(specs, token_auth=False, dashboard_host="0.0.0.0") as cluster:
        cluster.run_driver(LISTENING_ACTOR.replace("NODE", repr(cluster.nodes[1].node_id)))
        collect(cluster, "auth-off-exposed")


def record_ports_closed() -> None:
    """ports-closed: 3 hosts (network namespaces, tests/netns.py); on node 2 (10.231.27.12)
    iptables drops new connections to its object-manager port from every host, on node 1
    (10.231.27.11) it rejects new connections to its dashboard agent's HTTP port from node 2."""
    from netns import Hosts

    with Hosts(3) as hosts:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, ip=hosts.ip(i),
                          command_prefix=hosts.prefix(i)) for i in range(3)]
        with LocalCluster(specs) as cluster:
            ports = json.loads(cluster.run_driver(
                "import json\nprint('=>', json.dumps({n['NodeManagerAddress']: "
                "[n['ObjectManagerPort'], n['DashboardAgentListenPort']] for n in ray.nodes()}))",
                expect_lines=1))
            hosts.block(2, ports[hosts.ip(2)][0])
            hosts.block(1, ports[hosts.ip(1)][1], sources=[2], reject=True)
            collect(cluster, "ports-closed")


def record_node_faults() -> None:
    """node-faults: the head under a 1024 open-files limit, node 2's temp dir on a full tmpfs,
    an actor (on node 1) and a job whose pip runtime_env fails (tests/test_e2e_node_faults.py)."""
    from node_faults import SmallTmpfs, actor_needing, submit_job_needing

    with SmallTmpfs(64) as disk:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"},
                          env={"RUNTIME_ENV_RETRY_TIMES": "1"}) for _ in range(3)]
        specs[0].command_prefix = ["prlimit", "--nofile=1024:1024"]
        specs[2].extra_args = ["--temp-dir", str(disk.path)]
        with LocalCluster(specs) as cluster:
            disk.fill_to(0.97)
            submit_job_needing(cluster, "rldoctor-no-such-package-xyz", "needs-a-package")
            actor_needing(cluster, cluster.nodes[1].node_id, "rldoctor-no-such-package-abc",
                          {"API_TOKEN": "not-for-the-fixture"})
            time.sleep(10)  # the job fails on its own clock
            collect(cluster, "node-faults")


def record_workers_not_starting() -> None:
    """workers-not-starting: node 2's workers hang at start (tests/test_e2e_workers_not_starting.py)."""
    from node_faults import hang_site

    with tempfile.TemporaryDirectory() as tmp:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
        specs[2].env.update({"PYTHONPATH": hang_site(Path(tmp)),
                             "RAY_worker_register_timeout_seconds": "5"})
        specs[2].resources = {"hung_node": 1}
        with LocalCluster(specs) as cluster:
            driver = subprocess.Popen(
                [sys.executable, "-c", f"import ray, time\nray.init(address={cluster.address!r})\n"
                 "@ray.remote(num_cpus=0, resources={'hung_node': 0.1})\ndef never_runs():\n"
                 "    return 1\nref = never_runs.remote()\ntime.sleep(600)"], env=cluster.client_env(), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                time.sleep(15)
                collect(cluster, "workers-not-starting")
            finally:
                driver.kill()
                driver.wait()


def record_autoscaler() -> None:
    """autoscaler-blocked-v1: the v1 cluster of tests/test_e2e_autoscaler.py (cpu_worker 1 CPU
    max 2, quota_worker whose launches fail with a quota error, ghost_worker whose nodes never
    start, max_workers 4), with 2 learners running, 2 more waiting at max_workers, a GPU learner
    no type fits, actors for the failing and the ghost type, and a request_resources() for a
    resource no type has."""
    from test_e2e_autoscaler import Scenario

    with Scenario(v2=False) as scenario:
        collect(scenario.cluster, "autoscaler-blocked-v1")


SCENARIOS = {"three-node": record_three_node_scenarios, "version-mismatch": record_version_mismatch,
             "worker-faults": record_worker_faults, "memory-pressure": record_memory_pressure,
             "network-delayed": record_network_delayed, "trainings": record_trainings,
             "training-hung-ray240": record_training_hung_ray240,
             "runs": record_runs, "auth-off-exposed": record_auth_off_exposed,
             "ports-closed": record_ports_closed, "node-faults": record_node_faults,
             "workers-not-starting": record_workers_not_starting, "autoscaler": record_autoscaler}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[name]()
