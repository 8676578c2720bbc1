-- The distinct rows of the subjects' predictors, as the similarity tests compare them: a hybrid point
-- of baseline Shapley is realistic when one of these rows is similar to it on every predictor.
SELECT DISTINCT {columns}
FROM {subjects}
