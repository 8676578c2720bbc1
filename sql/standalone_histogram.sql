-- cohortsql's heavy step as one self-contained query, to run where the data lives.
-- Whole-table statistics (min, max, quantiles) were computed by cohortsql and appear as literals.
-- Result: one row per (target, similarity mask) with the number of subjects and the sum of the
-- explained value y. Bit j of the mask (word w holds predictors 63w .. 63w + 62) is set when the
-- subject is similar to the target on predictor j, in this order: {feature_list}.
-- The cohort of a set u of predictors is every subject whose mask contains u.
-- Without an id column, a target is its 0-based row position, which depends on the engine's scan order.
WITH subjects AS (
SELECT
    {id} AS __cohort_id,
    CAST({prediction} AS DOUBLE) AS __cohort_y,
    {is_target} AS __cohort_target,
    {predictors}{data_columns}
FROM {source}
),
targets AS (
SELECT * FROM subjects WHERE {condition}
)
SELECT
    t.__cohort_id AS target,
    {masks},
    count(*) AS subjects,
    sum(s.__cohort_y) AS sum_y
FROM subjects AS s
CROSS JOIN targets AS t
GROUP BY {group_by}
