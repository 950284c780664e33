"""A LightGBM model file (`Booster.save_model`'s text) evaluated with numpy: raw scores and
SHAP contributions equal to `lightgbm.Booster.predict(raw_score=True)` and
`predict(pred_contrib=True)` (`tests/core/test_trees.py` compares them on the shipped model).

Why not lightgbm itself: `import lightgbm` imports scikit-learn and SciPy whenever they are
installed, most of a cold `codemem search`'s time, to score a few dozen rows. LightGBM stays
the training library (`train/ranker/train.py`); this module only reads what it writes.

It reads the models our trainer writes: one tree per iteration (a binary, cross-entropy or
regression objective) and numerical splits, with LightGBM's missing-value rules. A file with
categorical splits, linear trees, several classes or an averaged output (random forest) is
refused (`UnsupportedModel`) rather than scored differently from LightGBM.

Contributions are path-dependent TreeSHAP (Lundberg et al., arXiv:1706.06060, the algorithm
LightGBM's `Tree::TreeSHAP` runs): each leaf is a game whose players are the distinct features
on its path, a player's "zero fraction" the share of the training rows its splits send down that
path (the node counts in the file) and its "one fraction" 1 when the row goes that way, else 0;
a feature's contribution is the sum over leaves of its Shapley value in that game. LightGBM
walks the tree recursively per row; here the paths are unrolled once at load time and the
Shapley weights computed for every leaf and row at once, in groups of leaves with as many
players (the work is quadratic in them), which gives the same values (a path padded with
steps every row follows keeps its game).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# LightGBM's kZeroThreshold (a float, 1e-35f): inputs this close to zero are read as 0.0 (its
# predictor keeps a dense row's nonzero entries only), and missing_type "zero" tests for it.
ZERO = float(np.float32(1e-35))
MISSING_ZERO, MISSING_NAN = 1, 2  # decision_type bits 2-3; 0 is "none"
CATEGORICAL, DEFAULT_LEFT = 1, 2  # decision_type bits 0 and 1


class UnsupportedModel(ValueError):
    """A LightGBM model file this evaluator would not score as LightGBM does."""


@dataclass(frozen=True)
class _Tree:
    """One tree's arrays as the file states them (children: >= 0 a node, < 0 ~leaf)."""

    split_feature: list[int]
    threshold: list[float]
    decision_type: list[int]
    left_child: list[int]
    right_child: list[int]
    leaf_value: list[float]
    leaf_count: list[int]
    internal_count: list[int]

    def expected_value(self) -> float:
        """The mean output over the training rows (LightGBM's `Tree::ExpectedValue`), summed in
        its order so the bias column is bit-equal."""
        if len(self.leaf_value) == 1:
            return self.leaf_value[0]
        total = float(self.internal_count[0])
        value = 0.0
        for count, leaf in zip(self.leaf_count, self.leaf_value, strict=True):
            value += (count / total) * leaf
        return value

    def paths(self) -> list[list[tuple[int, bool, float]]]:
        """Each leaf's path from the root, in leaf order, as steps (node, goes left, the share of
        the node's training rows that go that way: TreeSHAP's zero fraction)."""
        found: list[list[tuple[int, bool, float]]] = [[] for _ in self.leaf_value]
        stack: list[tuple[int, list[tuple[int, bool, float]]]] = [(0, [])] if self.split_feature else []
        while stack:
            node, path = stack.pop()
            for child, left in ((self.left_child[node], True), (self.right_child[node], False)):
                rows = self.internal_count[child] if child >= 0 else self.leaf_count[~child]
                steps = [*path, (node, left, rows / float(self.internal_count[node]))]
                if child < 0:
                    found[~child] = steps
                else:
                    stack.append((child, steps))
        return found


def _fields(block: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in block if "=" in line)


def _tree(fields: dict[str, str]) -> _Tree:
    if int(fields.get("num_cat", "0")) > 0 or fields.get("is_linear", "0") != "0":
        raise UnsupportedModel("categorical splits and linear trees are not evaluated here")

    def ints(key: str) -> list[int]:
        return [int(v) for v in fields.get(key, "").split()]

    def floats(key: str) -> list[float]:  # Python's float() rounds as LightGBM's parser does: exactly
        return [float(v) for v in fields.get(key, "").split()]

    tree = _Tree(ints("split_feature"), floats("threshold"), ints("decision_type"), ints("left_child"),
                 ints("right_child"), floats("leaf_value"), ints("leaf_count"), ints("internal_count"))
    if len(tree.leaf_value) != int(fields["num_leaves"]):
        raise UnsupportedModel(f"a tree states {fields['num_leaves']} leaves and has {len(tree.leaf_value)} values")
    if any(d & CATEGORICAL for d in tree.decision_type):
        raise UnsupportedModel("categorical splits are not evaluated here")
    return tree


def parse(text: str) -> tuple[dict[str, str], list[_Tree]]:
    """The header's key=value lines and the trees of a model file, in file order."""
    head, _, rest = text.partition("\nTree=")
    blocks = [b.splitlines()[1:] for b in rest.split("\nend of trees", 1)[0].split("\nTree=")] if rest else []
    return _fields(head.splitlines()), [_tree(_fields(b)) for b in blocks]


@dataclass(frozen=True)
class Trees:
    """Every tree's nodes in flat arrays (node ids global across trees; a leaf is ~its global
    id), and each leaf's path unrolled for TreeSHAP."""

    num_feature: int
    feature: np.ndarray  # per node: the column it splits on
    threshold: np.ndarray  # per node: left when value <= threshold
    missing: np.ndarray  # per node: 0 none, 1 zero, 2 NaN
    default_left: np.ndarray  # per node: where a missing value goes
    left: np.ndarray  # per node: child (global node, or ~global leaf)
    right: np.ndarray
    roots: np.ndarray  # per tree: its root (a node, or ~leaf for a one-leaf tree)
    leaf_value: np.ndarray  # per leaf
    bias: float  # sum of the trees' expected values: the contributions' last column
    # TreeSHAP: the leaves' paths, in groups of leaves with as many players (`LeafPaths`)
    paths: tuple[LeafPaths, ...]

    @classmethod
    def load(cls, path: Path) -> Trees:
        header, trees = parse(path.read_text())
        if header.get("version") != "v4":
            raise UnsupportedModel(f"{path}: model format {header.get('version')!r}, this reads v4")
        if header.get("num_class", "1") != "1" or header.get("num_tree_per_iteration", "1") != "1":
            raise UnsupportedModel(f"{path}: several trees per iteration (multiclass) are not evaluated here")
        if "average_output" in header:
            raise UnsupportedModel(f"{path}: an averaged output (random forest) is not evaluated here")
        return cls.of(int(header["max_feature_idx"]) + 1, trees)

    @classmethod
    def of(cls, num_feature: int, trees: list[_Tree]) -> Trees:
        nodes: list[tuple[int, float, int, bool, int, int]] = []
        roots: list[int] = []
        leaf_value: list[float] = []
        paths: list[list[tuple[int, bool, float]]] = []
        for tree in trees:
            node_base, leaf_base = len(nodes), len(leaf_value)
            for i, f in enumerate(tree.split_feature):
                d = tree.decision_type[i]
                nodes.append((f, tree.threshold[i], (d >> 2) & 3, bool(d & DEFAULT_LEFT),
                              _across(tree.left_child[i], node_base, leaf_base),
                              _across(tree.right_child[i], node_base, leaf_base)))
            roots.append(node_base if tree.split_feature else ~leaf_base)
            leaf_value.extend(tree.leaf_value)
            paths.extend([(node + node_base, left, share) for node, left, share in path] for path in tree.paths())
        feature = np.asarray([n[0] for n in nodes], dtype=np.int64)
        if len(feature) and feature.max() >= num_feature:
            raise UnsupportedModel(f"a split reads column {feature.max()} of {num_feature}")
        bias = 0.0
        for tree in trees:  # in tree order, as LightGBM adds them
            bias += tree.expected_value()
        values = np.asarray(leaf_value, dtype=np.float64)
        return cls(num_feature, feature, np.asarray([n[1] for n in nodes], dtype=np.float64),
                   np.asarray([n[2] for n in nodes], dtype=np.int64), np.asarray([n[3] for n in nodes], dtype=bool),
                   np.asarray([n[4] for n in nodes], dtype=np.int64), np.asarray([n[5] for n in nodes], dtype=np.int64),
                   np.asarray(roots, dtype=np.int64), values, bias, _grouped(paths, feature, values))

    @property
    def num_trees(self) -> int:
        return len(self.roots)

    def goes_left(self, x: np.ndarray) -> np.ndarray:
        """(rows, nodes): whether each row goes left at each split, by `Tree::NumericalDecision`."""
        x = np.asarray(x, dtype=np.float64).reshape(-1, self.num_feature)
        x = np.where(np.abs(x) <= ZERO, 0.0, x)  # what LightGBM's dense-row reader keeps
        value = x[:, self.feature]
        nan = np.isnan(value)
        value = np.where(nan & (self.missing != MISSING_NAN), 0.0, value)
        default = ((self.missing == MISSING_ZERO) & (np.abs(value) <= ZERO)) | ((self.missing == MISSING_NAN) & nan)
        return np.where(default, self.default_left, value <= self.threshold)

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """(rows, trees): the global leaf each row reaches in each tree."""
        left = self.goes_left(x)
        node = np.broadcast_to(self.roots, (left.shape[0], self.num_trees)).copy()
        rows = np.arange(left.shape[0])[:, None]
        while (inner := node >= 0).any():
            at = np.where(inner, node, 0)
            step = np.where(left[rows, at], self.left[at], self.right[at])
            node = np.where(inner, step, node)
        return ~node

    def raw_score(self, x: np.ndarray) -> np.ndarray:
        """The sum of the trees' outputs per row, added in tree order as LightGBM adds them."""
        values = self.leaf_value[self.leaves(x)]
        return np.cumsum(values, axis=1)[:, -1] if self.num_trees else np.zeros(values.shape[0])

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """(rows, features + 1): each feature's SHAP contribution to the raw score, and last the
        bias (the trees' expected value); each row sums to its raw score."""
        left = self.goes_left(x)
        rows = left.shape[0]
        left = np.concatenate([left, np.ones((rows, 1), dtype=bool)], axis=1)  # the padding steps' column
        out = np.zeros(rows * self.num_feature)
        for group in self.paths:
            column = np.arange(rows)[:, None] * self.num_feature + group.player_feature[:, None, :]
            out += np.bincount(column.ravel(), weights=group.shapley(left).ravel(), minlength=rows * self.num_feature)
        return np.concatenate([out.reshape(rows, self.num_feature), np.full((rows, 1), self.bias)], axis=1)


@dataclass(frozen=True)
class LeafPaths:
    """Leaves whose paths have the same number of players (distinct features), unrolled for
    TreeSHAP and padded to the longest path among them with steps every row follows. The work
    per leaf grows with the square of its players: grouped so, a leaf of two players is not
    reckoned as one of the model's deepest."""

    leaf_value: np.ndarray  # (leaves,)
    player_feature: np.ndarray  # (players, leaves) the column a player stands for
    zero_fraction: np.ndarray  # (players, leaves) product of its splits' count shares
    step_node: np.ndarray  # (depth, leaves) the path's nodes; padding: the column of ones
    step_left: np.ndarray  # (depth, leaves) whether the path goes left there
    player_steps: np.ndarray  # (players, leaves) bit d set where the path's step d is that player's

    def shapley(self, left: np.ndarray) -> np.ndarray:
        """(players, rows, leaves): each player's Shapley value in each leaf's game, for rows
        that go left at each node as `left` says (rows, nodes + the padding steps' column)."""
        rows = left.shape[0]
        players, leaves = self.zero_fraction.shape
        strays = left[:, self.step_node] != self.step_left  # (rows, depth, leaves)
        # one[i]: 1.0 where the row follows every split of player i on the leaf's path, else 0.0
        missed = np.zeros((rows, leaves), dtype=np.int64)  # bit d: the row leaves the path at step d
        for d in range(strays.shape[1]):
            missed |= strays[:, d].astype(np.int64) << d
        on_path = (missed[None] & self.player_steps[:, None, :]) == 0
        one = on_path.astype(np.float64)
        zero = self.zero_fraction[:, None, :]
        # q[k]: the coefficient of t^k in the product over players of (zero + one t), the weight
        # of the coalitions of k players that the row follows.
        q = np.zeros((players + 1, rows, leaves))
        q[0] = 1.0
        for j in range(players):
            q[1:] = zero[j] * q[1:] + one[j] * q[:-1]
            q[0] *= zero[j]
        # Player i's Shapley weight: those coefficients with i's factor divided out (LightGBM's
        # UnwoundPathSum, for every player at once), each count of k others weighted
        # k! (players - 1 - k)! / players!. Divided by (zero_i + t) from the top: stable, zero_i <= 1.
        weight = [math.factorial(k) * math.factorial(players - 1 - k) / math.factorial(players)
                  for k in range(players)]
        unwound = np.broadcast_to(q[players], one.shape)
        followed = weight[players - 1] * unwound
        for k in range(players - 1, 0, -1):
            unwound = q[k] - zero * unwound
            followed = followed + weight[k - 1] * unwound
        # A player the row leaves: divided by zero_i alone (0 where no training row went that
        # way, as LightGBM's UnwoundPathSum skips it).
        left_out = np.divide(np.tensordot(weight, q[:players], axes=1), zero, out=np.zeros(one.shape), where=zero > 0)
        return np.where(on_path, followed, left_out) * (one - zero) * self.leaf_value


def _across(child: int, node_base: int, leaf_base: int) -> int:
    """A tree's child (node, or ~leaf) numbered across all the trees."""
    return child + node_base if child >= 0 else ~(~child + leaf_base)


def _grouped(paths: list[list[tuple[int, bool, float]]], feature: np.ndarray,
             leaf_value: np.ndarray) -> tuple[LeafPaths, ...]:
    """Each leaf's path as TreeSHAP sees it, the distinct features split on (a feature split on
    twice is one player whose fractions are the products of its splits'), in groups of leaves
    with as many players (`LeafPaths`)."""
    players = [len({int(feature[n]) for n, _, _ in p}) for p in paths]
    groups = []
    for count in sorted(set(players)):
        leaves = [i for i, p in enumerate(players) if p == count]
        group = [paths[i] for i in leaves]
        depth = max((len(p) for p in group), default=0) or 1
        if depth > 62:
            raise UnsupportedModel(f"a path of {depth} splits (at most 62 are evaluated here)")
        width = max(count, 1)
        player_feature = np.zeros((width, len(group)), dtype=np.int64)
        zero_fraction = np.ones((width, len(group)))
        step_node = np.full((depth, len(group)), len(feature), dtype=np.int64)  # the column of ones
        step_left = np.ones((depth, len(group)), dtype=bool)
        player_steps = np.zeros((width, len(group)), dtype=np.int64)
        for leaf, path in enumerate(group):
            slot: dict[int, int] = {}
            for d, (node, left, share) in enumerate(path):
                f = int(feature[node])
                p = slot.setdefault(f, len(slot))
                player_feature[p, leaf] = f
                zero_fraction[p, leaf] = share * zero_fraction[p, leaf]
                step_node[d, leaf], step_left[d, leaf] = node, left
                player_steps[p, leaf] |= 1 << d
        groups.append(LeafPaths(leaf_value[leaves], player_feature, zero_fraction, step_node, step_left, player_steps))
    return tuple(groups)
