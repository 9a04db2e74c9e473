"""Checks of the preflight area (RLD9xx): the user's training judged before it is submitted, from
the snapshot section `preflight` that `rldoctor preflight TARGET` fills (rldoctor.cluster.preflight):
its demand against the cluster's capacity, its env's code on every node, packages that differ, the
storage path, the env's contract and speed, and GPUs. `rldoctor check` does not run them."""
