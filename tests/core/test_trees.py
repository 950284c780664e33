"""`codemem.ranking.trees` scores a LightGBM model file as LightGBM does: the same raw scores
and the same SHAP contributions (`Booster.predict(raw_score=True)`, `pred_contrib=True`) on the
shipped relevance model and on models that exercise what it does not (missing values, a
feature split on twice on one path, one-leaf trees), and refuses what it does not evaluate."""

from __future__ import annotations

from pathlib import Path

import lightgbm
import numpy as np
import pytest

from codemem.ranking.learned import MODEL_FILE, MODELS
from codemem.ranking.trees import Trees, UnsupportedModel

TOLERANCE = 1e-9


def _rows(trees: Trees, n: int, seed: int) -> np.ndarray:
    """Random rows over and around the features' ranges, with what decides a split at its edge:
    values exactly on thresholds, zeros, values within LightGBM's zero threshold, NaN."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.5, 1.5, (n, trees.num_feature)) * rng.choice([1.0, 4.0], (n, trees.num_feature))
    at = rng.random(x.shape) < 0.25  # on a threshold that splits this column
    for j in range(trees.num_feature):
        thresholds = trees.threshold[trees.feature == j]
        if len(thresholds):
            x[at[:, j], j] = rng.choice(thresholds, int(at[:, j].sum()))
    x[rng.random(x.shape) < 0.15] = 0.0
    x[rng.random(x.shape) < 0.03] = 1e-40
    x[rng.random(x.shape) < 0.03] = -1e-40
    x[rng.random(x.shape) < 0.05] = np.nan
    return x


def _assert_same(model_file: Path, x: np.ndarray) -> None:
    booster = lightgbm.Booster(model_file=str(model_file))
    trees = Trees.load(model_file)
    raw = trees.raw_score(x)
    assert np.abs(raw - booster.predict(x, raw_score=True)).max() <= TOLERANCE
    contributions = trees.contributions(x)
    assert contributions.shape == (len(x), trees.num_feature + 1)
    assert np.abs(contributions - booster.predict(x, pred_contrib=True)).max() <= TOLERANCE
    assert np.abs(contributions.sum(axis=1) - raw).max() <= TOLERANCE  # SHAP's local accuracy


def test_the_shipped_model_scores_and_explains_as_lightgbm_does() -> None:
    trees = Trees.load(MODELS / MODEL_FILE)
    assert trees.num_trees == lightgbm.Booster(model_file=str(MODELS / MODEL_FILE)).num_trees()
    _assert_same(MODELS / MODEL_FILE, _rows(trees, 400, seed=1))
    _assert_same(MODELS / MODEL_FILE, _rows(trees, 1, seed=2))  # one row, as the ranker explains one


def _train(tmp_path: Path, x: np.ndarray, y: np.ndarray, params: dict[str, object] | None = None, rounds: int = 40) -> Path:
    params = params or {}
    data = lightgbm.Dataset(x, y, params={"verbose": -1, **params})
    booster = lightgbm.train({"objective": "binary", "num_leaves": 15, "min_data_in_leaf": 5, "verbose": -1, **params},
                             data, num_boost_round=rounds)
    path = tmp_path / "model.txt"
    booster.save_model(str(path))
    return path


def _labelled(seed: int, n: int = 1500, columns: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Few columns, so that one path splits on a column several times."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, columns))
    y = ((np.sin(6 * x[:, 0]) + x[:, 1] ** 2 - x[:, 2] + rng.normal(0, 0.3, n)) > 0.2).astype(float)
    return x, y


@pytest.mark.parametrize("params", [
    {},  # missing type "none": NaN read as 0
    {"zero_as_missing": True},  # missing type "zero"
    {"use_missing": False},
], ids=["nan-as-zero", "zero-as-missing", "no-missing"])
def test_models_with_other_missing_value_rules(tmp_path: Path, params: dict[str, object]) -> None:
    x, y = _labelled(seed=3)
    x[np.random.default_rng(4).random(x.shape) < 0.1] = 0.0
    path = _train(tmp_path, x, y, params)
    _assert_same(path, _rows(Trees.load(path), 300, seed=5))


def test_a_model_trained_with_missing_values(tmp_path: Path) -> None:
    x, y = _labelled(seed=6)
    x[np.random.default_rng(7).random(x.shape) < 0.2] = np.nan  # missing type "NaN", learned directions
    path = _train(tmp_path, x, y)
    assert any(int(d) & 8 for line in path.read_text().splitlines() if line.startswith("decision_type=")
               for d in line.split("=")[1].split())
    _assert_same(path, _rows(Trees.load(path), 300, seed=8))


def test_one_leaf_trees(tmp_path: Path) -> None:
    """Trees that found no split (one leaf) add their value, and to the bias only."""
    x, y = _labelled(seed=9, n=60)
    path = _train(tmp_path, x, y, {"min_data_in_leaf": 40}, rounds=5)
    assert "num_leaves=1" in path.read_text()
    _assert_same(path, _rows(Trees.load(path), 50, seed=10))


def test_inputs_within_the_zero_threshold_are_read_as_zero(tmp_path: Path) -> None:
    """LightGBM reads |x| <= 1e-35 as 0.0; a split between 0 and such a value shows it (its
    trainer never places one there, so the threshold is set by hand)."""
    x, y = _labelled(seed=12)
    text = _train(tmp_path, x, y, rounds=3).read_text()
    head, tree = text.split("\nTree=0\n", 1)
    thresholds = tree.split("threshold=", 1)[1].split("\n", 1)[0].split()
    tree = tree.replace(" ".join(thresholds), " ".join(["5e-41", *thresholds[1:]]), 1)
    path = tmp_path / "edge.txt"
    head = "\n".join(line for line in head.splitlines() if not line.startswith("tree_sizes="))  # sizes changed
    path.write_text(f"{head}\nTree=0\n{tree}")
    trees = Trees.load(path)
    rows = np.random.default_rng(13).uniform(0, 1, (4, trees.num_feature))
    rows[:, trees.feature[0]] = [1e-40, -1e-40, 0.0, 1e-36]
    _assert_same(path, rows)


def test_what_it_does_not_evaluate_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    x = np.column_stack([rng.integers(0, 6, 600), rng.uniform(0, 1, 600)])
    y = (x[:, 0] % 2 == 0).astype(float)
    data = lightgbm.Dataset(x, y, categorical_feature=[0], params={"verbose": -1})
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "min_data_in_leaf": 5}, data, num_boost_round=3)
    booster.save_model(str(tmp_path / "categorical.txt"))
    with pytest.raises(UnsupportedModel, match="categorical"):
        Trees.load(tmp_path / "categorical.txt")
    multiclass = lightgbm.train({"objective": "multiclass", "num_class": 3, "verbose": -1},
                                lightgbm.Dataset(x, rng.integers(0, 3, 600), params={"verbose": -1}), num_boost_round=2)
    multiclass.save_model(str(tmp_path / "multiclass.txt"))
    with pytest.raises(UnsupportedModel, match="multiclass"):
        Trees.load(tmp_path / "multiclass.txt")
