"""What runs on the cluster's nodes, pickled by value: the standard library and ray only.

    probes.py           the per-node probe actor (facts, round trips, object pulls, stacks)
    facts.py            the node-side facts contract: `@fact` declares one, `found()` finds them
    fact_versions.py    fact `versions`: Ray, Python, RLlib, torch, gymnasium of the node
    fact_memory.py      host memory facts: MemTotal, the raylet's cgroup limit, OOM kills, shm
    fact_disks.py       fact `disk`: the disks under Ray's directories and what fills them
    fact_open_files.py  fact `open_files`: each Ray process's open-files limit and use
    fact_ray_logs.py    fact `ray_logs`: what Ray's own logs on the node say
    fact_listening.py   fact `listening`: the TCP ports the node's Ray processes listen on
    processes.py        the node's Ray processes from /proc: the raylet, its flags, its tree
    py_spy.py           `py-spy dump` of a process on the node
    portprobe.py        RLD204's port connects, node to node
    onnode.py           the incident bundle's host facts, read on each node
    placement.py        pinning an actor or task to one node
    smoke.py            smoke-train's trainer actor (hosts RLlib on the cluster)
    preflight.py        preflight's answers on a node: the env built, versions, storage, GPUs

A new node-side fact is one new module here that declares it with `@fact` (facts.py): the
probe finds it without a list to edit. Nodes have nothing of rldoctor installed, so these
import only the standard library, ray and stdlib-only shared modules (rldoctor.metric_numbers,
rldoctor.words; tests/test_layering.py).
"""
