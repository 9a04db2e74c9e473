"""`rldoctor smoke-train`: prove the cluster trains (PPO on CartPole-v1 over its nodes).

    run.py      the driver: settings, placement, the run and its figures (rldoctor.smoke.run)
    remote.py   the actor that hosts RLlib on the cluster, shipped by value (stdlib + ray)
    report.py   the figures as text and Markdown, and the learning-curve plot

The command itself (options parsed, report written, exit code) is rldoctor.commands.smoke_train.
"""
