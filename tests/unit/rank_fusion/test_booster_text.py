"""A LightGBM booster's text is checked before LightGBM reads it
(rank_fusion/booster_text.py): each defect that made LightGBM abort, crash or read
past an array is one :class:`BoosterTextError` naming where it is."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

from retrieval_bench.rank_fusion.booster_text import BoosterTextError, check_booster

N = 5


@pytest.fixture(scope="module")
def booster() -> str:
    import lightgbm

    rng = np.random.default_rng(0)
    x = rng.random((200, N))
    y = (x[:, 0] > 0.5).astype(float)
    params = {"objective": "lambdarank", "num_leaves": 4, "min_data_in_leaf": 5,
              "verbosity": -1, "num_threads": 1, "seed": 0, "deterministic": True}  # fmt: skip
    data = lightgbm.Dataset(x, label=y, group=[20] * 10)
    text: str = lightgbm.train(params, data, num_boost_round=3).model_to_string()
    return text


def _edit_tree(text: str, tree: int, edit: Callable[[list[str]], list[str]]) -> str:
    """``edit`` the key lines of one tree block, keeping ``tree_sizes`` true."""
    head, _, rest = text.partition(f"Tree={tree}\n")
    body, sep, tail = rest.partition("\n\n")
    old = body.split("\n")
    new = edit(old)
    delta = len("\n".join(new)) - len("\n".join(old))
    sizes = re.search(r"tree_sizes=(.*)\n", head)
    assert sizes is not None
    values = sizes.group(1).split(" ")
    values[tree] = str(int(values[tree]) + delta)
    head = head.replace(sizes.group(0), "tree_sizes=" + " ".join(values) + "\n")
    return head + f"Tree={tree}\n" + "\n".join(new) + sep + tail


def _drop(key: str) -> Callable[[list[str]], list[str]]:
    return lambda lines: [line for line in lines if not line.startswith(key + "=")]


def _set(key: str, value: str) -> Callable[[list[str]], list[str]]:
    return lambda lines: [f"{key}={value}" if line.startswith(key + "=") else line
                          for line in lines]  # fmt: skip


def test_lightgbms_own_text_passes_and_what_follows_the_trees_is_left_out(booster: str) -> None:
    import lightgbm

    checked = check_booster(booster, N)
    assert checked.endswith("end of trees\n") and "parameters:" in booster
    assert "parameters:" not in checked and "feature_importances" not in checked
    x = np.random.default_rng(1).random((40, N))
    original = lightgbm.Booster(model_str=booster).predict(x)
    assert (lightgbm.Booster(model_str=checked).predict(x) == original).all()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_drop("leaf_value"), "Tree=1: no leaf_value"),
        (_drop("num_cat"), "Tree=1: no num_cat"),
        (_drop("left_child"), "Tree=1: 4 leaves but no left_child"),
        (_set("leaf_value", "0.1 0.2 0.3"), "Tree=1: leaf_value has 3 values, not 4"),
        (_set("right_child", "1 2"), "Tree=1: right_child has 2 values, not 3"),
        (_set("threshold", "0.5 x 0.2"), "Tree=1: threshold is not a list of numbers"),
        (_set("threshold", "0.5  0.2"), "Tree=1: threshold is not a list of numbers"),
        (_set("split_feature", "0 7 1"), "Tree=1: split_feature names a feature beyond"),
        # Tree=1: left_child=1 -1 -3, right_child=-2 2 -4 (a loop, a node twice, no leaf 8)
        (_set("left_child", "1 -1 0"), "Tree=1: node 2's child 0 is not a tree"),
        (_set("left_child", "1 -1 1"), "Tree=1: node 2's child 1 is not a tree"),
        (_set("right_child", "-2 2 -9"), "Tree=1: node 2's leaf 8 is not a tree"),
        (_set("decision_type", "2 3 2"), "Tree=1: decision_type holds a categorical"),
        (_set("num_cat", "1"), "Tree=1: categorical splits (num_cat) are not supported"),
        (_set("is_linear", "1"), "Tree=1: linear trees (is_linear) are not supported"),
        (_set("num_leaves", "0"), "Tree=1: num_leaves is 0, not >= 1"),
        (_set("num_leaves", "x"), "Tree=1: num_leaves 'x' is not an integer"),
        (lambda lines: [*lines, "oops"], "Tree=1: line 'oops' is not key=value"),
        (lambda lines: lines + [f"k{i}=1" for i in range(7)],
         "Tree=1: 23 lines, LightGBM reads 22"),
    ],
)  # fmt: skip
def test_a_damaged_tree_block(
    booster: str, edit: Callable[[list[str]], list[str]], message: str
) -> None:
    with pytest.raises(BoosterTextError) as err:
        check_booster(_edit_tree(booster, 1, edit), N)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("max_feature_idx=4", "max_feature_idx=6", "max_feature_idx is 6: the booster does not"),
        ("num_class=1", "num_class=0", "num_class is 0, not 1"),
        ("num_tree_per_iteration=1", "num_tree_per_iteration=0", "num_tree_per_iteration is 0"),
        ("objective=lambdarank", "objective=", "objective '' is not one of"),
        ("objective=lambdarank", "objective=custom", "objective 'custom' is not one of"),
        ("label_index=0\n", "", "the header has no label_index"),
        ("Tree=1\n", "Tree=7\n", "tree_sizes does not match the trees: Tree=1"),
        ("\n\nTree=2", "\nextra=1\n\nTree=2", "Tree=1: text after the tree's empty line"),
        ("\x0a", "\x00\n", "a NUL or carriage return"),
    ],
)  # fmt: skip
def test_a_damaged_header_or_layout(booster: str, old: str, new: str, message: str) -> None:
    assert old in booster
    with pytest.raises(BoosterTextError) as err:
        check_booster(booster.replace(old, new, 1), N)
    assert str(err.value).startswith(message), str(err.value)


def test_wrong_tree_sizes_and_a_cut_text(booster: str) -> None:
    sizes = re.search(r"tree_sizes=(\d+)", booster)
    assert sizes is not None
    shifted = booster.replace(sizes.group(0), f"tree_sizes={int(sizes.group(1)) - 5}", 1)
    with pytest.raises(BoosterTextError, match="Tree=0|Tree=1"):
        check_booster(shifted, N)
    cut = booster[: booster.index("Tree=2") + 20]
    with pytest.raises(BoosterTextError, match="runs past the end of the text at Tree=2"):
        check_booster(cut, N)
    with pytest.raises(BoosterTextError, match="no tree"):
        check_booster("tree\nversion=v4\n", N)


def test_fitting_too_few_rows_fails_the_fit_command_not_a_later_run() -> None:
    """With fewer rows than ``min_data_in_leaf`` no tree splits and LightGBM writes
    empty leaves, which the model-file check refuses: the fit says so itself."""
    from retrieval_bench.errors import ConfigError
    from retrieval_bench.rank_fusion.lambdamart import fit_readable

    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.2, 0.8]])
    y = np.array([1.0, 0.0, 0.0, 1.0])
    with pytest.raises(ConfigError, match=r"fit-ltr: the model fitted on 4 candidates of 2 "
                                          r"questions could not be read back"):  # fmt: skip
        fit_readable(x, y, [2, 2], "fit-ltr", rounds=5)
    rng = np.random.default_rng(0)
    many = rng.random((400, 2))
    labels = (many[:, 0] > 0.5).astype(np.float64)
    model = fit_readable(many, labels, [8] * 50, "fit-ltr", rounds=5)
    assert model.predict(many).shape == (400,)
