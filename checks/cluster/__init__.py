"""Checks of the cluster area (RLD1xx): nodes (membership, versions, scheduling), the control plane, node limits."""
