-- What the histogram sums, over every subject: W_b(all) and S_bk(all), so that every bootstrap
-- replicate's game is centred on its own weighted mean.
SELECT {sums}
FROM {subjects} AS s
