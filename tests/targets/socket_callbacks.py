"""BROKEN on purpose: a training script whose callbacks class holds an open socket (RLD501).

Run as a script (`python socket_callbacks.py`), everything defined here travels
to the env runners by value, the class attributes included: the socket opened
at import goes with `MetricsCallbacks` and cannot be pickled. Point rldoctor at
the file (`--target tests/targets/socket_callbacks.py:MetricsCallbacks`), which
it serializes the way Ray ships a script's objects.
"""

import socket

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.callbacks.callbacks import RLlibCallback


class TelemetryClient:
    """Sends one UDP datagram per episode to a metrics agent."""

    def __init__(self, host, port):
        self.address = (host, port)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # opened at import

    def send(self, text):
        self._socket.sendto(text.encode(), self.address)


class MetricsCallbacks(RLlibCallback):
    telemetry = TelemetryClient("127.0.0.1", 9)  # one client for the class, made on the driver

    def on_episode_end(self, *, episode, **kwargs):
        self.telemetry.send(f"episode_return={episode.get_return()}")


config = PPOConfig().environment("CartPole-v1").callbacks(MetricsCallbacks)
