"""Import and export ground-truth rows and prompts as JSON, JSON Lines and CSV
(docs/architecture.md#prompt-evaluation, docs/architecture.md#bad-input-and-failures).

Formats (by file extension unless given):

- rows JSON: ``{"rows": [{"id", "variables": {...}, "expected": {...}}]}`` or a
  bare array; a row may also be *flat* (``{"id", <variable>..., <field>...}``);
- rows JSONL: one row object per line; rows CSV: columns ``id``, the
  variables, the ground-truth fields. A ground-truth cell starting with
  ``[``, ``{`` or ``"`` holds JSON (lists of action items, quoted text);
- prompts JSON: ``{"baseline": NAME, "prompts": [{"name", "model", "system",
  "user", "parameters": {...}}]}`` or a bare array (``"baseline": true`` on one
  prompt also marks it); prompts CSV: columns ``name, model, system, user,
  parameters, baseline`` with ``parameters`` as JSON text.

Reading is all-or-nothing: every item is checked (syntax, unknown columns,
the use case's ``process`` on ground truth, template variables) and the first
problem raises one error naming the file and line; nothing is stored unless
the whole file is good, and the store writes it in one transaction.
"""

from __future__ import annotations

import csv
import io as _io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_bench.prompt_eval.errors import (
    ImportFormatError,
    InvalidPromptError,
    InvalidRowError,
)
from retrieval_bench.prompt_eval.formats import FORMATS, PROMPT_COLUMNS, read_items
from retrieval_bench.prompt_eval.records import Prompt, Row
from retrieval_bench.prompt_eval.store import ImportSummary, PromptStore
from retrieval_bench.prompt_eval.template import check_prompt
from retrieval_bench.prompt_eval.usecase import UseCase


def _decode_cell(value: Any, src: str, line: int, column: str) -> Any:
    if not isinstance(value, str) or value.strip()[:1] not in ("[", "{", '"'):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            f"{src}:{line}: column {column} is not valid JSON: {exc.msg}"
        ) from exc


def _text(value: Any, src: str, line: int, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ImportFormatError(f"{src}:{line}: {what} must be text, got {json.dumps(value)[:40]}")


def _row(use_case: UseCase, src: str, line: int, item: dict[str, Any], csv_cells: bool) -> Row:
    if "id" not in item or not str(item["id"]).strip():
        raise ImportFormatError(f"{src}:{line}: row has no 'id'; give every row a unique id")
    row_id = _text(item["id"], src, line, "id").strip()
    if isinstance(item.get("variables"), dict):
        unknown = set(item) - {"id", "variables", "expected", "version"}
        variables, expected = item["variables"], item.get("expected") or {}
        if not isinstance(expected, dict):
            raise ImportFormatError(f"{src}:{line}: 'expected' must be an object")
    else:
        known = {"id", "version", *use_case.variables, *use_case.fields}
        unknown = set(item) - known
        variables = {v: item[v] for v in use_case.variables if v in item}
        expected = {f: item[f] for f in use_case.fields if f in item}
    if unknown:
        raise ImportFormatError(
            f"{src}:{line}: unknown column(s) {', '.join(sorted(map(str, unknown)))}; "
            f"use case {use_case.name} has variables {', '.join(use_case.variables)} "
            f"and fields {', '.join(use_case.fields)}"
        )
    variables = {k: _text(v, src, line, f"variable {k}") for k, v in variables.items()}
    if csv_cells:
        expected = {k: _decode_cell(v, src, line, k) for k, v in expected.items()}
    row = Row(row_id, variables, expected)
    try:
        use_case.validate_row(row)
    except InvalidRowError as exc:
        raise InvalidRowError(f"{src}:{line}: {exc}") from exc
    return row


def _unique(keys: Sequence[tuple[int, str]], src: str, what: str) -> None:
    seen: dict[str, int] = {}
    for line, key in keys:
        if key in seen:
            raise ImportFormatError(
                f"{src}:{line}: duplicate {what} {key!r} (first on line {seen[key]})"
            )
        seen[key] = line


def read_rows(path: str | Path, use_case: UseCase, fmt: str | None = None) -> list[Row]:
    """Every row of a file, validated; the first problem raises naming file:line."""
    path = Path(path)
    items, _meta, fmt = read_items(path, "rows", fmt)
    rows = [_row(use_case, str(path), line, item, fmt == "csv") for line, item in items]
    _unique([(line, r.id) for (line, _), r in zip(items, rows, strict=True)], str(path), "row id")
    return rows


def _flag(value: Any, src: str, line: int) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value or "").strip().lower()
    if text in ("", "false", "no", "0"):
        return False
    if text in ("true", "yes", "1"):
        return True
    raise ImportFormatError(f"{src}:{line}: baseline must be true or false, got {value!r}")


def _prompt(use_case: UseCase, src: str, line: int, item: dict[str, Any]) -> tuple[Prompt, bool]:
    unknown = set(item) - {*PROMPT_COLUMNS, "version"}
    if unknown:
        raise ImportFormatError(
            f"{src}:{line}: unknown column(s) {', '.join(sorted(map(str, unknown)))}; "
            f"prompts have {', '.join(PROMPT_COLUMNS)}"
        )
    params = item.get("parameters") or {}
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(
                f"{src}:{line}: parameters is not valid JSON: {exc.msg}"
            ) from exc
    if not isinstance(params, dict):
        raise ImportFormatError(f"{src}:{line}: parameters must be a JSON object")
    fields = {
        k: _text(item.get(k) or "", src, line, k) for k in ("name", "model", "system", "user")
    }
    prompt = Prompt(
        name=fields["name"].strip(), user=fields["user"], system=fields["system"],
        model=fields["model"].strip(), parameters=params,
    )  # fmt: skip
    try:
        check_prompt(prompt, use_case.variables, use_case.name)
    except InvalidPromptError as exc:
        raise InvalidPromptError(f"{src}:{line}: {exc}") from exc
    return prompt, _flag(item.get("baseline"), src, line)


def read_prompts(
    path: str | Path, use_case: UseCase, fmt: str | None = None
) -> tuple[list[Prompt], str | None]:
    """Every prompt of a file, checked, and the baseline the file names (if any)."""
    path = Path(path)
    src = str(path)
    items, meta, _fmt = read_items(path, "prompts", fmt)
    parsed = [_prompt(use_case, src, line, item) for line, item in items]
    prompts = [p for p, _ in parsed]
    _unique([(line, p.name) for (line, _), p in zip(items, prompts, strict=True)], src, "prompt")
    marked = [p.name for p, flag in parsed if flag]
    baseline = meta.get("baseline")
    if baseline is not None:
        marked = [*marked, str(baseline)]
    if len(set(marked)) > 1:
        raise ImportFormatError(f"{src}: more than one baseline prompt ({', '.join(marked)})")
    if marked and marked[0] not in {p.name for p in prompts}:
        raise ImportFormatError(f"{src}: baseline {marked[0]!r} is not one of the file's prompts")
    return prompts, (marked[0] if marked else None)


def import_file(
    store: PromptStore,
    use_case: UseCase,
    path: str | Path,
    kind: str,
    *,
    fmt: str | None = None,
    replace: bool = False,
) -> ImportSummary:
    """Read a whole file, then store it in one transaction (nothing on any error)."""
    if kind == "rows":
        return store.import_rows(use_case, read_rows(path, use_case, fmt), replace=replace)
    if kind != "prompts":
        raise ImportFormatError(f"unknown import kind {kind!r}; use rows or prompts")
    prompts, baseline = read_prompts(path, use_case, fmt)
    summary = store.import_prompts(use_case, prompts, replace=replace)
    if baseline is not None:
        store.set_baseline(use_case.name, baseline)
    return summary


def ensure_examples(store: PromptStore, use_case: UseCase) -> bool:
    """Load a use case's bundled rows and prompts when the store has never held any."""
    ex = use_case.examples
    if ex is None or store.has_data(use_case.name):
        return False
    rows = read_rows(ex.rows, use_case)
    prompts, marked = read_prompts(ex.prompts, use_case)
    store.import_rows(use_case, rows)
    store.import_prompts(use_case, prompts)
    if marked or ex.baseline:
        store.set_baseline(use_case.name, str(marked or ex.baseline))
    return True


@dataclass(frozen=True)
class UseCaseSummary:
    """One line of a use-case listing (``rbench prompts list``, the web lab's index)."""

    name: str
    rows: int
    prompts: int
    baseline: str | None
    shipped: bool
    """True when nothing is stored yet and the counts are those of the bundled
    examples, which :func:`ensure_examples` loads on the use case's first use."""


def use_case_summaries(store: PromptStore) -> list[UseCaseSummary]:
    """Every registered or stored use case with its stored rows, prompts and baseline.

    A registered use case that ships examples but has never stored anything is
    listed with the examples' sizes and ``shipped=True``, without loading them:
    listing writes nothing, and a fresh workspace does not look like one whose
    user data is empty.
    """
    from retrieval_bench.prompt_eval.usecase import get_use_case, use_case_names

    registered = set(use_case_names())
    out = []
    for name in sorted(registered | set(store.use_cases())):
        uc = get_use_case(name) if name in registered else None
        ex = uc.examples if uc is not None else None
        if uc is not None and ex is not None and not store.has_data(name):
            rows = read_rows(ex.rows, uc)
            prompts, marked = read_prompts(ex.prompts, uc)
            baseline = marked or ex.baseline
            out.append(UseCaseSummary(name, len(rows), len(prompts), baseline, True))
        else:
            out.append(UseCaseSummary(name, len(store.rows(name)), len(store.prompts(name)),
                                      store.baseline(name), False))  # fmt: skip
    return out


# --------------------------------------------------------------- export
def _cell(value: Any) -> str:
    if isinstance(value, str):
        return (
            json.dumps(value, ensure_ascii=False) if value.strip()[:1] in ("[", "{", '"') else value
        )
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _csv(header: Sequence[str], records: Sequence[Sequence[str]]) -> str:
    out = _io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(records)
    return out.getvalue()


def export_rows(use_case: UseCase, rows: Sequence[Row], fmt: str) -> str:
    """Rows as JSON, JSONL or CSV text that :func:`read_rows` reads back."""

    def nested(r: Row) -> dict[str, Any]:
        return {"id": r.id, "variables": dict(r.variables), "expected": dict(r.expected)}

    if fmt == "json":
        doc = {"use_case": use_case.name, "rows": [nested(r) for r in rows]}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "jsonl":
        return "".join(json.dumps(nested(r), ensure_ascii=False) + "\n" for r in rows)
    if fmt == "csv":
        header = ["id", *use_case.variables, *use_case.fields]
        records = [
            [r.id, *(r.variables.get(v, "") for v in use_case.variables)]
            + [_cell(r.expected.get(f)) for f in use_case.fields]
            for r in rows
        ]
        return _csv(header, records)
    raise ImportFormatError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def export_prompts(
    use_case: UseCase, prompts: Sequence[Prompt], fmt: str, baseline: str | None = None
) -> str:
    """Prompts as JSON, JSONL or CSV text that :func:`read_prompts` reads back."""

    def record(p: Prompt) -> dict[str, Any]:
        out: dict[str, Any] = {"name": p.name, "model": p.model, "system": p.system}
        return {**out, "user": p.user, "parameters": dict(p.parameters)}

    if fmt == "json":
        doc = {
            "use_case": use_case.name,
            "baseline": baseline,
            "prompts": list(map(record, prompts)),
        }
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "jsonl":
        lines = [{**record(p), "baseline": p.name == baseline} for p in prompts]
        return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    if fmt == "csv":
        records = [
            [p.name, p.model, p.system, p.user, json.dumps(dict(p.parameters)),
             "true" if p.name == baseline else "false"]
            for p in prompts
        ]  # fmt: skip
        return _csv(PROMPT_COLUMNS, records)
    raise ImportFormatError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
