"""BROKEN on purpose: registers the lock-capturing creator under a name (RLD501).

`register_env` pickles the creator right away, so plain `import` of this module
raises `TypeError: ... ray.cloudpickle.dumps(...) failed`; rldoctor still finds
the member that breaks it (`--target targets.registered_lock_env:rldoctor-lock-cartpole`).
"""

from ray.tune.registry import register_env

from .lock_env import env_creator

register_env("rldoctor-lock-cartpole", env_creator)
