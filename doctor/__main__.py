"""`python -m rldoctor`: the same command line as the `rldoctor` console script (rldoctor.cli)."""

from rldoctor.cli import main

main()
