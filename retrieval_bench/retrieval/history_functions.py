"""``similar-functions``: the functions that the past commits most similar to a question
changed, named as the snapshot names them (docs/stages.md#similar-functions).

BugLocator's SimiScore (Zhou, Zhang & Lo, ICSE 2012, §III-C) one level down: instead of
sharing a similar commit's similarity among the files it changed, share it among the
definitions it changed (:mod:`~retrieval_bench.retrieval.history_hunks`),

    score(path, name) = Σ_{c ∈ top-k} sim(q, c) / n_defs(c) · decay(age(c)),

``n_defs(c)`` the (file, name) pairs commit c changed, paths followed to the snapshot
S as the file signals follow them (:meth:`SnapshotHistory.at_s`). A bare name is then
resolved in the snapshot's file (:func:`name_entities`, :func:`entities_named`): a
``Class.method`` the file defines is that entity; otherwise every ``def NAME``/``class
NAME`` line of the file with the name's last part stands for the entity that holds it
as gold functions are named (``path:Class.method``, a function nested in a function
standing for its outer one: :func:`~retrieval_bench.retrieval.line_entities.line_entities`);
a name found on several lines shares its score among their entities, and a name the
file no longer has scores nothing. Only the ``top_files`` files with the highest summed score
are resolved, so a question parses a bounded number of files (each once per content
and process).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval.file_bm25 import file_source
from retrieval_bench.retrieval.history_hunks import CommitNames, definition_name
from retrieval_bench.retrieval.history_scores import decay
from retrieval_bench.retrieval.history_view import SnapshotHistory
from retrieval_bench.retrieval.line_entities import line_entities

_NAMES_KEY = ("history-name-entities",)


def similar_functions(
    history: SnapshotHistory,
    changed: Mapping[int, CommitNames],
    similar: Sequence[tuple[int, float]],
    half_life: float | None,
) -> dict[tuple[str, str], float]:
    """``(path at S, name)`` → score (module doc) over ``similar``, the ``(age, sim)`` of
    the chosen commits; ``changed`` holds each chosen age's changed names."""
    scores: dict[tuple[str, str], float] = {}
    for age, sim in similar:
        names = changed.get(age, ())
        n = sum(len(ns) for _, ns in names)
        if sim <= 0 or n == 0:
            continue
        share = sim / n * decay(age, half_life)
        for path, ns in names:
            now = history.at_s(age, path)
            if now is None:
                continue
            for name in ns:
                scores[(now, name)] = scores.get((now, name), 0.0) + share
    return scores


def name_entities(corpus: Corpus, path: str) -> dict[str, tuple[str, ...]]:
    """Each ``def``/``class`` name of ``path`` in ``corpus`` → the entities of its lines
    (module doc); empty for a file that is not Python or not read. Once per corpus and
    file."""
    known: dict[str, dict[str, tuple[str, ...]]] = corpus.derived(_NAMES_KEY, dict)
    found = known.get(path)
    if found is None:
        found = known[path] = _name_entities(corpus, path)
    return found


def _name_entities(corpus: Corpus, path: str) -> dict[str, tuple[str, ...]]:
    entities = line_entities(corpus, path)
    return lines_by_name(file_source(corpus, path)[0], entities) if entities else {}


def lines_by_name(text: str, entities: Sequence[str | None]) -> dict[str, tuple[str, ...]]:
    """Each ``def``/``class`` name of ``text`` → the entities holding its lines
    (``entities``: per line, the entity holding it, None outside every definition)."""
    out: dict[str, dict[str, None]] = {}
    for i, line in enumerate(text.split("\n")):
        name = definition_name(line)
        if name is not None and i < len(entities) and entities[i] is not None:
            out.setdefault(name, {})[str(entities[i])] = None
    return {name: tuple(ents) for name, ents in out.items()}


def entities_named(by_name: Mapping[str, tuple[str, ...]], path: str, name: str) -> tuple[str, ...]:
    """The entities of ``path`` that a changed ``name`` (bare, or ``Class.method``)
    stands for: the entity of that exact name when the file has it, else every entity
    holding a ``def``/``class`` line of its last part (module doc)."""
    found = by_name.get(name.rpartition(".")[2], ())
    exact = f"{path}:{name}"
    return (exact,) if exact in found else found


def resolve(
    corpus: Corpus,
    paths: Collection[str],
    scores: Mapping[tuple[str, str], float],
    top_files: int,
) -> dict[str, float]:
    """``(path, name)`` scores → entity (``path:Qualified.name``) scores, over the
    ``top_files`` files of ``paths`` (the corpus's, a set) with the highest summed score
    (module doc)."""
    per_file: dict[str, float] = {}
    for (path, _), s in scores.items():
        if path in paths:
            per_file[path] = per_file.get(path, 0.0) + s
    wanted = set(sorted(per_file, key=lambda p: (-per_file[p], p))[:top_files])
    out: dict[str, float] = {}
    for (path, name), s in scores.items():
        if path not in wanted:
            continue
        ents = entities_named(name_entities(corpus, path), path, name)
        for entity in ents:
            out[entity] = out.get(entity, 0.0) + s / len(ents)
    return out
