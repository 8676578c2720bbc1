-- The Shapley values from the terms of every cohort value (see shapley_terms.sql): for every game
-- (target) and feature j (a literal table of (position, bit, name)), the sum of the `inside` terms
-- of the sets that hold j, minus the game's total of the `outside` terms.
SELECT
    c.target,
    c.position,
    c.feature,
    {values}
FROM (
    SELECT m.target, f.position, f.feature, {inside}
    FROM {terms} AS m
    JOIN (VALUES {features}) AS f(position, bit, feature) ON (m.u & f.bit) <> 0
    GROUP BY 1, 2, 3
) AS c
JOIN (
    SELECT target, {outside}
    FROM {terms}
    GROUP BY 1
) AS o ON c.target = o.target
