"""The `cohortsql` command line: the typer app and its commands' registration.

The commands live by what they do: `cohortsql.cli.compute` computes (shapley, effects, uniqueness,
game, compare, audit, fairness, calibrate) and `cohortsql.cli.files` turns files into files (sql, assemble, plot, report).
The vocabulary is the Python API's: `shapley` is `cohortsql.cohort_shapley` (local values), `effects`
is `cohortsql.shapley_effects` (global). `run` and `global` are the earlier names of the same commands.
"""

from __future__ import annotations

import sys

import typer

from cohortsql.cli.compute import (
    AUDIT_EPILOG,
    CALIBRATE_EPILOG,
    COMPARE_EPILOG,
    EFFECTS_EPILOG,
    FAIRNESS_EPILOG,
    GAME_EPILOG,
    INSERTION_EPILOG,
    SHAPLEY_EPILOG,
    UNIQUENESS_EPILOG,
    audit,
    calibrate,
    compare,
    effects,
    fairness,
    game,
    insertion_deletion,
    shapley,
    uniqueness,
)
from cohortsql.cli.files import (
    ASSEMBLE_EPILOG,
    PLOT_EPILOG,
    REPORT_EPILOG,
    SQL_EPILOG,
    assemble,
    plot,
    report,
    sql,
)

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

APP_HELP = (
    "Explain decisions in prediction tables with cohort Shapley values (Mase, Owen & Seiler), using only"
    " rows that exist. Data may be Parquet, CSV or JSON files, a DuckDB table (FILE.duckdb:TABLE)"
    " or a SQL query; `cohortsql COMMAND --help` shows its options and examples."
)


@app.callback(help=APP_HELP)
def cohortsql() -> None:
    """The commands' group (its help is APP_HELP: one paragraph, which the terminal wraps)."""


app.command("shapley", epilog=SHAPLEY_EPILOG)(shapley)
app.command("effects", epilog=EFFECTS_EPILOG)(effects)
app.command("uniqueness", epilog=UNIQUENESS_EPILOG)(uniqueness)
app.command("game", epilog=GAME_EPILOG)(game)
app.command("compare", epilog=COMPARE_EPILOG)(compare)
app.command("audit", epilog=AUDIT_EPILOG)(audit)
app.command("fairness", epilog=FAIRNESS_EPILOG)(fairness)
app.command("calibrate", epilog=CALIBRATE_EPILOG)(calibrate)
app.command("insertion-deletion", epilog=INSERTION_EPILOG)(insertion_deletion)
app.command("report", epilog=REPORT_EPILOG)(report)
app.command("sql", epilog=SQL_EPILOG)(sql)
app.command("assemble", epilog=ASSEMBLE_EPILOG)(assemble)
app.command("plot", epilog=PLOT_EPILOG)(plot)
app.command("run", epilog=SHAPLEY_EPILOG, help="The earlier name of `shapley`.")(shapley)
app.command("global", epilog=EFFECTS_EPILOG, help="The earlier name of `effects`.")(effects)


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
        typer.echo(f"cohortsql: error: {message} (see cohortsql --help)", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
