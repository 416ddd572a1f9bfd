"""The ``rbench`` argument parser: every command's arguments, in one place.

Each command area's handler lives in its own module of :mod:`retrieval_bench.cli`
(``run``, ``index``, ``runs``, ``compare``, ``eval``, ``prompts``, ``llm``,
``dataset``, ``serve``); building the parser imports none of the heavy
libraries (the registries load their modules only when a choice is checked).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from retrieval_bench.cli.compare import add_compare_parser
from retrieval_bench.cli.dataset import cmd_dataset
from retrieval_bench.cli.eval import cmd_eval
from retrieval_bench.cli.fit_dense import add_fit_dense_parser
from retrieval_bench.cli.fit_functions import add_fit_functions_parser
from retrieval_bench.cli.fit_ltr import add_fit_ltr_parser
from retrieval_bench.cli.index import add_walk_flags, cmd_index, cmd_query
from retrieval_bench.cli.llm import cmd_llm
from retrieval_bench.cli.prompts import cmd_prompts
from retrieval_bench.cli.run import cmd_run
from retrieval_bench.cli.runs import add_runs_show_parser
from retrieval_bench.cli.serve import cmd_serve
from retrieval_bench.cli.sweep import cmd_sweep, cmd_sweeps
from retrieval_bench.out_file import FORCE_HELP

if TYPE_CHECKING:
    from retrieval_bench.contracts.registry import Kind

DESCRIPTION = "rbench: measure and tune retrieval over codebases, stage by stage."
TABLE_FORMATS = ("text", "csv", "markdown")
EXECUTORS = ("serial", "processes", "ray")
"""``executor_spec.EXECUTORS`` (not imported: building the parser stays free of pydantic)."""


def _positive_int(text: str) -> int:
    """An argparse type for counts (``--limit``, ``-n``): 0 or less would silently
    mean "all" or "all but the last", so it is a usage error (exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number (1 or more)")
    return value


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` after an option's help, except where the default says
    nothing (None, False) or the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose subcommand parsers (made with ``add_subparsers``,
    which reuses the parent's class) all show their defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


class _RegistryNames(Sequence[str]):
    """The names registered under ``kind``, looked up only when argparse checks a
    value or prints the choices: the registries import their modules (LanceDB,
    tree-sitter...), which ``rbench runs`` should not pay for."""

    def __init__(self, kind: Kind) -> None:
        self.kind: Kind = kind

    def _names(self) -> list[str]:
        from retrieval_bench.contracts import registry

        return registry.names(self.kind)

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


def build_parser() -> argparse.ArgumentParser:
    """The ``rbench`` parser; each subcommand's ``func`` runs it."""
    p = _Parser(prog="rbench", description=DESCRIPTION)
    p.add_argument("--workspace", help="state folder (default ./.rbench or $RBENCH_HOME)")
    p.add_argument("-v", "--verbose", action="store_true", help="log what happens (INFO level)")
    sub = p.add_subparsers(dest="cmd", required=True)

    _add_run(sub)
    _add_sweep(sub)
    _add_index_query(sub)
    add_runs_show_parser(sub, _positive_int, TABLE_FORMATS)
    add_compare_parser(sub)
    _add_eval(sub)
    _add_llm(sub)
    _add_dataset(sub)
    add_fit_ltr_parser(sub, _positive_int)
    add_fit_functions_parser(sub, _positive_int)
    add_fit_dense_parser(sub, _positive_int)
    _add_prompts(sub)
    _add_serve(sub)
    return p


def _add_run(sub: Any) -> None:
    """``rbench run CONFIG``."""
    r = sub.add_parser("run", help="run a benchmark config and print the per-stage table")
    r.add_argument(
        "config", help="benchmark config (.yaml/.toml); its relative paths are resolved "
        "against the config file's folder"
    )  # fmt: skip
    r.add_argument("--split", help="override every dataset's split (e.g. dev)")
    r.add_argument("--limit", type=_positive_int, help="first N questions of each dataset")
    _add_data_root(r)
    r.add_argument("--all-subsets", action="store_true", help="also print per-dataset tables")
    r.add_argument(
        "-k", "--k", type=_positive_int, dest="k", metavar="K",
        help="cut-off of the printed table (default: the config's table_k); "
        "added to metrics.ks when the config does not compute it",
    )  # fmt: skip
    r.add_argument(
        "--format", choices=TABLE_FORMATS, default="text",
        help="how to print the per-stage tables (csv: one table with a subset column)",
    )  # fmt: skip
    r.add_argument(
        "--json", action="store_true",
        help="print one JSON object (run id, tables, counts, sweeps, answers, loads) instead",
    )  # fmt: skip
    _add_executor_options(r, "run")
    r.set_defaults(func=cmd_run)


def _add_data_root(r: Any) -> None:
    """``--data-root DIR`` of run and sweep (retrieval_bench/data_root.py)."""
    r.add_argument(
        "--data-root", metavar="DIR",
        help="where the config's ${RBENCH_DATA_ROOT} paths point (default: $RBENCH_DATA_ROOT, "
        "else the config's own default, e.g. ../shared/data beside the checkout)",
    )  # fmt: skip


def _add_executor_options(r: Any, what: str) -> None:
    """``--jobs``, ``--executor``, ``--ray-address``, ``--resume`` and
    ``--keep-llm-server`` of run and sweep."""
    r.add_argument(
        "--jobs", "-j", type=_positive_int, metavar="N",
        help="run per-question snapshots in N local worker processes (executor: processes; "
        "1 = this process); with --executor ray, the CPUs of the local Ray cluster",
    )  # fmt: skip
    r.add_argument(
        "--executor", choices=EXECUTORS,
        help="where per-question snapshots run (default: the config's executor, else serial)",
    )  # fmt: skip
    r.add_argument(
        "--ray-address", metavar="ADDR",
        help="join this Ray cluster (auto, HOST:PORT or ray://HOST:PORT) instead of starting "
        "a local one; implies --executor ray",
    )  # fmt: skip
    r.add_argument(
        "--resume", nargs="?", const="last", metavar="ID",
        help=f"continue an interrupted or failed {what} of this config (default: the newest "
        "one) without redoing its finished snapshots",
    )  # fmt: skip
    r.add_argument(
        "--keep-llm-server", action="store_true",
        help=f"keep the local model server running after the {what} when the {what} started "
        "it (default: stopped at the end; one started by rbench llm start is always kept)",
    )  # fmt: skip


def _add_sweep(sub: Any) -> None:
    """``rbench sweep CONFIG``, ``rbench sweeps [ID]``."""
    s = sub.add_parser(
        "sweep", help="run a config's sweep: grid, ranked with CIs and tests, stored"
    )
    s.add_argument("config", help="a benchmark config with a sweep: section (docs/sweeps.md)")
    s.add_argument(
        "--max-cells", type=_positive_int, metavar="N",
        help="refuse grids of more than N cells (default: the sweep's max_cells, 1000)",
    )  # fmt: skip
    s.add_argument(
        "--limit", type=_positive_int, metavar="N",
        help="first N questions of each dataset on each split (a quick trial of the grid)",
    )  # fmt: skip
    _add_data_root(s)
    s.add_argument("--json", action="store_true", help="print the sweep as one JSON object")
    _add_executor_options(s, "sweep")
    s.set_defaults(func=cmd_sweep)
    ss = sub.add_parser("sweeps", help="list stored sweeps, or print one's ranked table")
    ss.add_argument("sweep_id", nargs="?", help="a sweep id from rbench sweeps")
    ss.add_argument("--json", action="store_true", help="print JSON instead")
    ss.set_defaults(func=cmd_sweeps)


def _add_index_query(sub: Any) -> None:
    """``rbench index REPO, rbench query REPO QUESTION``."""
    for name, func, helptext in (
        ("index", cmd_index, "build or update the LanceDB index of a repository"),
        ("query", cmd_query, "search a repository with one retriever"),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("repo", help="folder, git+URL@COMMIT or NAME==VERSION")
        if name == "query":
            s.add_argument("question", help="the question to search for")
            s.add_argument("-n", type=_positive_int, default=10, help="how many chunks to print")
            s.add_argument(
                "--retriever", default="dense", choices=_RegistryNames("retrievers"),
                metavar="NAME",  # a metavar: argparse would load the registry to print one
                help="one of %(choices)s (dense builds or updates the index first)",
            )  # fmt: skip
            s.add_argument(
                "--json", action="store_true",
                help="print a JSON list of hits (path, lines, symbol, kind, score)",
            )  # fmt: skip
        else:
            s.add_argument(
                "--rebuild", action="store_true",
                help="build from scratch instead of updating the changed files only",
            )  # fmt: skip
            s.add_argument("--json", action="store_true", help="print the build statistics as JSON")
        s.add_argument(
            "--chunker", default="ast", choices=_RegistryNames("chunkers"), metavar="NAME",
            help="how files are split into chunks: one of %(choices)s",
        )  # fmt: skip
        s.add_argument(
            "--budget", type=_positive_int, default=None, metavar="TOKENS",
            help="chunk size limit in tokens (ast: budget, others: max_tokens; "
            "default: the chunker's own)",
        )  # fmt: skip
        add_walk_flags(s)
        s.add_argument("--index-uri", default=None, help="LanceDB folder (default in workspace)")
        s.set_defaults(func=func)


def _add_eval(sub: Any) -> None:
    """``rbench eval PREDICTIONS``."""
    ev = sub.add_parser(
        "eval", help="score a JSONL of predictions with any metric set (no retrieval needed)"
    )
    ev.add_argument("predictions", help="JSONL rows with prediction/answer and reference fields")
    ev.add_argument(
        "--metric",
        action="append",
        help="registry metric name, or NAME:key=value,... (repeatable; default: text metrics)",
    )
    ev.add_argument("--config", help="YAML/TOML with an answer_metrics: list (composites too)")
    ev.add_argument("--name", help="label stored with the run (default: the file name)")
    ev.add_argument("--out", help="also write per-sample scores to this JSONL")
    ev.add_argument("--force", action="store_true", help=FORCE_HELP)
    ev.add_argument("--no-store", action="store_true", help="do not record a run in the database")
    ev.add_argument(
        "--consistency",
        type=int,
        default=0,
        metavar="N",
        help="repeat LLM-judge metrics N times and report agreement/variance",
    )
    ev.add_argument("--json", action="store_true", help="print the scores as JSON")
    ev.set_defaults(func=cmd_eval)


def _add_llm(sub: Any) -> None:
    """``rbench llm start|stop|status``."""
    lm = sub.add_parser("llm", help="start, stop or check the local model server")
    lsub = lm.add_subparsers(dest="llm_cmd", required=True)
    ls = lsub.add_parser("start", help="start the local server (or reuse a running one)")
    ls.add_argument(
        "--threads", type=_positive_int, default=None,
        help="CPU threads of the model server (default: all cores)",
    )  # fmt: skip
    lsub.add_parser("stop", help="stop the local server")
    lst = lsub.add_parser(
        "status", help="is the local server running? exit 0 when it is, 1 when not "
        "(with or without --json)"
    )  # fmt: skip
    lst.add_argument("--json", action="store_true", help="print the status as JSON")
    lm.set_defaults(func=cmd_llm)


def _add_dataset(sub: Any) -> None:
    """``rbench dataset inspect|import-swebench|mine``."""
    d = sub.add_parser("dataset", help="inspect, import or mine labelled questions")
    dsub = d.add_subparsers(dest="dataset_cmd", required=True)
    i = dsub.add_parser("inspect", help="count examples and splits, report invalid rows")
    i.add_argument("file", help="questions JSONL")
    i.add_argument("--snapshot", help="check gold files against this snapshot")
    sw = dsub.add_parser("import-swebench", help="SWE-bench rows → questions JSONL")
    sw.add_argument("file", help="SWE-bench JSONL (problem statement + patch)")
    sw.add_argument("out", help="questions JSONL to write (never the input)")
    sw.add_argument("--repo", action="append", metavar="OWNER/NAME=PATH",
                    help="a local clone: gold functions on the base commit's files")  # fmt: skip
    m = dsub.add_parser("mine", help="questions from git history: message → modified files")
    m.add_argument("repo", help="git repository folder")
    m.add_argument("out", help="questions JSONL to write")
    for cmd in (sw, m):
        cmd.add_argument("--force", action="store_true", help=FORCE_HELP)
    m.add_argument("--range", default=None, help="git revision range (default: all history)")
    m.add_argument("--last", type=int, default=None, help="only the last N commits")
    d.set_defaults(func=cmd_dataset)


def _add_serve(sub: Any) -> None:
    """``rbench serve``."""
    sv = sub.add_parser(
        "serve", help="web UI: runs, comparisons, drill-down, prompt lab",
        description="Serve the web UI. It prints its address with a secret token "
        "(http://127.0.0.1:PORT/?token=...): open that once; saving and running need the "
        "token, reading pages does not (on 127.0.0.1). Another --host needs --token and "
        "then asks the token for every request (docs/architecture.md#web-ui-security).",
    )  # fmt: skip
    sv.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on; one that is not loopback (0.0.0.0, a LAN address) "
        "is refused unless --token or RBENCH_TOKEN sets the token",
    )  # fmt: skip
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free one)")
    sv.add_argument(
        "--token", default=None,
        help="the secret that writes (and, off loopback, every request) need; at least 8 "
        "of A-Z a-z 0-9 . _ ~ - (default: $RBENCH_TOKEN, else a new random one per start)",
    )  # fmt: skip
    sv.set_defaults(func=cmd_serve)


def _add_prompts(sub: Any) -> None:
    """Add the ``prompts`` subcommand tree to the ``rbench`` parser."""
    p = sub.add_parser("prompts", help="evaluate prompt templates against ground truth")
    psub = p.add_subparsers(dest="prompts_cmd", required=True)

    ls = psub.add_parser("list", help="use cases, or one use case's prompts and rows")
    ls.add_argument("use_case", nargs="?", help="show this use case's prompts and rows")
    ls.add_argument("--json", action="store_true", help="print JSON")

    r = psub.add_parser("run", help="run a use case's prompts and print the sorted table")
    r.add_argument("use_case", help="registered name, package.module:Class or file.py:Class")
    r.add_argument("--prompt", action="append", help="run only this prompt (+ the baseline)")
    r.add_argument("--baseline", help="compare with this prompt (default: the stored baseline)")
    r.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    r.add_argument("--base-url", help="OpenAI-compatible server (default: the local model)")
    r.add_argument("--model", default="smollm2", help="model for prompts that name none")
    r.add_argument("--no-record", action="store_true", help="do not keep this run in history")
    r.add_argument("--gate", action="store_true", help="exit 1 if a prompt is significantly worse")
    r.add_argument("--json", action="store_true", help="print the run as JSON (no progress)")

    h = psub.add_parser("history", help="stored runs per prompt, with the change of score")
    h.add_argument("use_case", nargs="?", help="only this use case (default: all)")
    h.add_argument("--prompt", help="only this prompt")
    h.add_argument("--edits", action="store_true", help="list the prompt edits instead of runs")
    h.add_argument("--json", action="store_true", help="print JSON")

    for name, helptext in (("import", "read rows or prompts (all or nothing)"),
                           ("export", "write rows or prompts")):  # fmt: skip
        s = psub.add_parser(name, help=helptext)
        s.add_argument("use_case", help="registered name, package.module:Class or file.py:Class")
        s.add_argument("kind", choices=["rows", "prompts"], help="ground-truth rows or prompts")
        if name == "import":
            s.add_argument("file", help="JSON, JSONL or CSV file to read")
            s.add_argument("--replace", action="store_true", help="delete items not in the file")
        else:
            s.add_argument("--out", help="file to write (default: stdout)")
            s.add_argument("--force", action="store_true", help=FORCE_HELP)
        s.add_argument("--format", choices=["json", "jsonl", "csv"], help="default: by extension")
    p.set_defaults(func=cmd_prompts)
