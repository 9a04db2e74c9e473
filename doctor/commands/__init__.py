"""What each command does once click has parsed its options (rldoctor.cli holds only the
options and the error handling): `check.py`, `collect.py`, `lint.py`,
`smoke_train.py`, `watch.py`, `preflight.py`, `list.py`, `explain.py`; `_options.py` the option parsing they
share (--only/--skip lists, --set). A new command's
logic goes here, one module per command."""
