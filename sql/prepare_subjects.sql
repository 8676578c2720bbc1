-- The subjects table, materialised once: every input row with its 0-based position, its id, the
-- predictors (window predictors as DOUBLE with NaN read as NULL), the explained value y as DOUBLE and,
-- when targets are chosen by a SQL predicate, whether the row is a target.
-- Every later step reads this table only.
CREATE TEMP TABLE {subjects} AS
SELECT
    row_number() OVER () - 1 AS __cohort_row,
    {id} AS __cohort_id,
    {predictors},
    CAST({prediction} AS DOUBLE) AS __cohort_y,
    {is_target} AS __cohort_target
FROM {source}
