"""Trains the question reader (`codemem/timeline/questions.py`): what a question asks of time
(the current state, a date or an order, the state at a named time, or none of these), by
multinomial logistic regression over the question's words and word pairs (TF-IDF) and its
MiniLM vector.

    python -m train.questions.train --projects DIR [--projects DIR ...] [--reports F] [--out F] [--allow-dirty]
                                             # writes codemem/timeline/models/questions.json

(`make train` runs it as its `questions` step: `train/README.md`.)

Data: the questions of the dated training projects (their format: `train/ranker/projects/FORMAT.md`),
each labelled by its kind, which says what its answer is: `update` -> now; `when` and `before`
-> when; `asof` -> asof; `multi` -> other. A `single` question (a subject stated once) and an
`absent` one (never discussed) are left out: their answers say nothing of what they ask of time
(a question about a subject stated once may ask for the current state or not). Projects of an
evaluation split are refused (`project_data.TRAINING_SPLITS`). With `--reports` (the
`swe-verified-reuse` tasks), each task's report is an `other` too: a Search of a coding memory
is most often a bug report, which asks nothing of time, and the reader must say so rather than
guess from words it never saw in a question.

Choice, by cross-validation with whole projects held out (`FOLDS` groups): the regularisation C
(the best out-of-fold log-loss of the grid). A question is read as one about now where `now`
is its most probable class (no threshold is chosen). The card records the
data's hash, the commit, the grid and the out-of-fold figures. Deterministic: two runs at one
commit on the same data write the same bytes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import GroupKFold

from codemem.config import Embedding
from codemem.timeline.linear_text import LinearText
from codemem.timeline.questions import CLASSES, MODEL, QuestionReader
from train.data import refuse_evaluation_data
from train.decisions.train import inputs
from train.encoder import chosen_embedder
from train.provenance import REPO_ROOT, tree_sha256, tree_state
from train.ranker.project_data import TRAINING_SPLITS

LABELS = {"update": "now", "when": "when", "before": "when", "asof": "asof", "multi": "other"}
GRID_C = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
FOLDS = 5
NGRAMS = 2


def load(folders: list[Path]) -> tuple[list[str], np.ndarray, list[str]]:
    """Every labelled question of the projects in `folders`: texts, class indexes, projects."""
    texts, labels, groups = [], [], []
    for folder in folders:
        refuse_evaluation_data(folder)
        for f in sorted(folder.glob("*.json")):
            project = json.loads(f.read_text())
            if project.get("split") not in TRAINING_SPLITS:
                raise SystemExit(f"{f}: split {project.get('split')!r} is not training data ({', '.join(TRAINING_SPLITS)})")
            for q in project["questions"]:
                if q["kind"] in LABELS:
                    texts.append(str(q["question"]))
                    labels.append(CLASSES.index(LABELS[q["kind"]]))
                    groups.append(f"{folder.name}/{f.stem}")
    return texts, np.asarray(labels), groups


def load_reports(path: Path) -> tuple[list[str], list[str]]:
    """The reports of a task list (JSON lines with `problem_statement` and `repo`) and their repositories."""
    refuse_evaluation_data(path)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [str(r["problem_statement"]) for r in rows], [f"report:{r['repo']}" for r in rows]


def vectorizer() -> TfidfVectorizer:
    """Words and word pairs seen in two questions or more (a report's own identifiers would
    make most of a vocabulary that no question shares)."""
    return TfidfVectorizer(ngram_range=(1, NGRAMS), sublinear_tf=True, lowercase=True, min_df=2)


def fit(texts: list[str], emb: np.ndarray, y: np.ndarray, c: float) -> tuple[LogisticRegression, TfidfVectorizer]:
    words = vectorizer()
    return LogisticRegression(C=c, max_iter=5_000).fit(inputs(texts, emb, [words], fit=True), y), words


def out_of_fold(texts: list[str], emb: np.ndarray, y: np.ndarray, groups: list[str], c: float) -> np.ndarray:
    """P(class) of each question from a model that never saw its project, columns in `CLASSES` order."""
    p = np.zeros((len(y), len(CLASSES)))
    for train, test in GroupKFold(FOLDS).split(emb, y, groups):
        model, words = fit([texts[i] for i in train], emb[train], y[train], c)
        p[np.ix_(test, model.classes_)] = model.predict_proba(inputs([texts[i] for i in test], emb[test], [words], fit=False))
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=Path, action="append", required=True, help="a folder of project JSON files")
    ap.add_argument("--reports", type=Path, help="a task list whose reports are questions of no time (swe-verified-reuse's tasks.jsonl)")
    ap.add_argument("--out", type=Path, default=MODEL)
    ap.add_argument("--allow-dirty", action="store_true",
                    help="train from a tree with uncommitted changes (the card then says so)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    at = tree_state()
    if not at["clean_tree"] and not args.allow_dirty:
        raise SystemExit("the tree has uncommitted changes to tracked files: commit them first, or give "
                         "--allow-dirty (the card then says the tree was dirty)")
    texts, y, groups = load(args.projects)
    if args.reports:
        reports, repos = load_reports(args.reports)
        texts, groups = texts + reports, groups + repos
        y = np.concatenate([y, np.full(len(reports), CLASSES.index("other"))])
    embedder = chosen_embedder()
    emb = embedder.embed(texts, Embedding().query_max_tokens)
    grid = {c: out_of_fold(texts, emb, y, groups, c) for c in GRID_C}
    losses = {c: float(log_loss(y, p, labels=range(len(CLASSES)))) for c, p in grid.items()}
    c = min(losses, key=lambda k: losses[k])
    p = grid[c]
    now = CLASSES.index("now")
    model, words = fit(texts, emb, y, c)
    if list(model.classes_) != list(range(len(CLASSES))):
        raise SystemExit(f"the data holds classes {[CLASSES[i] for i in model.classes_]}: every one of {list(CLASSES)} is needed")
    read = p.argmax(axis=1) == now
    card: dict[str, Any] = {
        "classes": list(CLASSES), "embedder": embedder.name, "C": c,
        "trained_on": {"projects": [str(f.resolve().relative_to(REPO_ROOT)) if f.resolve().is_relative_to(REPO_ROOT) else str(f)
                                    for f in args.projects],
                       "reports": args.reports.name if args.reports else None,
                       "sha256": tree_sha256([*args.projects, *([args.reports] if args.reports else [])], REPO_ROOT),
                       "projects_count": len({g for g in groups if not g.startswith("report:")}),
                       "questions": {cls: int((y == i).sum()) for i, cls in enumerate(CLASSES)}, **at},
        "cv": {"folds": FOLDS, "held_out": "whole projects", "log_loss_by_C": {str(k): round(v, 4) for k, v in losses.items()},
               "accuracy": round(float((p.argmax(axis=1) == y).mean()), 4),
               "recall": {cls: round(float((p.argmax(axis=1)[y == i] == i).mean()), 4) for i, cls in enumerate(CLASSES)},
               "now_auc": round(float(roc_auc_score(y == now, p[:, now])), 4),
               "now_read": round(float(read[y == now].mean()), 4), "others_read_as_now": round(float(read[y != now].mean()), 4)},
        "ngrams": NGRAMS, **LinearText.card_fields([(words.vocabulary_, words.idf_)], model.coef_, model.intercept_),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(card) + "\n")
    shipped = QuestionReader.load(args.out).probabilities(texts, emb)
    fitted = model.predict_proba(inputs(texts, emb, [words], fit=False))
    assert np.allclose(shipped, fitted, atol=1e-4), float(np.abs(shipped - fitted).max())
    print(json.dumps({k: v for k, v in card.items() if k not in ("embedding_weights", "terms", "bias")}, indent=1))
    print(f"trained in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
