"""BROKEN on purpose: a config that carries a 12 MiB numpy array in env_config (RLD502).

RLlib pickles the whole config for every env runner (and again for every restart).
"""

import numpy as np
from ray.rllib.algorithms.ppo import PPOConfig

LOOKUP_TABLE = np.ones((3, 2**20), dtype=np.float32)  # 12 MiB

config = PPOConfig().environment("CartPole-v1", env_config={"lookup_table": LOOKUP_TABLE})
