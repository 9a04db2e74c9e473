"""What runs on the cluster's nodes, pickled by value: the standard library and ray only.

    probes.py         the per-node probe actor's reads (host facts, versions, disks, logs)
    portprobe.py      RLD204's port connects, node to node
    onnode.py         the incident bundle's host facts, read on each node
    placement.py      pinning an actor or task to one node
    smoke.py          smoke-train's trainer actor (hosts RLlib on the cluster)
    preflight.py      preflight's answers on a node: the env built, versions, storage, GPUs

Nodes have nothing of rldoctor installed, so these import only the standard library, ray and
stdlib-only shared modules (rldoctor.metric_numbers; tests/test_layering.py).
"""
