"""A Python file's definitions as training documents (docs/stages.md#fit-dense).

A document is one function, method or class that is not nested in a function,
named as the gold functions are (``path:Class.method``,
:mod:`~retrieval_bench.datasets.gold_functions`), and written as the ``dense``
stage embeds a chunk of a model trained with ``document_path``: the file's path,
the enclosing classes' headers (as the ``ast`` chunker puts a class header
before a method's chunk), then the definition's own lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval_bench.datasets.gold_functions import definitions


@dataclass(frozen=True)
class Document:
    """One definition of one file, ready to embed."""

    entity: str
    """``path:Qualified.name``."""
    text: str


def definition_documents(path: str, source: str) -> list[Document]:
    """The documents of every definition of ``source`` (the file at ``path``) that is not
    nested in a function, in file order."""
    lines = source.splitlines()
    out: list[Document] = []
    for d in definitions(source):
        if d.name != d.entity:  # nested in a function: part of its outer function
            continue
        outer = d.name.split(".")[:-1]
        header = "".join(f"{'    ' * i}class {name}:\n" for i, name in enumerate(outer))
        body = "\n".join(lines[d.start - 1 : d.end])
        out.append(Document(f"{path}:{d.name}", f"{path}\n{header}{body}"))
    return out


def related(entity: str, other: str) -> bool:
    """Whether one of two entities of one file holds the other (``A`` and ``A.f``): a
    class holding a positive method is no negative of it, nor a method of a positive class."""
    return entity == other or other.startswith(entity + ".") or entity.startswith(other + ".")
