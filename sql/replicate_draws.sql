-- Bayesian-bootstrap draws (Rubin 1981): for replicate b, every subject gets an independent Exp(1)
-- draw e_b = -ln(U), U = (the first 13 hexadecimal digits of md5('<seed>:<b>:<id>') + 1/2) / 16^13,
-- so every engine draws the same replicates and nothing of size n x B is stored unless the caller
-- materialises it.
SELECT *, {draws}
FROM {subjects}
