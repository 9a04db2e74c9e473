"""Trainings for `rldoctor preflight` (tests/test_e2e_preflight.py): configs by MODULE:ATTR, a
script that builds one, and the env package `pf_envs` (envpath/, on some nodes' PYTHONPATH only)."""
