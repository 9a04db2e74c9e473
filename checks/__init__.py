"""rldoctor's built-in checks: one package per area (cluster, network, memory, workers,
serialization, training, security), one module per code family inside it; the `_helpers`
here serve several areas. The lint rules (area `code`) are in rldoctor.lint.rules.

Every check is a pure function of a Snapshot; none of these modules imports ray.
"""
