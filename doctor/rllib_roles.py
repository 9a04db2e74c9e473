"""What RLlib's actors are called: the one answer for the collectors (which stacks to take,
which actor is a training's) and the checks (how a finding names an actor). Standard library
only: the cluster side imports it too (it ships in the dashboard path's package).
"""

from __future__ import annotations

from rldoctor import words

ENV_RUNNER_CLASSES = {"SingleAgentEnvRunner", "MultiAgentEnvRunner", "OfflineSingleAgentEnvRunner",
                      "EnvRunner", "RolloutWorker"}  # RolloutWorker: the old API stack's name


def rllib_role(class_name: str | None) -> str | None:
    """'env runner', 'learner', 'algorithm' or None for a Ray actor class name."""
    name = (class_name or "").split(".")[-1]
    if name in ENV_RUNNER_CLASSES or name.endswith("EnvRunner"):
        return "env runner"
    if name.endswith("Learner"):
        return "learner"
    if name in words.ALGORITHMS or name.endswith("Algorithm"):
        return "algorithm"
    return None
