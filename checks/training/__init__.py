"""Checks of the training area (RLD6xx): run records and smoke runs (runs), the trainings live on the cluster (live)."""
