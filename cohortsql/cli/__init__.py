"""The `cohortsql` command line: explain a prediction table from the shell.

Commands: `shapley` (cohort Shapley values of every target; `run` is the earlier name), `effects`
(Shapley effects; `global`), `sql` (the heavy step as SQL for a warehouse), `assemble` (results
from that SQL's output) and `plot`. Every failure a user can cause prints one line on stderr and
exits with status 2 (``--debug`` shows the traceback instead); Ctrl-C stops a run within a second
or two, prints one line and exits with status 130, leaving no partial file. Only typer is imported
to describe the commands; the computations load when a command runs.
"""

from cohortsql.cli.app import app, main

__all__ = ["app", "main"]
