"""Commands that turn files into files: the heavy step as SQL (`sql`), results from its output
(`assemble`), figures (`plot`) and the HTML report (`report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cohortsql.cli.examples import examples
from cohortsql.cli.failures import _reported_failures, print_warnings_so_far
from cohortsql.cli.flags import EXPLAINED, OUTPUTS, Debug, Flags, OutcomeOption
from cohortsql.cli.options import command, pick, request, similarity
from cohortsql.errors import CohortError

REPORT_EPILOG = examples(
    "cohortsql shapley --config examples/boston.toml --out boston.parquet",
    "cohortsql report boston.parquet --target-ids 204 --out boston.html",
)


def report(
    result: Annotated[
        Path, typer.Argument(help="The long table `cohortsql shapley --out` wrote (its _totals and _paths beside it).")
    ],
    out: Annotated[Path, typer.Option(help="The report, a self-contained .html file.")],
    global_: Annotated[
        Path | None,
        typer.Option("--global", help="The table `cohortsql effects --out` wrote, for the effects' standard errors."),
    ] = None,
    target_ids: Annotated[
        str | None,
        typer.Option("--target-ids", help="Comma-separated ids of the targets drawn in full (default: the first few)."),
    ] = None,
    outcome: OutcomeOption = None,
    debug: Debug = False,
) -> None:
    """A self-contained HTML report to share: settings, diagnostics, effects, drivers, every target's reasons."""
    with _reported_failures(debug):
        from cohortsql.cli.outputs import refuse_overwriting
        from cohortsql.report import ReportTables, write_report

        refuse_overwriting([out], _result_files(result, global_))
        chosen = [value.strip() for value in target_ids.split(",") if value.strip()] if target_ids else None
        written = write_report(ReportTables.of_files(result, global_, outcome), out, chosen)
        typer.echo(f"wrote {written}")


SQL_EPILOG = examples(
    (
        "cohortsql sql examples/data/boston_predictions.parquet --prediction prediction --features lstat,rm"
        " --target-ids 3,17 --dialect spark --table analytics.boston_scores"
    ),
    "cohortsql sql scores.parquet --prediction score --id loan --features region,band --variant cells",
    (
        "cohortsql sql scores.parquet --prediction score --id loan --similar income=quantile:0.1"
        " --dialect postgres --table risk.scores --variant values"
    ),
)


SQL_ARGUMENTS = ("id", "seed", "weight", "table", "dialect", "variant", "engine", "spark_master")
"""`sql_query`'s keywords beside the similarity, the prediction and the targets."""


@command(EXPLAINED, ("targets", "sample"), SQL_ARGUMENTS)
def sql(options: Flags) -> None:
    """Print the heavy step (the similarity-mask histogram, or the cells), or the whole computation, as SQL to run where the data live.

    The query computes its own whole-table statistics.
    With --variant values (or effects) it returns the values themselves.
    `cohortsql assemble` turns a histogram's or the cells' result into the values `shapley` gives.
    """
    from cohortsql.api.printed import sql_query

    typer.echo(sql_query(options.get("data"), **request(options, SQL_ARGUMENTS)))


ASSEMBLE_EPILOG = examples(
    "cohortsql sql scores.parquet --prediction score --id loan --features age,region > histogram.sql",
    "# run histogram.sql in the warehouse; save the result as histogram.parquet",
    "cohortsql assemble histogram.parquet --features age,region --out explained.parquet",
)


@command(("histogram", "similar", "features", "method", "seed", "tolerance", "max_permutations"), OUTPUTS, ("top",))
def assemble(options: Flags) -> None:
    """Cohort Shapley values from the result of `cohortsql sql`, computed in any warehouse.

    Name the features as for `cohortsql sql`, in the same order.
    """
    from cohortsql.api.assemble import assemble as assemble_histogram
    from cohortsql.cli.outputs import write
    from cohortsql.cli.summaries import shapley_summary

    if options.get("histogram") is None:
        raise CohortError("no HISTOGRAM given: pass the file the `cohortsql sql` query's result was saved to")
    result = assemble_histogram(
        options["histogram"],
        similarity=similarity(options.get("similar"), options.get("features")),
        **pick(options, "method", "seed", "tolerance", "max_permutations"),
    )
    written = write(options, {"": result.local, "totals": result.totals, "paths": result.paths}, result.settings)
    typer.echo(shapley_summary(result, options["top"], None, print_warnings_so_far()) + written)


PLOT_KINDS = ("stacked", "stacked-squared", "effects", "target", "path", "beeswarm", "dependence")


PLOT_EPILOG = examples(
    "cohortsql shapley --config examples/boston.toml --out explained.parquet",
    "cohortsql plot explained.parquet --kind stacked --out stacked.png",
    "cohortsql plot explained.parquet --kind path --id 204 --out path.png",
)


def plot(
    result: Annotated[
        Path,
        typer.Argument(
            help="The long table `cohortsql shapley --out` wrote (its _totals and _paths beside it);"
            " for --kind effects also the table `cohortsql effects --out` wrote."
        ),
    ],
    kind: Annotated[str, typer.Option(help=f"{' | '.join(PLOT_KINDS)}.")] = "stacked",
    out: Annotated[Path | None, typer.Option(help="Where to write the figure (.png, .svg or .pdf).")] = None,
    id: Annotated[str | None, typer.Option("--id", help="The target, for --kind target and path.")] = None,
    feature: Annotated[str | None, typer.Option(help="The feature, for --kind dependence.")] = None,
    colour: Annotated[
        str | None,
        typer.Option(
            help="The feature that colours --kind dependence (default: the other one of largest mean |value|)."
        ),
    ] = None,
    outcome: OutcomeOption = None,
    debug: Debug = False,
) -> None:
    """Draw a figure of the results of `cohortsql shapley` (or, for --kind effects, `cohortsql effects`)."""
    with _reported_failures(debug):
        from cohortsql import plot as plots
        from cohortsql.cli.outputs import check_figure_path

        if kind not in PLOT_KINDS:
            raise CohortError(f"--kind must be one of {', '.join(PLOT_KINDS)}, got {kind!r}")
        if out is None:
            raise CohortError("no --out given: name the figure file, e.g. --out figure.png")
        check_figure_path(Path(out), "--out")
        from cohortsql.cli.outputs import refuse_overwriting

        refuse_overwriting([Path(out)], _result_files(result))
        if kind in ("target", "path"):
            if id is None:
                raise CohortError(f"--kind {kind} needs --id of a target")
            tables = plots.read_tables(result, outcome=outcome)
            target = _typed_id(id, tables.totals["id"].dtype)
            figure = (plots.target if kind == "target" else plots.path)(result, target, outcome=outcome)
        elif kind == "effects":
            figure = plots.effects(result, outcome=outcome)
        elif kind == "beeswarm":
            figure = plots.beeswarm(result, outcome=outcome)
        elif kind == "dependence":
            if feature is None:
                raise CohortError("--kind dependence needs --feature, the feature to draw")
            figure = plots.dependence(result, feature, colour=colour, outcome=outcome)
        else:
            figure = plots.stacked(result, squared=kind == "stacked-squared", outcome=outcome)
        figure.savefig(out, dpi=120)
        typer.echo(f"wrote {out}")


def _result_files(result: Path, *more: Path | None) -> list[Path]:
    """The files a command reads of a result: the table, the companions beside it, and `more`."""
    from cohortsql.formats.files import COMPANIONS, sibling_path

    return [result, *(sibling_path(result, label) for label in COMPANIONS), *(path for path in more if path)]


def _typed_id(text: str, dtype: Any) -> Any:
    """An --id given as text, converted to the type of the result's id column."""
    if dtype.is_integer():
        try:
            return int(text)
        except ValueError:
            raise CohortError(f"--id {text!r}: this result's ids are integers") from None
    return text
