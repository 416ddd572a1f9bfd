"""What the code graph reads from one Python file, from its tree-sitter tree
(docs/stages.md#code-structure).

The ``ast`` chunker parses every Python file above its budget with tree-sitter;
:func:`tree_facts` reads the graph's facts from that tree with one query (matched
in C: a Python walk over every node costs more than the parse) and
:func:`~retrieval_bench.chunking.facts_handover.hand_over` leaves them for the
graph stage, which then parses only the files the chunker did not
(:mod:`~retrieval_bench.retrieval.code_facts`). Here because chunking may not
import retrieval (docs/architecture.md#layers).

The facts follow :func:`~retrieval_bench.retrieval.code_facts.parse_facts`
(Python's :mod:`ast`) rule for rule: imports in :func:`ast.walk`'s order (by the
depth of the statement in the ``ast`` tree — the enclosing ``def``/``class``/
``if``/``for``/``while``/``try``/``except``/``with``/``match``/``case``, each
``elif`` one ``if`` deeper — then file order); attribute names read, not assigned
or deleted; ``name.attr`` reads; names called. A syntax error or a Python 2 form
the grammar accepts gives None, as ``ast.parse`` fails there.
"""

from __future__ import annotations

import builtins
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from operator import attrgetter

from tree_sitter import Node, Parser, Query, QueryCursor, Tree

from retrieval_bench.chunking.languages import SPECS


@dataclass(frozen=True)
class ImportRef:
    """One imported binding: ``level`` dots, ``module`` (may be ""), the imported
    ``name`` (None for ``import module``), and the local ``alias`` it binds."""

    level: int
    module: str
    name: str | None
    alias: str


@dataclass
class FileFacts:
    """What the code graph reads from one Python file (module doc)."""

    defines: set[str] = field(default_factory=set)
    imports: list[ImportRef] = field(default_factory=list)
    uses: set[str] = field(default_factory=set)
    module_attrs: set[tuple[str, str]] = field(default_factory=set)
    """(local name, attribute) for every ``local.attribute`` read."""


# Captures: identifiers (@def, @call, @attr), ``name.attr`` reads (@pair), the
# attribute nodes assigned or deleted rather than read (@store), statements the
# rest of the module reads itself (@import, @match) and Python 2 syntax the
# grammar accepts but ``ast`` does not (@py2; more behind :data:`_PY2_HINT`). The
# grammar reads ``[*a.b]`` as ``(*a).b`` and ``type(a).b = 1`` as a type alias.
_QUERY = """
(function_definition name: (identifier) @def)
(class_definition name: (identifier) @def)
(call function: (identifier) @call)
(call function: (parenthesized_expression (identifier) @call))
(attribute attribute: (identifier) @attr)
(attribute object: (identifier) attribute: (identifier)) @pair
(attribute object: (parenthesized_expression (identifier)) attribute: (identifier)) @pair
(attribute object: (list_splat (identifier)) attribute: (identifier)) @pair
(import_statement) @import
(import_from_statement) @import
(future_import_statement) @import
(match_statement) @match
(print_statement) @print
(exec_statement) @py2
(except_clause "," @py2)
(raise_statement (expression_list) @py2)
(parameters (tuple_pattern) @py2)
(lambda_parameters (tuple_pattern) @py2)
(assignment left: (attribute) @store)
(augmented_assignment left: (attribute) @store)
(for_statement left: (attribute) @store)
(for_in_clause left: (attribute) @store)
(pattern_list (attribute) @store)
(tuple_pattern (attribute) @store)
(list_pattern (attribute) @store)
(list_splat_pattern (attribute) @store)
(as_pattern_target (attribute) @store)
(type_alias_statement left: (type (attribute) @store))
(delete_statement (attribute) @store)
(delete_statement (expression_list (attribute) @store))
"""
_PY2_HINT = re.compile(
    rb"[<`0-9uU](?:(?<=<)>|(?<=`)|(?<=0)[0-9_]*[1-9]|(?<=[0-9])[lL]\b|(?<=[uU])[rR]['\"])"
)  # a first character from a set: the regex engine skips ahead to it fast
"""Where a Python 2 form the grammar accepts may be: ``<>``, a backtick, ``0777``,
``10L``, ``ur''``; the node there tells (:func:`_python2`)."""
_BUILTINS = frozenset(dir(builtins))
_SKIPPED = frozenset({"string_content", "comment"})  # a docstring's backticks: one look
_PY2_NUMBER = re.compile(rb"0[0-9_]*[1-9][0-9_]*|.*[lL]")
_SIMPLE = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")
_NESTS = frozenset(
    ("function_definition", "class_definition", "if_statement", "for_statement")
    + ("while_statement", "try_statement", "except_clause", "with_statement")
    + ("match_statement", "case_clause")
)
"""Nodes that are one ``ast`` level around the statements in their blocks."""
_CLAUSES = frozenset({"elif_clause", "else_clause", "except_clause", "finally_clause"})
_TARGETS = frozenset({"pattern_list", "tuple_pattern", "list_pattern"})


_local = threading.local()
_text = attrgetter("text")


@cache
def _query() -> Query:
    return Query(SPECS["python"].language(), _QUERY)


def _parser() -> Parser:
    """This thread's Python parser (a parser is not shared between threads)."""
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = SPECS["python"].parser()
    return parser


def _name(raw: bytes | None) -> str:
    """An identifier's text as ``ast`` gives it (NFKC-normalized, PEP 3131)."""
    text = (raw or b"").decode("utf-8", "replace")
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _names(raws: set[bytes]) -> set[str]:
    """:func:`_name` of each, decoded in one go when all are ASCII (nearly always)."""
    return set(map(bytes.decode, raws)) if b"".join(raws).isascii() else set(map(_name, raws))


def _dotted(node: Node) -> str:  # ``a . b`` is ``a.b``
    return ".".join(_name(part.text) for part in node.named_children)


def _targets(node: Node) -> Iterator[str]:
    """Names bound by an assignment target (tuple and list unpacking, not ``*rest``)."""
    if node.type == "identifier":
        yield _name(node.text)
    elif node.type in _TARGETS:
        for child in node.named_children:
            yield from _targets(child)


def _assigned(node: Node) -> Iterator[str]:
    """Names an ``assignment`` binds: chained ``a = b = …`` too; an annotated one
    only when its target is a name."""
    while node.type == "assignment":
        left = node.child_by_field_name("left")
        if left is not None:
            annotated = node.child_by_field_name("type") is not None
            name = left.type == "identifier" or (
                left.type == "tuple_pattern" and left.named_child_count == 1
            )
            if name or not annotated:  # ``(x): int = …`` is ``x: int = …`` to ``ast``
                yield from _targets(left)
        right = node.child_by_field_name("right")
        if right is None:
            break
        node = right


def _is_try_star(node: Node) -> bool:
    """``try … except* …`` (``ast.TryStar``, which is not an ``ast.Try``)."""
    return any(
        c.type == "except_clause" and c.child_count > 1 and c.children[1].type == "*"
        for c in node.named_children
    )


def _module_level(block: Node) -> Iterator[str]:
    """Names assigned at module level, also inside module-level if/try/with."""
    for stmt in block.named_children:
        kind = stmt.type
        if kind == "expression_statement":
            for child in stmt.named_children:
                if child.type == "assignment":
                    yield from _assigned(child)
        elif kind in ("if_statement", "with_statement") or (
            kind == "try_statement" and not _is_try_star(stmt)
        ):
            for part in stmt.named_children:
                if part.type == "block":
                    yield from _module_level(part)
                elif part.type in _CLAUSES:
                    for sub in part.named_children:
                        if sub.type == "block":
                            yield from _module_level(sub)


def _depth(node: Node) -> int:
    """The depth :func:`ast.walk` meets statement ``node`` at (module doc)."""
    depth = 1
    parent = node.parent
    while parent is not None:
        kind, above = parent.type, parent.parent
        if kind in _NESTS:
            depth += 1
        elif kind == "elif_clause" or (
            kind == "else_clause" and above is not None and above.type == "if_statement"
        ):
            # the k-th elif (and an else after k elifs) is k ``ast.If`` deeper
            before = parent.prev_named_sibling
            while before is not None:
                depth += before.type == "elif_clause"
                before = before.prev_named_sibling
            depth += kind == "elif_clause"
        parent = above
    return depth


def _imports(node: Node) -> list[ImportRef] | None:
    """The bindings of one import statement; None for ``from m import a.b``."""
    plain, level, module = node.type == "import_statement", 0, "__future__"
    source = node.child_by_field_name("module_name")
    if source is not None and source.type == "relative_import":
        parts = source.named_children
        level = sum((p.text or b"").count(b".") for p in parts if p.type == "import_prefix")
        module = next((_dotted(p) for p in parts if p.type == "dotted_name"), "")
    elif source is not None:
        module = _dotted(source)
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [ImportRef(level, module, "*", "*")]
    refs = []
    for name in node.children_by_field_name("name"):
        alias = name.child_by_field_name("alias")
        dotted = name.child_by_field_name("name") if alias is not None else name
        if dotted is None or (not plain and dotted.named_child_count != 1):
            return None
        imported = _dotted(dotted)
        bound = _name(alias.text) if alias is not None else imported
        if plain:
            bound = bound if alias is not None else imported.split(".")[0]
            refs.append(ImportRef(0, imported, None, bound))
        else:
            refs.append(ImportRef(level, module, imported, bound))
    return refs


def _pattern_reads(match: Node) -> Iterator[tuple[bytes, bytes]]:
    """``(a, b)`` for each ``a.b…`` value or class pattern of a ``match`` statement
    (tree-sitter gives them as dotted names, ``ast`` as attribute reads)."""
    stack = [match]
    while stack:
        node = stack.pop()
        if node.type == "dotted_name" and node.named_child_count > 1:
            parts = [p.text or b"" for p in node.named_children]
            yield parts[0], parts[1]
            for attr in parts[2:]:
                yield b"", attr
        else:
            stack.extend(node.named_children)


def _python2(root: Node, source: bytes) -> bool:
    """Whether ``source`` has a Python 2 form that the grammar parses without error:
    ``<>``, a backtick expression, ``0777``, ``10L``, ``ur''`` (:data:`_PY2_HINT`)."""
    pos = 0
    while (hint := _PY2_HINT.search(source, pos)) is not None:
        node = root.descendant_for_byte_range(hint.start(), hint.start() + 1)
        if node is None:
            break
        kind, text = node.type, node.text or b""
        pos = max(hint.end(), node.end_byte if kind in _SKIPPED else 0)
        if (
            kind == "<>"
            or (kind == "integer" and _PY2_NUMBER.fullmatch(text))
            or (kind == "string_start" and (text == b"`" or text[:2].lower() == b"ur"))
        ):
            return True
    return False


def _pairs(nodes: list[Node]) -> Counter[tuple[bytes, bytes]]:
    """``(name, attr)`` of each ``name.attr`` node, counted."""
    texts = Counter(map(_text, nodes))
    pairs: Counter[tuple[bytes, bytes]] = Counter()
    odd = set()
    for text, n in texts.items():
        simple = _SIMPLE.fullmatch(text)
        if simple:
            pairs[simple[1], simple[2]] += n
        else:  # spaces, a comment, parentheses or non-ASCII letters around the dot
            odd.add(text)
    for node in nodes if odd else ():
        if node.text in odd:
            pairs[_unpaired(node)] += 1
    return pairs


def _unpaired(node: Node) -> tuple[bytes, bytes]:
    """``(name, attr)`` of an ``attribute`` node whose object is a (parenthesized) name."""
    obj = node.child_by_field_name("object")  # ``[*a.b]`` is read as ``(*a).b``
    while obj is not None and obj.type in ("parenthesized_expression", "list_splat"):
        obj = obj.named_children[0] if obj.named_child_count == 1 else None
    attr = node.child_by_field_name("attribute")
    name = obj.text or b"" if obj is not None and obj.type == "identifier" else b""
    return name, (attr.text or b"") if attr is not None else b""


def tree_facts(tree: Tree, source: bytes) -> FileFacts | None:
    """The facts of the Python file ``source`` that ``tree`` was parsed from; None
    when the file has a syntax error (module doc)."""
    root = tree.root_node
    if root.has_error:
        return None
    caps = QueryCursor(_query()).captures(root)
    if caps.get("py2") or _python2(root, source):
        return None
    if any(c.type != "chevron" for p in caps.get("print", ()) for c in p.named_children[:1]):
        return None  # ``print x``; ``print >>f, x`` is a shift and a tuple to Python 3
    found: list[tuple[int, int, list[ImportRef]]] = []
    for node in caps.get("import", ()):
        refs = _imports(node)
        if refs is None:
            return None
        found.append((1 if node.parent == root else _depth(node), node.start_byte, refs))
    found.sort(key=lambda f: f[:2])
    imports = [ref for *_, refs in found for ref in refs]
    defines = set(_module_level(root))
    defines.update(_names(set(map(_text, caps.get("def", ())))))
    # a name is read where it occurs more often than it is assigned or deleted
    stored = {n.end_byte: n for n in caps.get("store", ())}.values()
    store_pairs = Counter(_unpaired(n) for n in stored)
    store_names = Counter(attr for _, attr in store_pairs.elements())
    used = set(map(_text, caps.get("call", ())))
    attrs = Counter(map(_text, caps.get("attr", ())))
    used.update(a for a, n in attrs.items() if n > store_names[a])
    pairs = {p for p, n in _pairs(caps.get("pair", [])).items() if n > store_pairs[p]}
    for match in caps.get("match", ()):
        for local, attr in _pattern_reads(match):
            used.add(attr)
            if local:
                pairs.add((local, attr))
    bound = {ref.alias for ref in imports}
    uses = {
        n
        for n in _names(used)  # minus dunders, builtins, own and imported names
        if not (n.startswith("__") or n in _BUILTINS or n in defines or n in bound)
    }
    return FileFacts(defines, imports, uses, {(_name(a), _name(b)) for a, b in pairs})


def parse_tree_facts(text: str) -> FileFacts | None:
    """:func:`tree_facts` of ``text``, parsed with the project's Python grammar."""
    source = text.encode("utf-8", "replace")
    return tree_facts(_parser().parse(source), source)
