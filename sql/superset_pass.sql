-- One pass of the superset-sum transform in SQL (docs/design.md §2), over a group G of mask bits.
-- A row (target, u) holds sums over the subjects whose masks agree with u on the bits of the groups
-- already passed and contain u on the others; it adds them to u - c for every subset c of G that u
-- contains (the literal list {subsets}). After the passes over every group, row (target, u) holds the
-- weight and the sum of y - mean of the cohort C_{t,u}: every subject whose mask contains u.
SELECT
    h.target,
    h.u - c.bits AS u,
    sum(h.w) AS w,
    sum(h.s) AS s
FROM {previous} AS h
JOIN (VALUES {subsets}) AS c(bits) ON (h.u & c.bits) = c.bits
GROUP BY 1, 2
