"""`python -m cohortsql.cli`: the command line."""

from cohortsql.cli.app import main

main()
