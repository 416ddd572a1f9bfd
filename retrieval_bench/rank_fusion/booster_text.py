"""A LightGBM booster in its text format, checked before LightGBM reads it
(docs/stages.md#learning-to-rank).

LightGBM parses a model string's trees in C++, in parallel, trusting what it
reads: a tree block without ``leaf_value`` ends the whole process (``terminate
called ...``, exit 134) instead of raising, an array shorter than ``num_leaves``
says is read past its end, and a ``tree_sizes`` entry that does not match its
block sends the parser into another tree. The ``ltr`` fusion reads boosters
from a model file the user names, so :func:`check_booster` checks the text the
way LightGBM 4's ``GBDT::LoadModelFromString`` and ``Tree::Tree`` read it, and
only what passes is handed to LightGBM (whose own errors, raised as
exceptions, are then reported as such):

* the header (``key=value`` lines up to the first ``Tree=``): one class and one
  tree per iteration, a ranking ``objective`` (an empty one crashed LightGBM 4.7
  with SIGSEGV), ``max_feature_idx`` the model file's feature
  count less one, as many ``feature_names`` and ``feature_infos``, and
  ``tree_sizes``, whose byte counts must cut the rest into the blocks
  ``Tree=0``, ``Tree=1``, ... exactly;
* each block: at most 22 ``key=value`` lines (what LightGBM reads) ended by
  empty lines only; ``num_leaves`` (>= 1), ``num_cat`` (0: ``fit-ltr`` writes no
  categorical splits), ``leaf_value``; with more than one leaf, ``split_feature``,
  ``threshold``, ``left_child`` and ``right_child``; every array present has its
  length (``num_leaves`` or ``num_leaves - 1``) of decimal numbers; no linear
  trees; features within ``max_feature_idx``; and the children form one tree
  (each node and leaf reached once from the root), so a prediction never loops
  or reads outside the arrays.

What follows the trees (feature importances, the training ``parameters:``,
``pandas_categorical``) is not needed to predict and is not handed to LightGBM:
a damaged ``parameters:`` line made LightGBM 4.7 crash (SIGSEGV) now and then.
So what LightGBM reads has the shape LightGBM itself writes
(``Booster.model_to_string``), with the same predictions; this is what makes
loading it in the same process safe, and costs about 30 ms per booster of 200
trees (regular expressions over whole lines, integers parsed only where they
index something).
"""

from __future__ import annotations

import re

_NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_NUMS = re.compile(rf"{_NUM}(?: {_NUM})*")
_INT = r"-?\d{1,9}"  # well inside a C int
_INTS = re.compile(rf"{_INT}(?: {_INT})*")
_DECISIONS = re.compile(r"(?:0|2|4|6|8|10)(?: (?:0|2|4|6|8|10))*")
"""Numerical splits: default-left bit (2) and missing type (4, 8) only."""
_OBJECTIVES = ("lambdarank", "rank_xendcg")
"""The ranking objectives (``fit-ltr`` writes ``lambdarank``)."""
_MAX_LINES = 22
"""Lines of a tree block LightGBM reads (``Tree::Tree``: ``max_num_line``)."""

_LEAF_ARRAYS = ("leaf_value", "leaf_weight", "leaf_count")
_NODE_ARRAYS = ("split_feature", "split_gain", "threshold", "decision_type", "left_child",
                "right_child", "internal_value", "internal_weight", "internal_count")  # fmt: skip
_NEEDED_WITH_SPLITS = ("split_feature", "threshold", "left_child", "right_child")
_INT_ARRAYS = frozenset({"leaf_count", "split_feature", "decision_type", "left_child",
                         "right_child", "internal_count"})  # fmt: skip
_WALKED = frozenset({"split_feature", "left_child", "right_child"})
"""The integer arrays whose values are used here (the others are only matched)."""


class BoosterTextError(ValueError):
    """The booster text is not one LightGBM can read safely; says where and why."""


def _int(value: str, what: str) -> int:
    if not re.fullmatch(_INT, value):
        raise BoosterTextError(f"{what} {value[:40]!r} is not an integer")
    return int(value)


def _header(lines: list[str]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for line in lines:
        key, eq, value = line.partition("=")
        if eq and "=" in value and key != "feature_names":
            raise BoosterTextError(f"header line {line[:60]!r} has more than one '='")
        keys[key] = value
    return keys


def _check_header(keys: dict[str, str], n_features: int) -> list[int]:
    """The tree sizes, once the header says what this booster must be."""
    for key in ("num_class", "num_tree_per_iteration", "label_index", "max_feature_idx",
                "feature_names", "feature_infos", "tree_sizes"):  # fmt: skip
        if key not in keys:
            raise BoosterTextError(f"the header has no {key}")
    for key in ("num_class", "num_tree_per_iteration"):
        if _int(keys[key], key) != 1:
            raise BoosterTextError(f"{key} is {keys[key]}, not 1 (a ranker's booster)")
    _int(keys["label_index"], "label_index")
    if keys.get("objective", _OBJECTIVES[0]) not in _OBJECTIVES:
        # an empty or unknown-to-the-parser objective crashed LightGBM 4.7 (SIGSEGV)
        raise BoosterTextError(f"objective {keys['objective'][:40]!r} is not one of "
                               f"{', '.join(_OBJECTIVES)}")  # fmt: skip
    if _int(keys["max_feature_idx"], "max_feature_idx") != n_features - 1:
        raise BoosterTextError(
            f"max_feature_idx is {keys['max_feature_idx']}: the booster does not take "
            f"the model file's {n_features} features"
        )
    for key in ("feature_names", "feature_infos"):
        if len(keys[key].split(" ")) != n_features:
            raise BoosterTextError(f"{key} does not name {n_features} features")
    if not _INTS.fullmatch(keys["tree_sizes"]):
        raise BoosterTextError("tree_sizes is not a list of byte counts")
    sizes = [int(s) for s in keys["tree_sizes"].split(" ")]
    if any(s <= 0 for s in sizes):
        raise BoosterTextError("tree_sizes holds a size that is not positive")
    return sizes


def _array(keys: dict[str, str], key: str, length: int, where: str) -> list[int] | None:
    """Check ``keys[key]`` (when present) holds ``length`` numbers (integers for an
    integer array); its values for the arrays walked here (:data:`_WALKED`), else None."""
    if key not in keys:
        return None
    value = keys[key]
    pattern = _INTS if key in _INT_ARRAYS else _NUMS
    if not pattern.fullmatch(value):
        kind = "integers" if key in _INT_ARRAYS else "numbers"
        raise BoosterTextError(f"{where}: {key} is not a list of {kind}")
    found = value.count(" ") + 1
    if found != length:
        raise BoosterTextError(f"{where}: {key} has {found} values, not {length}")
    return [int(v) for v in value.split(" ")] if key in _WALKED else None


def _check_children(left: list[int], right: list[int], leaves: int, where: str) -> None:
    """Every internal node and leaf reached exactly once from the root (node 0):
    children ``>= 0`` are nodes, ``~leaf`` (``< 0``) leaves."""
    seen_nodes, seen_leaves = {0}, set()
    stack = [0]
    while stack:
        node = stack.pop()
        for child in (left[node], right[node]):
            if child >= 0:
                if child >= leaves - 1 or child in seen_nodes:
                    raise BoosterTextError(f"{where}: node {node}'s child {child} is not a tree")
                seen_nodes.add(child)
                stack.append(child)
            else:
                if ~child >= leaves or ~child in seen_leaves:
                    raise BoosterTextError(f"{where}: node {node}'s leaf {~child} is not a tree")
                seen_leaves.add(~child)
    if len(seen_nodes) != leaves - 1 or len(seen_leaves) != leaves:
        raise BoosterTextError(f"{where}: some nodes or leaves are not reached from the root")


def _check_tree(block: str, index: int, n_features: int) -> None:
    where = f"Tree={index}"
    lines = block.split("\n")
    if lines[0] != where:
        raise BoosterTextError(f"tree_sizes does not match the trees: {where} is not where "
                               f"it says (found {lines[0][:40]!r})")  # fmt: skip
    body = lines[1:]
    if "" not in body:
        raise BoosterTextError(f"{where}: the block does not end with an empty line")
    if any(body[body.index("") :]):
        # LightGBM would skip it, but scans it for a "parameters:" section
        raise BoosterTextError(f"{where}: text after the tree's empty line (tree_sizes?)")
    body = body[: body.index("")]
    if len(body) > _MAX_LINES:
        raise BoosterTextError(f"{where}: {len(body)} lines, LightGBM reads {_MAX_LINES}")
    keys: dict[str, str] = {}
    for line in body:
        key, eq, value = line.partition("=")
        if not eq:
            raise BoosterTextError(f"{where}: line {line[:40]!r} is not key=value")
        keys[key] = value
    for key in ("num_leaves", "num_cat", "leaf_value"):
        if key not in keys:
            raise BoosterTextError(f"{where}: no {key}")
    leaves = _int(keys["num_leaves"], f"{where}: num_leaves")
    if leaves < 1:
        raise BoosterTextError(f"{where}: num_leaves is {leaves}, not >= 1")
    if _int(keys["num_cat"], f"{where}: num_cat") != 0:
        raise BoosterTextError(f"{where}: categorical splits (num_cat) are not supported")
    if keys.get("is_linear", "0") != "0":
        raise BoosterTextError(f"{where}: linear trees (is_linear) are not supported")
    if "shrinkage" in keys and not re.fullmatch(_NUM, keys["shrinkage"]):
        raise BoosterTextError(f"{where}: shrinkage is not a number")
    for key in _LEAF_ARRAYS:
        _array(keys, key, leaves, where)
    if leaves == 1:
        return
    missing = [k for k in _NEEDED_WITH_SPLITS if k not in keys]
    if missing:
        raise BoosterTextError(f"{where}: {leaves} leaves but no {', '.join(missing)}")
    ints = {key: _array(keys, key, leaves - 1, where) for key in _NODE_ARRAYS}
    features = ints["split_feature"] or [0]
    if min(features) < 0 or max(features) >= n_features:
        raise BoosterTextError(f"{where}: split_feature names a feature beyond "
                               f"max_feature_idx {n_features - 1}")  # fmt: skip
    if "decision_type" in keys and not _DECISIONS.fullmatch(keys["decision_type"]):
        raise BoosterTextError(f"{where}: decision_type holds a categorical or unknown split")
    _check_children(ints["left_child"] or [], ints["right_child"] or [], leaves, where)


def check_booster(text: str, n_features: int) -> str:
    """The part of ``text`` LightGBM is to read — the header and the trees, then
    ``end of trees`` — once it is found safe and to take ``n_features`` features
    (module doc); else :class:`BoosterTextError`."""
    if "\0" in text or "\r" in text:
        raise BoosterTextError("a NUL or carriage return in the text")
    data = text.encode("utf-8")
    start = data.find(b"\nTree=")
    if start < 0:
        raise BoosterTextError("no tree (no Tree= line)")
    header = [line for line in data[:start].decode("utf-8").split("\n") if line]
    sizes = _check_header(_header(header), n_features)
    pos = start + 1
    for index, size in enumerate(sizes):
        if pos + size > len(data):
            raise BoosterTextError(f"tree_sizes runs past the end of the text at Tree={index}")
        try:
            block = data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError:
            raise BoosterTextError(f"tree_sizes cuts Tree={index} inside a character") from None
        _check_tree(block, index, n_features)
        pos += size
    return data[:pos].decode("utf-8") + "end of trees\n"
