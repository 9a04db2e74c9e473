"""Inputs that need no cluster (client side).

    runs.py           `--run PATH`: Tune result files, read into run records
    targets.py        `--target MODULE:ATTR`: the user's own objects, imported here
"""
