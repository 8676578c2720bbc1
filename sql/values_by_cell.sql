-- Every target's values from those of its cell (the grouping-sets path of shapley_table): with
-- equivalence similarities (exact, bins) a target's every cohort is the cell of its keys in the
-- partition of the subjects on u, so targets with the same keys have the same values, computed once
-- per cell of the finest partition and joined to the targets here (NULL keys match NULL keys).
SELECT t.__cohort_batch AS id, v.feature, v.shapley, v.shapley_squared
FROM (
    SELECT
    t.__cohort_batch,
    {keys}
    FROM {targets} AS t
) AS t
JOIN {values} AS v ON {matches}
