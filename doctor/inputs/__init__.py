"""Inputs that need no cluster (client side).

    runs.py           `--run PATH`: Tune result files, read into run records
    targets.py        `--target MODULE:ATTR`: the user's own objects, imported here
    training.py       preflight's TARGET: a config, a script that builds one, a checkpoint
    plan_reader.py    training.py's plan, read in a child process beside the join (bounded)
    source.py         what a `--from` input is, decided in one place, and the reader it goes to
    logdir/           `--from DIR`: the logs a dead cluster left, read against Ray's lines
"""
