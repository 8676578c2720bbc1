-- The rows of positive weight counted by the protected attribute's value, the decision and the
-- observed outcome: the cells every group fairness metric is read from (`cohortsql.numeric.fairness`).
-- decision and observed are 1 or 0, and 2 for a value that is neither (refused, naming its column).
SELECT
    {level} AS level,
    {decision} AS decision,
    {observed} AS observed,
    count(*) AS count,
    sum({weight}) AS weight,
    sum({weight} * {weight}) AS weight_squared
FROM {source}
WHERE {kept}
GROUP BY 1, 2, 3
