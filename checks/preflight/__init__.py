"""Checks of the preflight area (RLD9xx): the user's training judged before it is submitted, from
the snapshot section `preflight` that `rldoctor preflight TARGET` fills (rldoctor.cluster.preflight):
its demand against the cluster's capacity, its env's code on every node, packages that differ, the
storage path, the env's contract and speed, and GPUs. `rldoctor check` does not run them.

    _plan.py          reading the section: the plan (demand, env, storage), per-node answers
    capacity.py       RLD901 demand against capacity (now, once jobs end, after scale-up, never)
    code.py           RLD902 the env's code on each node; RLD903 packages that differ
    storage.py        RLD904 the storage path one shared directory
    contract.py       RLD905 the env's contract; RLD906 too slow for sample_timeout_s
    gpus.py           RLD907 GPUs Ray counts that a learner cannot use
"""
