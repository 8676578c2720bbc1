-- Each target's mask histogram as lists, finished by cohortsql's scalar function {function}
-- (cohortsql.register adds it to the connection): one list of values per target, unnested in
-- feature order.
SELECT id, feature, shapley, shapley_squared
FROM (
    SELECT target AS id, unnest({function}(list(mask0), list(w0), list(s0_0), {features}), recursive := true)
    FROM {histogram}
    GROUP BY target
) AS finished
ORDER BY id, position
