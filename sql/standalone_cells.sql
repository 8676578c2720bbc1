-- cohortsql's no-join step for equivalence similarities (exact, bins) as one self-contained query.
-- Whole-table statistics (the mean, bin edges) are computed by the query itself, in the CTE `statistics`.
-- Result: the subjects grouped by their equivalence keys k0, k1, ... (one per predictor, in this
-- order: {feature_list}), with the number of subjects, the sum of y - mean and of (y - mean)^2 and the
-- whole-table mean. Every target is a row of its own (its id in `target`, its prediction in
-- `prediction`); other subjects are collapsed into one row per cell (`target` NULL).
-- The cohort of target t on a set u of predictors is every subject whose keys on u equal t's.
-- `cohortsql assemble` turns this result into cohort Shapley values.
{position_note}
WITH statistics AS (
SELECT
    {aggregates}
FROM {source}
),
subjects AS (
SELECT
    {id} AS __cohort_id,
    CAST({prediction} AS DOUBLE) AS __cohort_prediction,
    CAST({prediction} AS DOUBLE) - st.mean AS __cohort_y,
    {is_target} AS __cohort_target,
    {predictors}
FROM {source}
CROSS JOIN statistics AS st
)
SELECT
    CASE WHEN {condition} THEN s.__cohort_id END AS target,
    CASE WHEN {condition} THEN s.__cohort_prediction END AS prediction,
    {keys},
    CAST(count(*) AS BIGINT) AS subjects,
    sum(s.__cohort_y) AS sum_y,
    sum(s.__cohort_y * s.__cohort_y) AS sum_y2,
    st.mean AS mean
FROM subjects AS s
CROSS JOIN statistics AS st
GROUP BY {ordinals}
