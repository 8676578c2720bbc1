-- Bayesian-bootstrap draws (Rubin 1981): for replicate b = 1, 2, ..., every subject gets an independent
-- Exp(1) draw e_b = -ln(U). U comes from h = md5('<seed>:<g>:<id>') with g = (b - 1) div 4: its 16
-- bytes hold four 32-bit numbers (read little-endian), and part (b - 1) mod 4 gives U = (part + 1/2) / 2^32.
-- Every engine draws the same replicates, one md5 per subject and four replicates; nothing of size
-- n x B is stored unless the caller materialises it.
SELECT *, {draws}
FROM (SELECT *, {hashes} FROM {subjects}) AS hashed
