"""Envs for preflight's tests: one healthy, one with old gym's 4-tuple step, one with NaN
rewards, one too slow for its sample_timeout_s, one that never ends. Importable only where
envpath/ is on the PYTHONPATH (some nodes of the test cluster, not all)."""

import math
import time

import gymnasium as gym
import numpy as np

__version__ = "0.3.1"


class _Base(gym.Env):
    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 20, False, {}


class GoodEnv(_Base):
    pass


class FourTupleEnv(_Base):
    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 20, {}


class NanRewardEnv(_Base):
    def step(self, action):
        obs, _, term, trunc, info = super().step(action)
        return obs, (math.nan if self.t == 3 else 1.0), term, trunc, info


class SlowEnv(_Base):
    def step(self, action):
        time.sleep(0.02)
        return super().step(action)


class EndlessEnv(_Base):
    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, False, False, {}
