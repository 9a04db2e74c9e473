"""Trainings for `rldoctor preflight` (tests/test_preflight_checks.py): configs by MODULE:ATTR, a
script that builds one, and the env package `pf_envs` (envpath/, on some nodes' PYTHONPATH only)."""
