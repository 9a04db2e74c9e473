"""FIXED: the same env, callbacks and config, with resources made where they are used.

The lock is created in the env's `__init__` and the socket on first use, so
each env runner makes its own; nothing unpicklable or large travels.
"""

import socket
import threading

import gymnasium as gym
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.callbacks.callbacks import RLlibCallback


class LockedCartPole(gym.Wrapper):
    def __init__(self, env_config=None):
        super().__init__(gym.make("CartPole-v1"))
        self._lock = threading.Lock()  # made on the env runner, in __init__

    def step(self, action):
        with self._lock:
            return self.env.step(action)


def env_creator(env_config):
    return LockedCartPole(env_config)


class MetricsCallbacks(RLlibCallback):
    address = ("127.0.0.1", 9)  # plain data travels; the socket is opened on first use
    _socket = None

    def on_episode_end(self, *, episode, **kwargs):
        if self._socket is None:
            self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.sendto(f"episode_return={episode.get_return()}".encode(), self.address)


config = (PPOConfig().environment(LockedCartPole, env_config={"table_path": "/data/table.npy"})
          .callbacks(MetricsCallbacks))
