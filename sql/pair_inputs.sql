-- The pairwise path's subjects as an engine's own code reads them when it builds the mask histogram
-- outside SQL (docs/design.md §2; Spark: on its executors): the feature columns, and what each row
-- adds to every sum of the histogram (its weight under each weighting, weight times each outcome).
SELECT
    {columns},
    {measures}
FROM {subjects} AS s
