"""The diagnosis pipeline: where checks come from (registry), how they run (runner), what a
team accepted (muting), the checks' own documentation (docs), and the one path from a
snapshot or lint sources to a Report (pipeline.Diagnosis), used by every command.

Client side: imports neither ray nor torch.
"""
