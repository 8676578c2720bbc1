"""The method and path a call takes, its limits, and how many targets a batch may hold.

``exact`` up to `MAX_EXACT_FEATURES` (``auto``: up to `AUTO_EXACT_FEATURES`), ``permutation`` up to
`MAX_FEATURES`; the grouping-sets path when every kind is an equivalence and there are enough targets;
batches bounded by the memory budget (every array a batch allocates) and paced by time (`Pacer`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal

from cohortsql import queries
from cohortsql._typing import PATHS
from cohortsql.engines.base import Engine
from cohortsql.errors import CohortError, check_choice, warn
from cohortsql.request.options import Terms
from cohortsql.run.grouping_sets import grouping_sets_batches
from cohortsql.run.integrated import integrated_batch_size, integrated_batches
from cohortsql.run.pace import SECONDS_PER_BATCH, WIDE_BATCH_SECONDS, Pacer
from cohortsql.run.pairwise import pairwise_batches, permutation_batches
from cohortsql.run.preparation import Prepared
from cohortsql.run.progress import Reporter
from cohortsql.run.route import ChosenMethod, Route
from cohortsql.run.targets import TargetSet

ENGINE_GROUP_BYTES = 96
"""What the engine holds per histogram group while it aggregates and hands the result over as Arrow,
beyond the numpy arrays (measured on DuckDB 2.0: 41 targets x 100,000 masks at d = 20 peaked 700 MB
above the process's 355 MB, about 170 bytes per group, 64 of them the numpy arrays)."""


HISTOGRAM_ROW_BYTES = 64
"""Memory one histogram row takes in numpy for the permutation method (target, mask words, count and
sum, sorted copies and unpacked bits); a batch has at most one row per target and subject row."""


VALUE_BYTES = 8 * 3
"""Each cohort value of a batch's output (phi, phi^2, the refinement path ...) is a float64 held about
three times: as computed, as kept, and sorted for the intervals."""


def exact_batch_size(prepared: Prepared, *, by_cells: bool) -> int:
    """The most targets whose arrays fit the batch memory budget: on the pairwise path their histogram
    entries for every game (at most min(subject rows, 2^d) per target; the dense 2^d arrays are built
    a cache-sized chunk at a time) and the values of every game, on the lattice path their 2^d sizes
    and values of every game."""
    measures, d, players = prepared.measures, prepared.d, prepared.players
    games, weightings = max(1, measures.games), measures.weightings
    if by_cells:
        per_target = 8 * ((weightings + 2 * games) << d)
    else:
        # The histogram's columns, twice (as fetched and sorted), and the engine's own copy while it
        # aggregates; the games' entries are formed a run at a time; the values of all games.
        columns = math.ceil(d / queries.histogram.MASK_WORD_BITS) + 1 + weightings + games
        per_target = min(prepared.subject_rows, 1 << d) * (2 * 8 * columns + ENGINE_GROUP_BYTES)
        per_target += games * (6 * players + 2) * VALUE_BYTES
    return max(1, prepared.batch_bytes // per_target)


def permutation_batch_size(prepared: Prepared) -> int:
    """The most targets whose histograms (at most one row per subject row each) fit the budget."""
    return max(1, prepared.batch_bytes // HISTOGRAM_ROW_BYTES // max(1, prepared.subject_rows))


MAX_EXACT_FEATURES = 24
"""Exact cohort Shapley keeps 2^d values per target; beyond this d it needs more memory than it is worth."""


MAX_FEATURES = 128
"""The permutation method handles up to this many features."""

MAX_INTEGRATED_FEATURES = 10_000
"""The integrated method handles up to this many players (its histogram has 2 + 2d sums a measure)."""


def feature_limit(method: str) -> int:
    """The most features a cohort Shapley call with `method` may have (``auto`` goes on to integrated)."""
    return MAX_INTEGRATED_FEATURES if method in ("integrated", "auto") else MAX_FEATURES


AUTO_EXACT_FEATURES = 16
"""``method="auto"`` is exact up to this d (at most 65,536 cohorts per target), permutation above."""


def make_pacer(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    route: Route,
    report: Reporter,
    pilot_only: bool = False,
    pilot_share: float = 0.5,
) -> Pacer:
    """Batches of targets for a computation: bounded by memory, paced by time (not the lattice walk)."""
    memory = (
        permutation_batch_size(prepared)
        if route.random
        else integrated_batch_size(prepared)
        if route.integrated
        else exact_batch_size(prepared, by_cells=route.by_cells)
    )
    measures = prepared.measures
    distinct = targets.distinct.num_rows
    return Pacer(
        total=distinct,
        memory_batch=memory,
        pairs_per_target=prepared.subject_rows,
        reporter=report,
        sums_per_pair=(measures.weightings + measures.games + 1) / 3,
        seconds_per_batch=WIDE_BATCH_SECONDS if measures.replicates else SECONDS_PER_BATCH,
        paced=not route.by_cells,
        pilot_only=pilot_only,
        pilot_share=pilot_share,
        cells_per_target=(max(1, measures.games) << prepared.players) if route.exact else 0,
        unit="targets" if distinct == targets.count else f"distinct targets of {targets.count:,}",
    )


def local_batches(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    route: Route,
    pacer: Pacer,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
    interactions: bool = False,
) -> Iterator[Any]:
    """The batches of values of the `route`'s driver (exact `CohortShapley`, lists of estimates, with
    `interactions` each with its interaction values, or `IntegratedBatch`es)."""
    if route.integrated:
        return integrated_batches(engine, prepared, targets, pacer)
    if route.random:
        return permutation_batches(
            engine,
            prepared,
            targets,
            pacer,
            seed=seed,
            max_permutations=max_permutations,
            tolerance=tolerance,
            interactions=interactions,
        )
    if route.by_cells:
        return grouping_sets_batches(engine, prepared, targets, pacer)
    return pairwise_batches(engine, prepared, targets, pacer)


def choose_method(method: str, d: int, game: Literal["cohort", "baseline", "game"] = "cohort") -> ChosenMethod:
    """``exact``, ``permutation`` or (cohort Shapley's games) ``integrated`` for `d` features of `game`
    (``auto``: exact up to the game's automatic limit, permutation up to `MAX_FEATURES`, integrated
    beyond, said in a warning; an explicit method beyond its hard limit is refused)."""
    auto_exact_up_to, exact_up_to, work = _EXACT_LIMITS[game]
    if game == "cohort" and method == "integrated":
        return "integrated"
    if game == "cohort" and d > MAX_FEATURES and method in ("auto", "permutation"):
        if method == "permutation":
            raise CohortError(
                f"the permutation method handles at most {MAX_FEATURES} features; got {d}: use"
                " method='integrated' (integrated gradient cohort Shapley, O(n d) per target), or drop features"
            )
        warn(
            f"method='auto' chose the integrated gradient approximation of cohort Shapley (IGCS) for {d} features:"
            f" beyond {MAX_FEATURES} features neither every cohort nor random orders of them are affordable. IGCS"
            " equals cohort Shapley where the cohort mean is multilinear on the cube's corners and approximates it"
            " otherwise; its values add up as cohort Shapley's do (method='integrated' says so without this warning)"
        )
        return "integrated"
    if method == "integrated":
        raise CohortError(
            "method='integrated' (integrated gradient cohort Shapley) values cohort Shapley's own games;"
            " this method takes 'exact', 'permutation' or 'auto'"
        )
    if method == "auto":
        return "exact" if d <= auto_exact_up_to else "permutation"
    if method == "exact" and d > exact_up_to:
        raise CohortError(
            f"the exact method handles at most {exact_up_to} features ({work}); got {d}:"
            " use method='permutation' (or 'auto'), or drop features"
        )
    return "permutation" if method == "permutation" else "exact"


def check_interactions(terms: Terms, asked: str, route: Route, d: int, *, estimated: bool = False) -> None:
    """Interaction values come from each target's exact lattice of cohorts, or (`estimated`: a target's
    own values) from the permutations that estimate its values; the variance game's need the exact
    method (the `route` chosen from the `asked` one). Anchored terms come from every cohort of the lattice."""
    if terms.interactions and not route.exact and not estimated:
        raise CohortError(
            f"interactions=True for Shapley effects needs method='exact' (up to {MAX_EXACT_FEATURES} features);"
            f" with {d} features and method={asked!r} the effects are estimated by permutations:"
            " cohort_shapley(interactions=True) estimates each target's interaction values with them"
        )
    if terms.anchored and not route.exact:
        raise CohortError(
            f"anchored={terms.anchored} needs method='exact' (up to {MAX_EXACT_FEATURES} features): the"
            " anchored terms come from every cohort of the lattice"
        )


def check_owen(route: Route, prepared: Prepared) -> None:
    """Owen values come from each union's exact reduced game (every other group whole, the union's
    members alone): refused by permutations, or where a reduced game has more than
    `MAX_EXACT_FEATURES` players."""
    groups = prepared.groups
    if groups is None or groups.values != "owen":
        return
    if not route.exact:
        raise CohortError(
            f"group_values=\"owen\" needs method='exact' ({prepared.players} players here); the permutation"
            ' method estimates the groups\' values (group_values="players")'
        )
    widest = max(groups.members, key=len)
    size = len(groups.members) - 1 + len(widest)
    if size > MAX_EXACT_FEATURES:
        name = groups.names[groups.members.index(widest)]
        raise CohortError(
            f"Owen values of group {name!r} need a game of {size} players (the {len(groups.members) - 1} other"
            f" groups and its {len(widest)} features); at most {MAX_EXACT_FEATURES} are exact: split it or"
            " join other groups"
        )


def choose_route(method: str, path: str, prepared: Prepared, targets: int) -> Route:
    """Cohort Shapley's method, and the path its cohorts are found by (the permutation method joins; the
    integrated method counts each subject's dissimilar players: its own path)."""
    chosen = choose_method(method, prepared.players)
    if chosen == "integrated":
        return Route(chosen, "integrated")
    return Route(chosen, "pairwise" if chosen == "permutation" else choose_path(path, prepared, targets))


def game_route(method: str, path: str, prepared: Prepared, targets: int, terms: Terms) -> Route:
    """The method and path of any game of cohorts (`cohortsql.games.base.Game`), with what it may give
    checked here: bootstrap intervals and interaction values come from every cohort of the lattice
    (exact), Owen values from each union's exact reduced game (`check_owen`)."""
    chosen = choose_method(method, prepared.players, "game")
    route = Route(chosen, "pairwise" if chosen == "permutation" else choose_path(path, prepared, targets))
    if prepared.measures.replicates and not route.exact:
        raise CohortError("bootstrap intervals need method='exact' (the permutation method has standard errors)")
    if terms.interactions and not route.exact:
        raise CohortError(
            f"interactions=True for this game needs method='exact' (up to {MAX_EXACT_FEATURES} players; got"
            f" {prepared.players} with method={method!r}): its interaction values come from every cohort"
        )
    check_owen(route, prepared)
    return route


def model_route(method: str, d: int) -> Route:
    """A model-based game's method for `d` features (`choose_method`), on the model's hybrid points."""
    return Route(choose_method(method, d, "baseline"), "model")


def histogram_route(method: str, d: int) -> Route:
    """The method for mask histograms computed elsewhere (`cohortsql.assemble`): exact or by permutations."""
    chosen = choose_method(method, d)
    if chosen == "integrated":
        raise CohortError("method='integrated' reads the histogram by dissimilar players, not mask histograms")
    return Route(chosen, "pairwise")


def may_draw(method: str) -> bool:
    """Whether a run asked for `method` may draw random orders of the players (``auto`` may)."""
    return method != "exact"


def exact_route(path: str, prepared: Prepared, targets: int) -> Route:
    """The exact method on the path `path` resolves to (`choose_path`)."""
    return Route("exact", choose_path(path, prepared, targets))


def choose_path(path: str, prepared: Prepared, targets: int) -> Literal["pairwise", "grouping_sets"]:
    check_choice("path", path, PATHS)
    if prepared.groups is not None:
        if path == "grouping_sets":
            raise CohortError(
                "groups= runs on the pairwise path (its masks are joined into the groups'); use path='auto'"
            )
        return "pairwise"
    windows = [str(feature.name) for feature in prepared.features if not feature.kind.equivalence]
    if path == "grouping_sets" and windows:
        raise CohortError(
            f"path='grouping_sets' needs exact or bins similarity for every feature; {windows} are not"
            " equivalences (use path='pairwise' or 'auto')"
        )
    if path == "auto":
        return "grouping_sets" if not windows and targets >= 1 << (prepared.d - 1) else "pairwise"
    return "grouping_sets" if path == "grouping_sets" else "pairwise"


MAX_EXACT_BASELINE_FEATURES = 20
"""Exact baseline Shapley evaluates the model at 2^d hybrid points per target and baseline."""


AUTO_EXACT_BASELINE_FEATURES = 12
"""``method="auto"`` is exact up to this d (4,096 model evaluations per target and baseline)."""


_EXACT_LIMITS = {
    "cohort": (AUTO_EXACT_FEATURES, MAX_EXACT_FEATURES, "2^d cohorts per target"),
    "game": (AUTO_EXACT_FEATURES, MAX_EXACT_FEATURES, "2^d cohorts per target"),
    "baseline": (
        AUTO_EXACT_BASELINE_FEATURES,
        MAX_EXACT_BASELINE_FEATURES,
        "2^d model evaluations per target and baseline",
    ),
}
"""Per game: where ``auto`` stops being exact, where ``exact`` is refused, and what grows as 2^d."""
