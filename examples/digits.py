"""A wide table: scikit-learn's handwritten digits (1,797 images of 8 x 8 = 64 pixels, shipped with
scikit-learn), a logistic regression's probability that an image is a 3, explained per pixel by
integrated gradient cohort Shapley (IGCS, ``method="integrated"``), and scored against permutation
cohort Shapley by the insertion and deletion tests (Hama, Mase & Owen) on the same targets.

A pixel is similar to the target's when its ink differs by at most 4 of 16 levels (``abs:4``).
Prints the timings, the tests' mean ABCs of both methods, and saves each target's IGCS as an 8 x 8
heat map beside the image (examples/figures/digits_igcs.png).

    pip install -e ".[examples]" && python examples/digits.py
"""

from __future__ import annotations

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import cohortsql  # noqa: E402
import cohortsql.plot  # noqa: E402
from cohortsql import plot  # noqa: E402

FIGURES = Path(__file__).parent / "figures"
PIXELS = [f"p{row}{column}" for row in range(8) for column in range(8)]
SIMILARITY = dict.fromkeys(PIXELS, "abs:4")
TARGETS = 40


def scored_digits() -> pl.DataFrame:
    """Every image's pixels and the model's probability that it is a 3."""
    digits = load_digits()
    model = LogisticRegression(max_iter=5000).fit(digits.data, digits.target == 3)
    frame = pl.DataFrame({name: digits.data[:, index] for index, name in enumerate(PIXELS)})
    return frame.with_columns(
        id=pl.int_range(frame.height),
        digit=pl.Series(digits.target),
        p3=pl.Series(model.predict_proba(digits.data)[:, 1]),
    )


def main() -> None:
    frame = scored_digits()
    threes = frame.filter(pl.col("digit") == 3)["id"].head(TARGETS // 2).to_list()
    others = frame.filter(pl.col("digit") != 3)["id"].head(TARGETS - len(threes)).to_list()
    targets = threes + others
    options = dict(prediction="p3", similarity=SIMILARITY, id="id", targets=targets)
    began = time.perf_counter()
    integrated = cohortsql.cohort_shapley(frame, method="integrated", **options)
    integrated_seconds = time.perf_counter() - began
    began = time.perf_counter()
    permuted = cohortsql.cohort_shapley(frame, method="permutation", max_permutations=400, seed=1, **options)
    permuted_seconds = time.perf_counter() - began
    print(f"{len(targets)} targets x {len(PIXELS)} pixels x {frame.height:,} images:")
    print(
        f"  IGCS {integrated_seconds:.1f} s ({integrated.settings['integration_nodes']} nodes);"
        f" permutation cohort Shapley (400 orders a target) {permuted_seconds:.1f} s"
    )
    tested = {}
    for name, result in (("IGCS", integrated), ("permutation CS", permuted)):
        tests = cohortsql.insertion_deletion(
            frame, attributions=result, **{k: v for k, v in options.items() if k != "targets"}
        )
        tested[name] = tests
        means = tests.abc.select(pl.col("insertion_abc", "deletion_abc").mean()).row(0)
        print(f"  {name:15s} mean insertion ABC {means[0]:.4f}, mean deletion ABC {means[1]:.4f}")
    completeness = np.abs(integrated.shapley.sum(axis=1) - (integrated.cohort_mean - integrated.mean)).max()
    print(f"  IGCS adds up to the full cohort's mean less the mean within {completeness:.1e}")
    FIGURES.mkdir(exist_ok=True)
    shown = [threes[0], others[0]]
    figure, axes = plt.subplots(2, 2, figsize=(7, 7))
    for row, target in enumerate(shown):
        image = frame.filter(pl.col("id") == target).select(PIXELS).to_numpy().reshape(8, 8)
        axes[row, 0].imshow(image, cmap="gray_r")
        axes[row, 0].set_title(f"image {target} (p3 = {frame['p3'][target]:.3f})", fontsize=9)
        values = integrated.shapley[integrated.index_of(target)].reshape(8, 8)
        limit = float(np.abs(values).max()) or 1.0
        axes[row, 1].imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit)
        axes[row, 1].set_title("IGCS per pixel (red raises p3)", fontsize=9)
        for axis in axes[row]:
            axis.set_xticks([])
            axis.set_yticks([])
    figure.tight_layout()
    figure.savefig(FIGURES / "digits_igcs.png", dpi=100)
    plot.grid(integrated, shown[0], shape=(8, 8)).savefig(FIGURES / "digits_grid.png", dpi=100)
    cohortsql.plot.insertion_deletion(tested["IGCS"], shown[0]).savefig(
        FIGURES / "digits_insertion_deletion.png", dpi=100
    )
    print(f"wrote {FIGURES / 'digits_igcs.png'}")


if __name__ == "__main__":
    main()
