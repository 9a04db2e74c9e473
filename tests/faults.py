"""Real faults for real clusters, shared by the tests and tests/record_fixtures.py.

Each function runs a short driver against a LocalCluster and returns what it
learned (an actor id, a pid, how a task ended).
"""

from __future__ import annotations

import os
import signal

from localcluster import LocalCluster

# The classes of a driver script (`import logging, os, sys, time` and `import ray` first):
# a runner whose env blocks forever in step(), on the line marked HUNG LINE, ...
HUNG_RUNNER = '''\
class MyEnv:
    def step(self, action):
        while True:
            time.sleep(0.05)  # HUNG LINE

@ray.remote(num_cpus=0)
class Runner:
    def pid(self):
        return os.getpid()

    def sample(self):
        return MyEnv().step(0)
'''

# ... and a simulator actor that prints its password from its env_vars, then dies.
DYING_SIMULATOR = '''\
@ray.remote(num_cpus=0, max_restarts=0)
class Simulator:
    def connect(self):
        print("Traceback (most recent call last):\\n  simulator.connect() failed: "
              "login with password=" + os.environ["SIM_PASSWORD"], file=sys.stderr, flush=True)
        time.sleep(0.5)
        os._exit(1)
'''

CRASH_THREE_TIMES = """
import os, time
@ray.remote(max_restarts=5, num_cpus=0)
class EnvSimulator:
    def crash(self):
        os._exit(1)
    def pid(self):
        return os.getpid()
def pid_of(actor):
    for _ in range(100):
        try:
            return ray.get(actor.pid.remote())
        except Exception:
            time.sleep(0.2)
    raise RuntimeError("actor never came back")
a = EnvSimulator.options(name="flaky-sim", lifetime="detached", namespace="e2e", **PIN).remote()
for _ in range(3):
    pid_of(a)
    try:
        ray.get(a.crash.remote())
    except Exception:
        pass
pid_of(a)
print("=>", a._actor_id.hex())
"""

SPAWN_VICTIM = """
import os
@ray.remote(num_cpus=0)
class Victim:
    def pid(self):
        return os.getpid()
v = Victim.options(name="victim", lifetime="detached", namespace="e2e",
                   label_selector={"ray.io/node-id": NODE}).remote()
print("=>", ray.get(v.pid.remote()))
"""

HOG_MEMORY = """
import time
@ray.remote(num_cpus=0, max_retries=0)
def hog():
    time.sleep(60)
try:
    ray.get(hog.options(label_selector={"ray.io/node-id": NODE}).remote(), timeout=50)
    print("=>", "survived")
except Exception as exc:
    print("=>", type(exc).__name__)
"""


# How a driver pins an actor to NODE: label_selector (Ray 2.60), or the node-affinity strategy
# every supported Ray has (2.40 has no label_selector).
PIN_BY_LABEL = 'PIN = {"label_selector": {"ray.io/node-id": NODE}}\n'
PIN_BY_AFFINITY = ("from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy\n"
                   'PIN = {"scheduling_strategy": NodeAffinitySchedulingStrategy(NODE, soft=False)}\n')


def actor_that_crashes_three_times(cluster: LocalCluster, node_id: str,
                                   pin: str = PIN_BY_LABEL) -> str:
    """A detached actor with max_restarts=5 that kills itself three times; returns its id."""
    return cluster.run_driver(f"NODE = {node_id!r}\n" + pin + CRASH_THREE_TIMES).strip()


def worker_killed_with_sigkill(cluster: LocalCluster, node_id: str) -> int:
    """An actor's worker process on `node_id`, killed with SIGKILL from outside; returns its pid."""
    pid = int(cluster.run_driver(f"NODE = {node_id!r}\n" + SPAWN_VICTIM).strip())
    os.kill(pid, signal.SIGKILL)
    return pid


def task_on_memory_starved_node(cluster: LocalCluster, node_id: str) -> str:
    """A task on a node whose memory monitor kills everything; returns how it ended."""
    return cluster.run_driver(f"NODE = {node_id!r}\n" + HOG_MEMORY).strip()


HOARD = """
import numpy as np
@ray.remote(num_cpus=0)
class Hoarder:
    def __init__(self):
        self.refs = []
    def put(self, mib, chunks):
        for _ in range(chunks):
            self.refs.append(ray.put(np.ones(mib * 2**20, dtype=np.uint8)))
        return len(self.refs)
try:
    h = ray.get_actor("hoarder", namespace="faults")
except ValueError:
    h = Hoarder.options(name="hoarder", namespace="faults", lifetime="detached",
                        label_selector={"ray.io/node-id": NODE}).remote()
print("=>", ray.get(h.put.remote(CHUNK_MIB, CHUNKS)))
"""


def hoard_objects(cluster: LocalCluster, node_id: str, chunks: int, chunk_mib: int = 5) -> int:
    """A long-lived detached actor on `node_id` that ray.put()s and keeps `chunks` objects."""
    code = f"NODE = {node_id!r}\nCHUNK_MIB = {chunk_mib}\nCHUNKS = {chunks}\n" + HOARD
    return int(cluster.run_driver(code).strip())
