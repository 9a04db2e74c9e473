"""User code for the serialization checks (RLD501, RLD502): broken on purpose, and fixed.

Each module is what a user would point `rldoctor check --target` at. The broken
ones fail in RLlib for real (tests/test_serialization_e2e.py builds PPO with them).
"""
