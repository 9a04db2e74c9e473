"""The user's env as a module of its own (tests/failed_training.py --env-module): a package
installed on some nodes only, which the others cannot import."""

from failed_training import WarehouseCartPole


class WarehouseEnv(WarehouseCartPole):
    pass
