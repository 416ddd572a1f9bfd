"""The typed registries and the stage contracts: what can be registered, what the
harness reads from a registered class, and how tests register without patching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.fusion import Fusion
from retrieval_bench.contracts.params import StageParams, StageServices
from retrieval_bench.contracts.registry import FUSIONS, RERANKERS, RETRIEVERS, Registry
from retrieval_bench.contracts.reranker import Reranker
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM
from retrieval_bench.types import Example, Run


class Echo(Retriever):
    """Returns every chunk with score 1."""

    class Params(StageParams):
        label: str = "echo"

    def __init__(self, params: Echo.Params | None = None, /, **values: Any) -> None:
        super().__init__()
        self.name = self.Params.of(params, **values).label
        self.ids: list[str] = []

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        self.ids = [c.id for c in corpus.chunks]

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        return Run(self.name, {q: dict.fromkeys(self.ids[:k], 1.0) for q in queries})


class Unfinished(Retriever):  # no search: abstract
    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        pass


class NotAStage:
    def search(self, queries: Mapping[str, str], k: int) -> Run:
        return Run("x")


class Trained(Echo):
    trainable = True

    def fit(self, examples: Sequence[Example], corpus: Corpus) -> None:
        self.ids = self.ids[:1]


def make_echo() -> Any:
    return NotAStage()


# -- the built-ins' declared capabilities ------------------------------------------------
def test_built_in_retrievers_declare_what_the_harness_must_give_them() -> None:
    flags = {
        name: (c.needs_llm, c.uses_vector_index, c.trainable)
        for name in RETRIEVERS.names()
        for c in [RETRIEVERS.type_of(name)]
    }
    assert flags == {
        "bm25": (False, False, False),
        "bm25-files": (False, False, False),
        "dense": (False, True, False),
        "dense-adapted": (False, True, True),
        "exact": (True, False, False),
        "external": (False, False, False),
        "fuzzy": (False, False, False),
        "history": (False, False, False),
        "hyde": (True, True, False),
    }
    # only history is handed the snapshot (its commit and mirror: docs/stages.md#history)
    given = [n for n in RETRIEVERS.names() if RETRIEVERS.type_of(n).uses_snapshot]
    assert given == ["history"]
    for kind in (FUSIONS, RERANKERS):
        assert not any(kind.type_of(n).uses_snapshot for n in kind.names())


def test_built_in_fusions_and_rerankers_declare_training_and_llm_use() -> None:
    assert [n for n in FUSIONS.names() if FUSIONS.type_of(n).trainable] == ["learned", "optimized"]
    assert not any(FUSIONS.type_of(n).needs_llm for n in FUSIONS.names())
    llm = {n: RERANKERS.type_of(n).needs_llm for n in RERANKERS.names()}
    assert llm == {
        "code-graph": False,
        "cross-encoder": False,
        "file-size": False,
        "llm-logprob": True,
        "llm-select": True,
        "llm-yesno": True,
    }


def test_every_entry_is_a_subclass_of_its_kind() -> None:
    for kind in registry.KINDS:
        stages = registry.registry_for(kind)
        for name in stages.names():
            assert issubclass(stages.type_of(name), stages.base), (kind, name)


def test_every_built_in_declares_typed_frozen_params_that_refuse_unknown_keys() -> None:
    for kind in registry.KINDS:
        stages = registry.registry_for(kind)
        for name in stages.names():
            params = stages.params_of(name)
            assert issubclass(params, StageParams), (kind, name)
            config = params.model_config
            assert config.get("extra") == "forbid" and config.get("frozen"), (kind, name)
            assert "llm" not in params.model_fields, (kind, name)  # a service, not a parameter
            with pytest.raises(ConfigError, match="unknown parameter 'no_such_key'"):
                params.of(no_such_key=1)


def test_a_wrapper_nests_its_inner_stages_params() -> None:
    assert issubclass(RETRIEVERS.params_of("bm25-files"), RETRIEVERS.params_of("bm25"))


def test_create_returns_the_kind_and_checks_parameters() -> None:
    rrf = FUSIONS.create("rrf", k_rrf=10)
    assert isinstance(rrf, Fusion) and rrf.failures == {} and rrf.artifacts == {}
    assert isinstance(registry.create("fusions", "concat"), Fusion)  # the kind-string form
    with pytest.raises(ConfigError, match="fusion 'rrf': nonsense: unknown parameter 'nonsense'"):
        FUSIONS.create("rrf", nonsense=1)
    with pytest.raises(ConfigError, match="fusion 'rrf': k_rrf: Input should be a valid"):
        FUSIONS.create("rrf", {"k_rrf": "sixty"})
    assert FUSIONS.create("rrf", FUSIONS.params_of("rrf").of(k_rrf=7)).k_rrf == 7
    with pytest.raises(ConfigError, match=r"unknown reranker 'nope'; choose one of: .*llm-yesno"):
        RERANKERS.get("nope")
    with pytest.raises(ValueError, match="unknown registry kind 'widgets'"):
        registry.registry_for("widgets")


# -- registering ---------------------------------------------------------------------------
def test_registered_is_undone_on_exit_and_restores_a_replaced_entry() -> None:
    with RETRIEVERS.registered("echo", Echo):
        assert RETRIEVERS.get("echo") is Echo
        echo = RETRIEVERS.create("echo", label="e")
        assert isinstance(echo, Echo) and echo.name == "e"
    assert "echo" not in RETRIEVERS
    bm25 = RETRIEVERS.get("bm25")
    with RETRIEVERS.registered("bm25", Echo):
        assert RETRIEVERS.get("bm25") is Echo
    assert RETRIEVERS.get("bm25") is bm25


def test_scoped_keeps_only_the_named_entries_and_undoes_everything() -> None:
    before = FUSIONS.names()
    with FUSIONS.scoped(keep=["rrf"]) as fusions:
        assert fusions.names() == ["rrf"]
        fusions.unregister("rrf")
        assert fusions.names() == []
        with pytest.raises(KeyError):
            fusions.unregister("rrf")
    assert FUSIONS.names() == before
    with pytest.raises(KeyError, match="no fusion registered as nope"), FUSIONS.scoped(["nope"]):
        pass


def test_only_concrete_subclasses_of_the_kind_can_be_registered() -> None:
    with RETRIEVERS.scoped():
        with pytest.raises(TypeError, match="is not a subclass of Retriever"):
            RETRIEVERS.register("x")(NotAStage)
        with pytest.raises(TypeError, match="Unfinished is abstract; implement search"):
            RETRIEVERS.register("x")(Unfinished)
        with pytest.raises(TypeError, match="is not a subclass of Fusion"):
            FUSIONS.register("x")(Echo)
        with pytest.raises(TypeError, match="registered with returns="):
            RETRIEVERS.register("x")(make_echo)
        assert "x" not in RETRIEVERS


def test_a_wrapped_function_must_build_what_it_declares() -> None:
    with RETRIEVERS.registered("echo-fn", make_echo, returns=Echo):
        assert RETRIEVERS.type_of("echo-fn") is Echo
        with pytest.raises(ConfigError, match="its factory made a NotAStage, not a Echo"):
            RETRIEVERS.create("echo-fn")


def test_entry_points_load_after_built_ins_and_a_broken_one_fails_when_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    group = "retrieval_bench.retrievers"
    points = [
        EntryPoint("echo", f"{__name__}:Echo", group),
        EntryPoint("bm25", f"{__name__}:Echo", group),  # never replaces a built-in
        EntryPoint("broken", f"{__name__}:NotAStage", group),
        EntryPoint("missing", "no_such_module_xyz:Thing", group),
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: points)
    fresh: Registry[Retriever] = Registry("retrievers", Retriever)
    fresh.register("bm25")(Trained)  # registered before the first lookup, like a built-in
    assert fresh.names() == ["bm25", "echo"]
    assert fresh.get("echo") is Echo and fresh.get("bm25") is Trained
    with pytest.raises(
        ConfigError, match=rf"retriever 'broken': the entry point {__name__}:NotAStage"
    ):
        fresh.get("broken")
    with pytest.raises(ConfigError, match="no_such_module_xyz:Thing .*ModuleNotFoundError"):
        fresh.create("missing")


# -- the contracts ------------------------------------------------------------------------
def test_trainable_and_fit_go_together() -> None:
    with pytest.raises(TypeError, match="declares trainable = True but has no fit"):

        class Lazy(Echo):
            trainable = True

    with pytest.raises(TypeError, match="implements fit\\(\\) but does not declare trainable"):

        class Sneaky(Echo):
            def fit(self, examples: Sequence[Example], corpus: Corpus) -> None:
                pass

    assert Trained.trainable and not Echo.trainable
    with pytest.raises(NotImplementedError, match="Echo is not trainable"):
        Echo().fit([], Corpus(Path("."), []))


class NeedsModel(Reranker):
    """Declares needs_llm: the harness hands it the run's client."""

    needs_llm = True

    def __init__(self, llm: LLM | None = None) -> None:
        super().__init__()
        self.llm = llm

    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        return run


def test_services_reach_only_the_stages_that_declare_them() -> None:
    client = object()
    with RERANKERS.registered("odd", NeedsModel):
        made = RERANKERS.create("odd", {}, StageServices(llm=client))
        assert isinstance(made, NeedsModel) and made.llm is client
        assert RERANKERS.create("odd", llm=client).llm is client  # the keyword shorthand
    plain = FUSIONS.create("rrf", {}, StageServices(llm=client))  # declares no llm: none given
    assert not hasattr(plain, "llm")
