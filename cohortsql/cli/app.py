"""The `cohortsql` command line: the typer app and its commands' registration.

The commands live by what they do: `cohortsql.cli.compute` computes (shapley, effects, uniqueness,
game, compare, audit, fairness, calibrate) and `cohortsql.cli.files` turns files into files (sql, assemble, plot, report).
The vocabulary is the Python API's: `shapley` is `cohortsql.cohort_shapley` (local values), `effects`
is `cohortsql.shapley_effects` (global). `run` and `global` are the earlier names of the same commands.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from cohortsql.cli import compute, files

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

APP_HELP = (
    "Explain decisions in prediction tables with cohort Shapley values (Mase, Owen & Seiler), using only"
    " rows that exist. Data may be Parquet, CSV or JSON files, a DuckDB table (FILE.duckdb:TABLE)"
    " or a SQL query; `cohortsql COMMAND --help` shows its options and examples."
)


@app.callback(help=APP_HELP)
def cohortsql() -> None:
    """The commands' group (its help is APP_HELP: one paragraph, which the terminal wraps)."""


COMMANDS: dict[str, tuple[Callable[..., None], str, str]] = {
    "shapley": (compute.shapley, compute.SHAPLEY_EPILOG, ""),
    "effects": (compute.effects, compute.EFFECTS_EPILOG, ""),
    "uniqueness": (compute.uniqueness, compute.UNIQUENESS_EPILOG, ""),
    "game": (compute.game, compute.GAME_EPILOG, ""),
    "compare": (compute.compare, compute.COMPARE_EPILOG, ""),
    "audit": (compute.audit, compute.AUDIT_EPILOG, ""),
    "fairness": (compute.fairness, compute.FAIRNESS_EPILOG, ""),
    "calibrate": (compute.calibrate, compute.CALIBRATE_EPILOG, ""),
    "insertion-deletion": (compute.insertion_deletion, compute.INSERTION_EPILOG, ""),
    "report": (files.report, files.REPORT_EPILOG, ""),
    "sql": (files.sql, files.SQL_EPILOG, ""),
    "assemble": (files.assemble, files.ASSEMBLE_EPILOG, ""),
    "plot": (files.plot, files.PLOT_EPILOG, ""),
    "run": (compute.shapley, compute.SHAPLEY_EPILOG, "The earlier name of `shapley`."),
    "global": (compute.effects, compute.EFFECTS_EPILOG, "The earlier name of `effects`."),
}
"""Each command's function, the examples its help ends with and its help where that is not the
function's docstring, in the order the help lists them."""

EARLIER_NAMES = ("run", "global")
"""Commands kept under their earlier names, which the help no longer lists."""

for name, (function, epilog, help) in COMMANDS.items():
    app.command(name, epilog=epilog, help=help or None, hidden=name in EARLIER_NAMES)(function)


_USAGE_ERROR: type[Exception] = typer.BadParameter.__mro__[1]
"""Click's UsageError (a misspelled command or option, a missing value), which typer exports only
through its subclass `typer.BadParameter`."""


def main() -> None:
    """Entry point of the `cohortsql` script: a mistyped command or option is one line and status 2,
    like every other failure."""
    try:
        code = app(standalone_mode=False, prog_name="cohortsql")
    except _USAGE_ERROR as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # no arguments: the help, as asked for
            typer.echo(str(error))
            sys.exit(0)
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        context = getattr(error, "ctx", None)
        named = next((f"cohortsql {word}" for word in sys.argv[1:2] if word in COMMANDS), "cohortsql")
        command = getattr(context, "command_path", None) or named  # the command the mistake is in
        typer.echo(f"cohortsql: error: {message} (see {command} --help)", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
