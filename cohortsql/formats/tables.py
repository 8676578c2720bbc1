"""What the per-target results share: the diagnostics that say how far to trust the values
(singletons, cohort sizes, narrow features), each target's feature values as text, per-group tables
and standard errors with the finite-population correction.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypedDict

import numpy as np
import polars as pl

from cohortsql.errors import CohortError, warn
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric.bootstrap import BIAS_CORRECTED as BIAS_CORRECTED  # the intervals in words, for the surfaces
from cohortsql.numeric.dividends import sets_up_to
from cohortsql.numeric.shapley import TIE_TOLERANCE, tie_steps
from cohortsql.request.arguments import whole_number
from cohortsql.request.similarity import Similarity

NARROW_SHARE = 0.01
"""A feature is narrow for a target when similarity on it alone keeps at most this share of the table."""


BROAD_SHARE = 0.9
"""A feature is broad for a target when similarity on it alone keeps more than this share of the table."""

SINGLETON_WARNING_SHARE = 0.5
"""More than this share of targets in a cohort of one row gets a `CohortWarning`."""
SMALL_GROUP = 30
"""A group of fewer targets than this is flagged where its mean is shown (the audit's words and
report): its mean value and gap rest on a handful of rows (a group of 6 once read "-1207% of the
group's gap")."""

BROAD_WARNING_SHARE = 0.5
"""A feature broad for more than this share of the targets gets a `CohortWarning`."""


def warn_about_cohorts(
    checks: Diagnostics, kinds: Mapping[str, Similarity], compared_exactly: Collection[str] = ()
) -> None:
    """Warn when most targets' cohorts on every feature are the target alone, and when a feature's
    similarity keeps nearly the whole table for most targets (it can then earn little credit,
    whatever the model does with it: a default window over skewed numbers does this), with advice
    that fits the feature's kind: a narrower setting of its kind (`Similarity.narrower`), a stricter
    predicate, or nothing for an exact comparison (a common level is the data's, not a setting's),
    which is what a window narrower than the gap between a feature's values is (`compared_exactly`:
    chas, 0 or 1 under quantile:0.1, warned "narrow it" at every step of its own advice)."""
    share = checks.get("singleton_share", 0.0)
    if share > SINGLETON_WARNING_SHARE:
        warn(
            f"{share:.0%} of the targets end in a cohort of one row: the explanation then rests on single rows;"
            " widen windows or use fewer features"
        )
    for name, broad in checks.get("broad_features", {}).items():
        kind = kinds.get(name)
        narrower = None if kind is None else kind.narrower()
        if broad <= BROAD_WARNING_SHARE or kind is None or (kind.equivalence and narrower is None):
            continue
        if name in compared_exactly:
            continue
        advice = f"narrow it, e.g. {name}={narrower}" if narrower is not None else "make its predicate stricter"
        warn(
            f"similarity on {name!r} alone ({kind}) keeps over {BROAD_SHARE:.0%} of the table for {broad:.0%} of"
            f" the targets, so {name!r} can earn little credit: {advice}"
        )


class Diagnostics(TypedDict, total=False):
    """How far to trust a run's values (`diagnostics`): how many targets and subjects, and how much of
    the explanation rests on tiny cohorts."""

    targets: int | float
    subjects: int | float
    singleton_share: float
    unique_share: float
    """Games of cohort sizes: the share of targets alone in their cohort on every feature."""
    median_cohort_size: float
    narrow_features: dict[str, float]
    broad_features: dict[str, float]


def diagnostics(
    cohort_size: np.ndarray,
    feature_cohort_size: np.ndarray,
    features: tuple[str, ...],
    subjects: float,
    weights: np.ndarray | None = None,
) -> Diagnostics:
    """How much of the explanation rests on tiny cohorts.

    ``singleton_share``: share of targets whose cohort on every feature is the target alone (of size
    1; with case weights, of weight 1); ``median_cohort_size``: the median of those cohorts' sizes;
    ``narrow_features``: per feature, the share of targets for which similarity on that feature alone
    keeps at most 1% of the table (of its `subjects`, their total weight when weighted);
    ``broad_features``: the share for which it keeps more than `BROAD_SHARE` of it. `weights` count
    how many targets each row stands for (default one each)."""
    weights = np.ones(len(cohort_size)) if weights is None else np.asarray(weights, dtype=float)
    total = weights.sum()
    order = np.argsort(cohort_size, kind="stable")
    cumulative = np.cumsum(weights[order])
    median = float(cohort_size[order][np.searchsorted(cumulative, total / 2)]) if total else float("nan")
    narrow = feature_cohort_size <= NARROW_SHARE * subjects
    broad = feature_cohort_size > BROAD_SHARE * subjects
    return {
        "targets": int(round(total)) if float(total).is_integer() else float(total),
        "subjects": int(subjects) if float(subjects).is_integer() else float(subjects),
        "singleton_share": float(weights @ (cohort_size == 1) / total) if total else float("nan"),
        "median_cohort_size": median,
        "narrow_features": {name: float(weights @ narrow[:, index] / total) for index, name in enumerate(features)},
        "broad_features": {name: float(weights @ broad[:, index] / total) for index, name in enumerate(features)},
    }


def feature_texts(targets: pl.DataFrame, features: tuple[str, ...], count: int) -> np.ndarray:
    """Each of `count` targets' value of each feature as text (None when missing or not among the
    columns of `targets`), shape (targets, features)."""
    present = set(targets.columns)  # once: asking the frame for its columns per feature costs d^2 at d = 1,024
    columns = [
        targets[name].cast(pl.String, strict=False).to_list() if name in present else [None] * count
        for name in features
    ]
    return np.array(columns, dtype=object).T.reshape(count, len(features))


def target_groups(targets: pl.DataFrame, column: str) -> tuple[pl.DataFrame, np.ndarray]:
    """The sorted distinct values of `column` among the targets, and each target's group number."""
    if column not in targets.columns:
        raise CohortError(f"by({column!r}): no such column in the data; its columns are: {', '.join(targets.columns)}")
    keys = targets.select(column)
    groups = keys.unique(maintain_order=True).sort(column, nulls_last=True)
    number = keys.join(groups.with_row_index("__cohort_group"), on=column, how="left", nulls_equal=True)[
        "__cohort_group"
    ].to_numpy()
    return groups, number


def group_table(
    column: str,
    groups: pl.DataFrame,
    number: np.ndarray,
    features: tuple[str, ...],
    weights: np.ndarray,
    arrays: Mapping[str, np.ndarray],
) -> pl.DataFrame:
    """Per group and feature: the number of targets, and for each (targets, features) array in
    `arrays` its weighted group mean and standard error (the group's targets treated as a sample)."""
    count = len(groups)
    columns: dict[str, np.ndarray] = {}
    for name, values in arrays.items():
        columns[name] = bootstrap_module.group_means(values[:, None, :], weights[:, None], number, count)[:, 0]
        columns[f"{name}_se"] = np.stack(
            [standard_error(values[number == group], None, None, weights[number == group]) for group in range(count)]
        )
    d = len(features)
    return pl.DataFrame(
        {
            column: groups[column].gather(np.repeat(np.arange(count), d)),
            "feature": pl.Series(list(features) * count, dtype=pl.String),
            "targets": np.repeat(np.bincount(number, minlength=count), d),
            **{name: array.reshape(-1) for name, array in columns.items()},
        }
    )


def standard_error(
    values: np.ndarray,
    population: int | None,
    monte_carlo_se: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Standard error of the column means of `values` (targets x features) as estimates of the
    population's means; the finite-population correction applies when `population` is known.

    With case `weights`, the mean is weighted and its variance is estimated as
    T / (T - 1) sum_t p_t^2 (x_t - xbar)^2 with p_t = w_t / sum w (the unweighted formula when the
    weights are equal). With Monte Carlo estimates (`monte_carlo_se` per value), the correction only
    applies to the sampling of targets, so their own error is added back: the mean of the targets'
    estimates has Monte Carlo variance sum_t se_t^2 / T^2 even when every row is a target. Targets of
    weight 0 (explained beside a sample by ``include=``) are not of the T."""
    targets = values.shape[0] if weights is None else int(np.count_nonzero(weights))
    if targets < 2:
        return np.full(values.shape[1], np.nan)
    shares = np.full(targets, 1.0 / targets) if weights is None else np.asarray(weights, dtype=float) / np.sum(weights)
    deviations = values - shares @ values
    variance = targets / (targets - 1) * (shares**2) @ deviations**2
    if population is not None:
        variance *= max(0.0, 1 - targets / population)
        if monte_carlo_se is not None:
            variance += (shares**2) @ monte_carlo_se**2
    return np.sqrt(variance)


def by_importance(table: pl.DataFrame, column: str) -> pl.DataFrame:
    """A per-feature table with its most important feature first (largest `column`). Values within
    `TIE_TOLERANCE` of each other (relative to the largest) are ties and keep the features' order, as
    in `importance_order`: rounding noise (another engine, another summation order) never reorders
    features that are equally important. Missing values come last."""
    steps = pl.Series(tie_steps(table[column].cast(pl.Float64).to_numpy()), nan_to_null=True)
    order = (
        pl.DataFrame({"step": steps})
        .with_row_index()
        .sort("step", descending=True, nulls_last=True, maintain_order=True)
    )
    return table[order["index"].to_list()]


def anchored_table(
    features: Sequence[str], terms: np.ndarray | None, computed: int, max_order: int | None
) -> pl.DataFrame:
    """The anchored terms g_T of `terms` (..., the sets of `sets_up_to(d, computed)`) for the sets of
    at most `max_order` features (None: every one computed), one row per set (per row of `terms`'
    leading axis first): ``term`` (the features joined by " & "), ``order`` (|T|) and ``anchored`` (g_T)."""
    if terms is None:
        raise CohortError("this result has no anchored terms: run with anchored=K (the largest set size wanted)")
    d = len(features)
    if max_order is not None:
        max_order = whole_number("max_order", max_order, minimum=1)
    if max_order is not None and not 1 <= max_order <= computed:
        raise CohortError(
            f"max_order must be 1..{computed} (the run computed sets of up to {computed} features), got {max_order}"
        )
    sets = sets_up_to(d, computed)
    keep = [index for index, members in enumerate(sets) if max_order is None or int(members).bit_count() <= max_order]
    names = [" & ".join(features[j] for j in range(d) if int(sets[index]) >> j & 1) for index in keep]
    rows = int(np.prod(terms.shape[:-1]))
    return pl.DataFrame(
        {
            "term": pl.Series(names * rows, dtype=pl.String),
            "order": np.tile([int(sets[index]).bit_count() for index in keep], rows),
            "anchored": terms[..., keep].reshape(-1),
        }
    )


SHOWN_DIGITS = 4
"""Significant digits of a fractional feature value shown to people (tables keep every digit)."""


def shown_value(value: str = "feature_value") -> pl.Expr:
    """A feature's value (text) as people read it: a fractional number with `SHOWN_DIGITS`
    significant digits (10.600000381469728 reads 10.6), anything else as it is (integers, text,
    dates, missing values)."""
    number = pl.col(value).cast(pl.Float64, strict=False)
    fractional = number.is_finite() & (number != number.floor())
    return pl.when(fractional).then(number.round_sig_figs(SHOWN_DIGITS).cast(pl.String)).otherwise(pl.col(value))


def reason(feature: str = "feature", value: str = "feature_value", shapley: str = "shapley") -> pl.Expr:
    """A value in words, as every surface shows it, from a frame's columns: "sex = male lowered the
    cohort mean by 0.31" (a missing value reads ``missing``; the value is `shown_value`, the amount has
    3 significant digits). An amount within rounding of zero for the frame's largest (`TIE_TOLERANCE`
    of it: relative, the same words at any scale) "did not move the cohort mean"."""
    amount = pl.col(shapley).abs()
    moved = amount > TIE_TOLERANCE * amount.max()
    return pl.format(
        "{} = {} {}",
        pl.col(feature),
        shown_value(value).fill_null("missing"),
        pl.when(~moved)
        .then(pl.lit("did not move the cohort mean"))
        .otherwise(
            pl.format(
                "{} the cohort mean by {}",
                pl.when(pl.col(shapley) >= 0).then(pl.lit("raised")).otherwise(pl.lit("lowered")),
                amount.map_batches(_three_digits, return_dtype=pl.String),
            )
        ),
    )


def _three_digits(values: pl.Series) -> pl.Series:
    """Numbers with 3 significant digits (``0.0794``, ``7.94e-11``), as people write them."""
    return pl.Series(np.char.mod("%.3g", values.cast(pl.Float64).to_numpy()).astype(str), dtype=pl.String)


KINDS_SHOWN = 100
"""Features whose kind a summary lists one per line; a wider table's are in the settings written with
its results (``similarity``, ``default_kinds``, ``windows``)."""


def default_kinds_in_words(settings: Mapping[str, Any], shown: int = KINDS_SHOWN) -> list[str]:
    """Every feature's similarity kind, why it got it when it was chosen by default, and a window's
    half-width in the feature's units (from the settings' ``similarity``, ``default_kinds`` and
    ``windows``); nothing when every kind was given and none is a window."""
    kinds, reasons = settings.get("similarity") or {}, settings.get("default_kinds") or {}
    windows = settings.get("windows") or {}
    if not reasons and not windows:
        return []
    width = max(len(name) for name in kinds)
    lines = ["similarity per feature (similarity= / --similar NAME=KIND sets one):"]
    for name, kind in list(kinds.items())[:shown]:
        notes = [f"window ±{windows[name]:.4g}"] if name in windows else []
        notes += [f"by default: {reasons[name]}"] if name in reasons else []
        lines.append(f"  {name:<{width}}  {kind:<14} {'; '.join(notes)}".rstrip())
    if len(kinds) > shown:
        lines.append(f"  ... and {len(kinds) - shown:,} more (every one in the settings written with the results)")
    return lines


def group_name(protected: str, label: str) -> str:
    """A group as words say it: ``region = 'n'``, ``age in [30, 50)``, ``age < 30``, ``age >= 50``."""
    if label.startswith(("<", ">=")):
        return f"{protected} {label}"
    if label.startswith("[") and label.endswith((")", "]")):
        return f"{protected} in {label}"
    return f"{protected} = {label}"


def effects_table(features: tuple[str, ...], effects: np.ndarray, errors: np.ndarray, variance: float) -> pl.DataFrame:
    """Per feature, in the features' order: the effect, its standard error and its share of `variance`."""
    return pl.DataFrame(
        {
            "feature": list(features),
            "shapley_effect": effects,
            "shapley_effect_se": errors,
            "share": effects / variance if variance > 0 else np.full(len(effects), np.nan),
        }
    )


def effects_of_tables(
    local: pl.DataFrame, totals: pl.DataFrame, paths: pl.DataFrame, settings: Mapping[str, Any]
) -> pl.DataFrame:
    """`CohortShapleyResult.global_`'s effects from the tables `cohortsql shapley --out` writes: per
    feature the mean Shapley value of the squared game, its standard error (with the finite-population correction when
    the targets are every row or a sample of them) and its share of the targets' spread around the mean."""
    wide = local.pivot(on="feature", index="id", values="shapley_squared", maintain_order=True)
    features = [name for name in wide.columns if name != "id"]
    squared = wide.select(features).to_numpy()
    errors = None
    if "shapley_squared_se" in local.columns:
        estimated = local.pivot(on="feature", index="id", values="shapley_squared_se", maintain_order=True)
        errors = estimated.select(features).to_numpy()
    subjects = paths.filter(pl.col("step") == 0)["cohort_size"]
    every_row = settings.get("targets", "every row") == "every row" and len(subjects)
    population = int(subjects[0]) if every_row else None
    mean = (totals["cohort_mean"] - totals["value"]).to_numpy()
    spread = float(np.mean((totals["prediction"].to_numpy() - mean) ** 2))
    table = effects_table(tuple(features), squared.mean(axis=0), standard_error(squared, population, errors), spread)
    return by_importance(table, "shapley_effect")


ROUNDING = 1e-12
"""A value smaller than this times the prediction's spread (its standard deviation) is floating-point
rounding of an exact zero, and is shown to people as 0; relative, so that the same table at any scale
reads the same. A share (a ratio) below it reads as 0%."""


def rounded(value: float, scale: float, *, signed: bool = False) -> str:
    """A value for people: 4 significant digits, rounding noise (relative to `scale`) as 0."""
    if not abs(value) > ROUNDING * scale:
        return "0"
    return f"{value:+.4g}" if signed else f"{value:.4g}"


def percent(value: float) -> str:
    """A share for people: two significant digits below 10%, one decimal above, rounding noise as 0%."""
    if abs(value) < ROUNDING:
        return "0%"
    return f"{100 * value:.2g}%" if abs(value) < 0.1 else f"{100 * value:.1f}%"


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def effect_floors(table: pl.DataFrame) -> list[float | None] | None:
    """Each row's floor in the effects' own units (the null reference's ``null_share_high`` times the
    variance the shares divide by), None for a feature without copies; None without a null reference."""
    if "null_share_high" not in table.columns:
        return None
    pairs = [(row["shapley_effect"], row["share"]) for row in table.iter_rows(named=True) if row["share"]]
    variance = sum(effect for effect, _ in pairs) / sum(share for _, share in pairs) if pairs else 0.0
    return [None if high is None else high * variance for high in table["null_share_high"].to_list()]
