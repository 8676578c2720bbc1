-- Each cohort value's terms in the Shapley values (docs/design.md §1). With w(s) = s! (d - s - 1)! / d!
-- and w(-1) = w(d) = 0,
--     phi_j = sum over u containing j of v(u) (w(|u| - 1) + w(|u|))  -  sum over every u of v(u) w(|u|),
-- so each set u contributes v(u) times `inside` to the features it holds and v(u) times `outside` to
-- its game's common total. The weights are a literal table by set size: (|u|, inside, outside).
SELECT
    g.target,
    g.u,
    {terms}
FROM (
    SELECT *, {size} AS size
    FROM {games}
) AS g
JOIN (VALUES {weights}) AS k(size, inside, outside) ON g.size = k.size
