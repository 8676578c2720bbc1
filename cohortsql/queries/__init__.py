"""Pure renderers from a checked specification to SQL text: nothing here runs a query.

One module a topic, each a set of small functions that fill in the templates of the repository's
top-level ``sql/`` folder (one template per named step):

- `statistics`: whole-table statistics (moments, checks, each kind's parameters, quantiles, pilots);
- `subjects`: the subjects relation (ids, explained values, predictors as the tests compare them);
- `measures`: what the histogram sums (case weights, bootstrap draws, outcomes);
- `null_copies`: the subjects with permuted copies of predictors (the null reference);
- `targets`: choosing and reading target rows;
- `histogram`: similarity tests and the mask histogram (the pairwise path);
- `integrated`: the histogram by number of dissimilar players (the integrated path) and by rank;
- `cells`: equivalence keys and cells (the grouping-sets path);
- `baseline`: the mean baseline point and the realism of hybrid points;
- `steps`: named steps, run one relation at a time or rendered as one ``WITH``;
- `values`: the superset sums and Shapley weights in SQL (the engine computes the values);
- `standalone`: the self-contained query `cohortsql sql` prints;
- `common`: the aliases and small helpers they share.

Subjects are aliased ``s`` and targets ``t`` in every query, which is what ``sql:`` similarity
predicates refer to.
"""

from cohortsql.queries import (
    baseline,
    cells,
    common,
    fairness,
    histogram,
    integrated,
    measures,
    null_copies,
    standalone,
    statistics,
    steps,
    subjects,
    targets,
    values,
)

__all__ = [
    "baseline",
    "cells",
    "common",
    "fairness",
    "histogram",
    "integrated",
    "measures",
    "null_copies",
    "standalone",
    "statistics",
    "steps",
    "subjects",
    "targets",
    "values",
]
