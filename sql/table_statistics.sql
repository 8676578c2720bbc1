-- Whole-table statistics, one row: the number of subjects, the mean of y, checks on y, the id and each
-- predictor, and the aggregates data-dependent similarity kinds need (min, max, quantiles). Deltas are
-- computed once over the whole table, never per target.
SELECT
    {aggregates}
FROM {subjects}
