"""Checks of the workers area (RLD4xx): restarts, OOM kills and crashes (crashes), runtime_env setup (runtime_env)."""
