"""Calling the caller's model on hybrid points, in bounded batches, with every failure named.

A model is a callable f(X) -> one number per row, or an object with ``predict`` (``predict_proba``'s
second column with ``model_output="probability"``). X holds the feature columns by name, as a pandas
frame with the data's own column types (so fitted scikit-learn pipelines with text columns work), a
polars frame, or a float numpy array with the columns in feature order.
"""

from __future__ import annotations

import math
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cohortsql._typing import BATCH_ROWS, ModelInput, ModelOutput
from cohortsql.errors import CohortError
from cohortsql.request.options import Modelling


def model_function(model: Any, output: ModelOutput) -> Callable[[Any], Any]:
    """The function to call: `model` itself, its ``predict``, or its ``predict_proba`` (second column)."""
    if output == "probability":
        if not hasattr(model, "predict_proba"):
            raise CohortError(f"model_output='probability' needs a model with predict_proba; {model!r} has none")
        return lambda rows: np.asarray(model.predict_proba(rows))[:, 1]
    if hasattr(model, "predict"):
        return model.predict
    if callable(model):
        return model
    raise CohortError(f"model must be a callable f(X) or have a predict method; got {model!r}")


def check_reproduces(
    model: Any,
    output: ModelOutput,
    rows: pl.DataFrame,
    stored: pl.Series,
    ids: pl.Series,
    options: Modelling,
) -> None:
    """Refuse, before any hybrid point is valued, a model that does not give the stored predictions
    `stored` on the target `rows` (feature columns only): baseline Shapley would explain another function
    than the one cohort Shapley explains. A difference beyond ``model_tolerance`` (relative to the
    stored value, at least 1 in scale) is a `CohortError` naming the worst target and, when the model's
    other output reproduces the column (``predict`` against ``predict_proba``), the option that says so."""
    tolerance = options.model_tolerance
    if math.isinf(tolerance) or rows.height == 0:
        return
    expected = stored.cast(pl.Float64).fill_null(np.nan).to_numpy()
    known = ~np.isnan(expected)
    given = predict(model_function(model, output), rows, options.model_input, options.batch_rows)
    excess = _excess(given, expected, tolerance)
    if not (excess[known] > 0).any():
        return
    worst = int(np.argmax(np.where(known, excess, -np.inf)))
    differing = int(np.count_nonzero(excess[known] > 0))
    message = (
        f"the model does not reproduce the column {stored.name!r}: for the target with id {ids[worst]!r} it gives"
        f" {given[worst]:.6g} where {stored.name!r} holds {expected[worst]:.6g}; {differing} of"
        f" {int(known.sum())} targets differ by more than model_tolerance={tolerance:g}."
    )
    other: ModelOutput = "probability" if output == "prediction" else "prediction"
    if hasattr(model, "predict_proba") and hasattr(model, "predict"):
        alternative = predict(model_function(model, other), rows, options.model_input, options.batch_rows)
        if not (_excess(alternative, expected, tolerance)[known] > 0).any():
            raise CohortError(f"{message} Its {_OUTPUTS[other]} does: pass model_output='{other}'")
        message += f" Neither does its {_OUTPUTS[other]}."
    elif output == "prediction" and _probabilities(expected[known]):
        message += f" {stored.name!r} holds probabilities, and the model has no predict_proba."
    raise CohortError(
        f"{message} Pass the model that made the column, or, for a model that is not deterministic, allow for it"
        " with model_tolerance= (inf skips the check)"
    )


_OUTPUTS: dict[ModelOutput, str] = {"prediction": "predict", "probability": "predict_proba's second column"}


def _excess(given: np.ndarray, expected: np.ndarray, tolerance: float) -> np.ndarray:
    """How far each model value lies beyond the tolerance around the stored one (> 0: too far; NaN: unknown)."""
    with np.errstate(invalid="ignore"):
        return np.abs(given - expected) - tolerance * np.maximum(1.0, np.abs(expected))


def _probabilities(values: np.ndarray) -> bool:
    """Values in [0, 1] that are not all 0 or 1."""
    return bool(len(values)) and bool(((values >= 0) & (values <= 1)).all()) and not np.isin(values, (0, 1)).all()


def model_rows(frame: pl.DataFrame, model_input: ModelInput) -> Any:
    """The hybrid rows as the model reads them."""
    if model_input == "polars":
        return frame
    if model_input == "numpy":
        try:
            return frame.to_numpy().astype(np.float64)
        except (ValueError, TypeError) as error:
            raise CohortError(
                f"model_input='numpy' needs numeric features; {_text_columns(frame)} are not ({error})"
            ) from None
    try:
        return frame.to_pandas()
    except ModuleNotFoundError:
        raise CohortError("model_input='pandas' needs pandas: pip install pandas (or model_input='polars')") from None


def _text_columns(frame: pl.DataFrame) -> str:
    names = [name for name, dtype in frame.schema.items() if not (dtype.is_numeric() or dtype == pl.Boolean)]
    return ", ".join(names) or "some columns"


def predict(
    function: Callable[[Any], Any], points: pl.DataFrame, model_input: ModelInput, batch_rows: int = BATCH_ROWS
) -> np.ndarray:
    """f at every row of `points`, called on batches of at most `batch_rows` rows; checks every answer."""
    results = np.empty(points.height)
    for start in range(0, points.height, batch_rows):
        batch = points.slice(start, batch_rows)
        try:
            answer = function(model_rows(batch, model_input))
        except CohortError:
            raise
        except Exception as error:  # the caller's code: any failure becomes one named error
            raise CohortError(
                f"the model raised {type(error).__name__} on a batch of {batch.height} hybrid rows: {error}"
            ) from error
        results[start : start + batch.height] = _checked(answer, batch.height)
    return results


def _checked(answer: Any, rows: int) -> np.ndarray:
    """The model's answer as float64, one finite number per row, or a `CohortError` saying what is wrong."""
    if hasattr(answer, "to_numpy"):
        answer = answer.to_numpy()
    values = np.asarray(answer)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or len(values) != rows:
        raise CohortError(
            f"the model returned shape {values.shape} for {rows} rows; it must return one number per row"
            " (for a classifier's probability, pass model_output='probability')"
        )
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == np.bool_):
        raise CohortError(f"the model returned {values.dtype} values, not numbers (e.g. {values[0]!r})")
    if np.issubdtype(values.dtype, np.complexfloating):  # a cast would drop the imaginary parts in silence
        raise CohortError(f"the model returned complex numbers (e.g. {values[0]!r}); it must return real ones")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        bad = values[~np.isfinite(values)][0]
        raise CohortError(f"the model returned {bad} for {np.count_nonzero(~np.isfinite(values))} of {rows} rows")
    return values


def load_model(path: str | os.PathLike[str]) -> Any:
    """A fitted model saved with pickle, or with joblib when the file ends in ``.joblib``.

    Unpickling runs code stored in the file: load only files you trust."""
    location = Path(path)
    try:
        if location.suffix == ".joblib":
            try:
                import joblib  # type: ignore[import-untyped]
            except ImportError:
                raise CohortError(f"{str(location)!r} is a joblib file: pip install joblib") from None
            return joblib.load(location)
        with location.open("rb") as stream:
            return pickle.load(stream)
    except CohortError:
        raise
    except OSError as error:
        raise CohortError(f"cannot read model {str(location)!r}: {error.strerror}") from None
    except Exception as error:  # unpickling runs the file's code: any failure is the file's
        raise CohortError(f"cannot load model {str(location)!r}: {type(error).__name__}: {error}") from None
