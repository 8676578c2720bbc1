-- The subjects table, materialised once: every input row with its 0-based position, its id, the
-- explained value y as DOUBLE, whether it is a target (when targets are chosen by a SQL predicate) and
-- a prepared copy of each predictor (window predictors as DOUBLE with NaN read as NULL); the data's
-- own columns too, only when sql: similarity predicates may read them.
-- Every later step reads this table only, and only the columns it needs.
CREATE TEMP TABLE {subjects} AS
SELECT
    row_number() OVER () - 1 AS __cohort_row,
    {id} AS __cohort_id,
    CAST({prediction} AS DOUBLE) AS __cohort_y,
    {is_target} AS __cohort_target,
    {predictors}{data_columns}
FROM {source}
