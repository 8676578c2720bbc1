-- cohortsql's heavy step as one self-contained query, to run where the data live.
-- Whole-table statistics (the mean, window widths from ranges or quantiles, bin edges) are computed
-- by the query itself, in the CTE `statistics`.
-- Result: one row per (target, similarity mask) with the number of subjects, the sum of y - mean and
-- of (y - mean)^2 over them, the target's own prediction and the whole-table mean. Bit j of the mask
-- (word w holds predictors 63w .. 63w + 62) is set when the subject is similar to the target on
-- predictor j, in this order: {feature_list}.
-- The cohort of a set u of predictors is every subject whose mask contains u.
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
    {predictors}{data_columns}
FROM {source}
CROSS JOIN statistics AS st
),
weighted AS (
{weighted}
),
targets AS (
SELECT * FROM subjects WHERE {condition}
)
SELECT
    t.__cohort_id AS target,
    t.__cohort_prediction AS prediction,
    {masks},
    CAST(sum(s.__cohort_count) AS BIGINT) AS subjects,
    sum(s.__cohort_sum) AS sum_y,
    sum(s.__cohort_sum2) AS sum_y2,
    st.mean AS mean
FROM weighted AS s
CROSS JOIN targets AS t
CROSS JOIN statistics AS st
GROUP BY {ordinals}
