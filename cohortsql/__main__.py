"""``python -m cohortsql``: the command line, as the ``cohortsql`` script runs it."""

from cohortsql.cli import main

main()
