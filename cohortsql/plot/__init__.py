"""Pictures of cohort Shapley results, after the paper's figures (matplotlib: ``pip install 'cohortsql[plot]'``).

Every function returns a matplotlib Figure. Local plots take a result or the path of the long table
that ``cohortsql shapley --out`` writes (its ``_totals`` and ``_paths`` files beside it); a feature has
the same colour in every figure (`cohortsql.formats.colours`).
"""

from cohortsql.plot.comparison import calibration, compare_global, compare_stacked, compare_target
from cohortsql.plot.insertion import grid, insertion_deletion
from cohortsql.plot.lattice import groups, interactions
from cohortsql.plot.local import beeswarm, cohort_scatter, dependence, effects, path, stacked, target
from cohortsql.plot.tables import Source, Tables, read_tables

__all__ = [
    "Source",
    "Tables",
    "beeswarm",
    "calibration",
    "cohort_scatter",
    "compare_global",
    "compare_stacked",
    "compare_target",
    "dependence",
    "effects",
    "grid",
    "groups",
    "insertion_deletion",
    "interactions",
    "path",
    "read_tables",
    "stacked",
    "target",
]
