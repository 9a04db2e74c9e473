"""Checks of the cluster area (RLD1xx): nodes.py (membership, versions, scheduling: RLD101-103,
105), control_plane.py (RLD104), limits.py (workers that cannot start, open files: RLD106-107),
autoscaler.py (scale-up blocked, nodes removed under a training: RLD108-109)."""
