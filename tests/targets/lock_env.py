"""BROKEN on purpose: an env creator that closes over a threading.Lock (RLD501).

The lock is created once on the driver, when the module is imported, and the
closure captures it; RLlib must pickle the creator to ship it to every env
runner, and a lock cannot be pickled.
"""

import threading

import gymnasium as gym


def make_env_creator():
    lock = threading.Lock()  # created on the driver, captured by the closure below

    def env_creator(env_config):
        with lock:
            return gym.make("CartPole-v1")

    return env_creator


env_creator = make_env_creator()
