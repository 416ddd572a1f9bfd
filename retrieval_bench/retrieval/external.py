"""``external``: another system's ranked files, scored like any stage
(docs/stages.md#external).

The stage reads a file of predictions made elsewhere (LocAgent's or
SweRank's released outputs, a TREC run of any system) and hands them on as a
run of ``file:<path>`` ids, which scoring maps to files whether or not our
snapshot has them, so a file the other system named that is absent from the
snapshot counts as retrieved and non-relevant, as in trec_eval
(docs/metrics.md#file-level-runs). Formats:

* ``trec``: ``qid Q0 path rank score tag`` per line, ranked by score (the rank
  column is ignored, as trec_eval does); percent-encoded ids decode as in
  :mod:`retrieval_bench.store.trec`;
* ``jsonl``: one object per line, its query id under ``instance_id``,
  ``query_id`` or ``id``, and its files best first as ``found_files: [path,
  ...]`` or ``files: [path | {path, score}, ...]``. With ``field:
  found_entities`` (or ``found_modules``) the stage reads LocAgent's entity
  lists instead (``path:Class.method``, best first) and ranks them as
  ``entity:`` ids: files at file level by their best entity, the entities
  themselves at function and module level (docs/metrics.md#function-and-module-level).

Query ids match the dataset's exactly, after ``strip_prefix`` is removed and
``id_map`` (a mapping, or a JSON file of one: external id → dataset id) is
applied. The file is checked before any work (:meth:`ExternalRun.check_inputs`,
called by the harness once per run with every question id of the run): a
missing, unreadable or malformed file, or one whose ids match none of the
questions searched (a forgotten ``strip_prefix``), stops the run with one line
— a stage that fails every query would only score 0 under a ``done`` run.
Rows for ids the datasets lack, repeated rows or files, and searched
questions without a row are reported then, with one warning each (the first
row, and a file's best rank, kept); such a question fails with ``no external
result``. ``search`` itself warns nothing: with per-question snapshots it runs
once per snapshot.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.contracts.stage import Ranks
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import RBenchError
from retrieval_bench.identifiers import entity_problem
from retrieval_bench.runs.file_ids import entity_id, file_id
from retrieval_bench.store.trec import decode_id
from retrieval_bench.types import Run

if TYPE_CHECKING:
    from retrieval_bench.index.store import CodebaseIndex

log = logging.getLogger(__name__)

ID_KEYS = ("instance_id", "query_id", "id")
FILE_KEYS = ("found_files", "files")


class ExternalRunError(RBenchError, ValueError):
    """An external predictions file is missing, unreadable or malformed."""


Rankings = dict[str, dict[str, float]]
"""External query id → path → score (higher = better)."""


def _clean(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def read_trec(path: Path, dups: list[str]) -> Rankings:
    """A TREC run over file paths; a repeated (query, file) keeps its best score."""
    out: Rankings = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ExternalRunError(
                    f"{path}:{lineno}: a TREC run line has 6 fields "
                    f"(qid Q0 path rank score tag), found {len(parts)}"
                )
            qid, doc = decode_id(parts[0]), _clean(decode_id(parts[2]))
            try:
                score = float(parts[4])
            except ValueError:
                raise ExternalRunError(
                    f"{path}:{lineno}: score {parts[4]!r} is not a number"
                ) from None
            files = out.setdefault(qid, {})
            if doc in files:
                dups.append(f"{qid} {doc}")
                score = max(score, files[doc])
            files[doc] = score
    return out


ENTITY_FIELDS = ("found_entities", "found_modules")


def _files_of(
    row: dict[str, Any], where: str, dups: list[str], qid: str, keys: tuple[str, ...] = FILE_KEYS
) -> dict[str, float]:
    key = next((k for k in keys if k in row), None)
    if key is None:
        raise ExternalRunError(f"{where}: no {' or '.join(keys)} list")
    items = row[key]
    if not isinstance(items, list):
        raise ExternalRunError(f"{where}: {key} is not a list")
    files: dict[str, float] = {}
    for pos, item in enumerate(items):
        score = 1.0 / (pos + 1)
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            path, given = item["path"], item.get("score", score)
            if isinstance(given, bool) or not isinstance(given, int | float):
                raise ExternalRunError(f"{where}: score {given!r} of {path!r} is not a number")
            score = float(given)
        elif isinstance(item, str):
            path = item
        else:
            raise ExternalRunError(f"{where}: {key} item {item!r} is not a path or {{path, score}}")
        path = _clean(path)
        if not path:
            raise ExternalRunError(f"{where}: an empty path in {key}")
        problem = entity_problem(path) if key in ENTITY_FIELDS else None
        if problem is not None:
            raise ExternalRunError(f"{where}: {key}: {problem}")
        if path in files:
            dups.append(f"{qid} {path}")
            continue  # the best (first) rank is kept
        files[path] = score
    return files


def read_jsonl(path: Path, dups: list[str], keys: tuple[str, ...] = FILE_KEYS) -> Rankings:
    """JSONL rows ``{instance_id|query_id|id, found_files|files}``; a repeated row is ignored."""
    out: Rankings = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExternalRunError(f"{where}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ExternalRunError(f"{where}: expected a JSON object")
            key = next((k for k in ID_KEYS if k in row), None)
            if key is None or not isinstance(row[key], str | int) or row[key] == "":
                raise ExternalRunError(f"{where}: no query id ({', '.join(ID_KEYS)})")
            qid = str(row[key])
            files = _files_of(row, where, dups, qid, keys)
            if qid in out:
                dups.append(qid)
                continue
            out[qid] = files
    return out


def _load_id_map(id_map: str | Mapping[str | int, str | int] | None) -> dict[str, str]:
    if id_map is None:
        return {}
    if isinstance(id_map, Mapping):
        return {str(k): str(v) for k, v in id_map.items()}
    try:
        data = json.loads(Path(id_map).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExternalRunError(f"id_map {id_map}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ExternalRunError(f"id_map {id_map}: expected a JSON object (external id → id)")
    return {str(k): str(v) for k, v in data.items()}


class ExternalRun(Retriever):
    """Another system's ranked files, read from ``path`` (module docstring).

    Parameters (:class:`Params`): ``path`` (the predictions file; relative to the
    config's folder), ``format`` (``trec`` or ``jsonl``; default from the suffix:
    ``.jsonl``/``.json`` → jsonl, else trec), ``strip_prefix`` (removed from
    the external query ids), ``id_map`` (external id → dataset id, or a JSON
    file of that mapping), ``field`` (``found_files`` by default; ``found_entities`` or
    ``found_modules``: LocAgent's entity lists, as ``entity:`` ids; jsonl only).
    """

    class Params(StageParams):
        path: Path
        format: Literal["trec", "jsonl"] | None = None
        strip_prefix: str = ""
        id_map: str | dict[str | int, str | int] | None = None  # ids as str() gives them
        field: str = "found_files"  # checked by the stage (ExternalRunError), not here

    params: ExternalRun.Params
    name = "external"

    def __init__(self, params: ExternalRun.Params | None = None, /, **values: Any) -> None:
        p = self.params = self.Params.of(params, **values)
        field = p.field
        if field not in ("found_files", *ENTITY_FIELDS):
            raise ExternalRunError(f"external: field {field!r} is not found_files, "
                                   "found_entities or found_modules")  # fmt: skip
        super().__init__()
        self.field = field
        self.path = p.path
        self.format = p.format or ("jsonl" if self.path.suffix in (".jsonl", ".json") else "trec")
        self.strip_prefix = p.strip_prefix
        self.id_map = p.id_map
        self._rankings: Rankings | None = None
        self._paths: set[str] = set()

    @classmethod
    def ranks_for(cls, params: Mapping[str, Any], inputs: Sequence[Ranks | None]) -> Ranks | None:
        """Files (``file:`` ids); with an entity ``field``, entities: ranked like chunks."""
        return "files" if params.get("field", "found_files") == "found_files" else "chunks"

    def index(self, corpus: Corpus, codebase_index: CodebaseIndex | None = None) -> None:
        """Read the predictions (checked before the run by :meth:`check_inputs`; a file
        changed since then raises here: the stage fails, the run goes on)."""
        self._paths = set(corpus.paths)
        self._rankings = self._read()[0]

    @classmethod
    def check_inputs(
        cls, params: Mapping[str, Any], searched: Collection[str], known: Collection[str]
    ) -> None:
        """Read the file once, before any work: a bad file, or one whose ids match none
        of the ``searched`` questions, raises :class:`ExternalRunError` (naming the
        first ids of each side); ids none of the datasets has (``known``: all their
        rows), repeated rows and searched questions without a row warn once."""
        stage = cls(**params)
        rankings, dups = stage._read()
        if dups:
            log.warning(
                "external run %s: %d repeated rows ignored (first kept), e.g. %r",
                stage.path, len(dups), dups[0],
            )  # fmt: skip
        matched = [q for q in searched if q in rankings]
        if not matched:
            raise ExternalRunError(stage._no_match(rankings, searched))
        unknown = [q for q in rankings if q not in known]
        if unknown:
            log.warning(
                "external run %s: %d rows for query ids not in the dataset ignored, e.g. %r",
                stage.path, len(unknown), unknown[0],
            )  # fmt: skip
        if len(matched) < len(searched):
            absent = next(q for q in searched if q not in rankings)
            log.warning(
                "external run %s: %d of the %d questions searched have no row (each fails "
                "with 'no external result'), e.g. %r",
                stage.path, len(searched) - len(matched), len(searched), absent,
            )  # fmt: skip

    def _no_match(self, rankings: Rankings, searched: Collection[str]) -> str:
        """No id in common: name the first ids of each side and the knobs that map them."""

        def first(ids: Collection[str]) -> str:
            shown = ", ".join(repr(q) for q in sorted(ids)[:3])
            return shown + (", ..." if len(ids) > 3 else "") if ids else "none"

        if not rankings:
            return f"external run {self.path}: the file has no rows"
        mapped = " after strip_prefix/id_map" if self.strip_prefix or self.id_map else ""
        return (
            f"external run {self.path}: none of its {len(rankings)} query ids{mapped} is a "
            f"question searched (file: {first(rankings)}; dataset: {first(searched)}); "
            "set strip_prefix or id_map to map the file's ids to the dataset's"
        )

    def _read(self) -> tuple[Rankings, list[str]]:
        """The rankings by dataset id, and the repeated rows or files (ignored)."""
        if not self.path.is_file():
            what = "a folder, not a file" if self.path.is_dir() else "no such file"
            raise ExternalRunError(f"external run {self.path}: {what}")
        dups: list[str] = []
        try:
            if self.field != "found_files" and self.format != "jsonl":
                raise ExternalRunError(f"{self.path}: field {self.field} needs a jsonl file")
            keys = (self.field,) if self.field != "found_files" else FILE_KEYS
            raw = read_jsonl(self.path, dups, keys) if self.format == "jsonl" else read_trec(
                self.path, dups)  # fmt: skip
        except ExternalRunError as exc:  # names the file and line
            raise ExternalRunError(f"external run {exc}") from None
        except UnicodeDecodeError as exc:
            raise ExternalRunError(f"external run {self.path}: not UTF-8 text ({exc})") from None
        except OSError as exc:
            raise ExternalRunError(f"external run {self.path}: cannot be read ({exc})") from None
        mapping = _load_id_map(self.id_map)
        out: Rankings = {}
        for ext_id, files in raw.items():
            qid = ext_id.removeprefix(self.strip_prefix) if self.strip_prefix else ext_id
            qid = mapping.get(ext_id, mapping.get(qid, qid))
            out.setdefault(qid, files)
        return out, dups

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """The external top ``k`` files of each query, as ``file:<path>`` ids."""
        if self._rankings is None:
            raise RBenchError("external: index() must be called before search()")
        self.failures, self.artifacts = {}, {}  # of this call's queries only
        scores: dict[str, dict[str, float]] = {}
        for qid in queries:
            files = self._rankings.get(qid)
            if files is None:
                self.failures[qid] = "no external result"
                continue
            top = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            as_id = entity_id if self.field != "found_files" else file_id
            scores[qid] = {as_id(p): s for p, s in top}
            paths = [p.rpartition(":")[0] if self.field != "found_files" else p for p, _ in top]
            absent = list(dict.fromkeys(p for p in paths if p not in self._paths))
            if absent:
                self.artifacts[qid] = {"not_in_snapshot": absent}
        return Run(self.name, scores)
