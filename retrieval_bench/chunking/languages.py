"""Languages the ``ast`` chunker understands, and how to read their definitions
(Python, JavaScript, TypeScript/TSX, Go, Rust, Java; anything else falls back to
windows; docs/stages.md#ast).

Each language is a :class:`LanguageSpec` of tables — which node types define a
function, a class-like container, a module, or a plain type; which nodes wrap a
definition (``export``, decorators); which leading nodes (comments,
attributes) belong to the definition after them. :func:`resolve` turns a
syntax node into a :class:`Definition` using those tables, so adding a
language is a new table entry, not a new branch in the chunker.

Grammars come from the per-language PyPI wheels pinned in pyproject.toml and
are loaded lazily, once per process.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath

from tree_sitter import Language, Node, Parser

# Roles: "function" and "method" have a body searched for nested definitions;
# "class" is a container whose nested functions are methods; "module" is a
# container whose nested definitions keep their own kinds; "type" has no
# members to hide (structs, enums, aliases).
ROLE_KIND = {
    "function": "function",
    "method": "method",
    "class": "class",
    "module": "class",
    "type": "class",
}

_BLOCK_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    extensions: tuple[str, ...]
    grammar: tuple[str, str]
    """(module, function) returning the tree-sitter language pointer."""
    roles: Mapping[str, str]
    wrappers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Wrapper node type → fields that may hold the wrapped definition ('' = any child)."""
    attachable: frozenset[str] = _BLOCK_COMMENTS
    indent_blocks: bool = False
    """Python-style bodies: hidden as ``...`` (docstring kept) instead of ``{ ... }``."""

    def language(self) -> Language:
        return _load_language(self.grammar)

    def parser(self) -> Parser:
        return Parser(self.language())


@cache
def _load_language(grammar: tuple[str, str]) -> Language:
    module, func = grammar
    return Language(getattr(importlib.import_module(module), func)())


_JS_ROLES = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "class": "class",
    "method_definition": "method",
}
_TS_ROLES = {
    **_JS_ROLES,
    "abstract_class_declaration": "class",
    "interface_declaration": "class",
    "function_signature": "function",
    "method_signature": "method",
    "abstract_method_signature": "method",
    "enum_declaration": "type",
    "type_alias_declaration": "type",
    "internal_module": "module",
    "module": "module",
}
_JS_WRAPPERS: dict[str, tuple[str, ...]] = {
    "export_statement": ("declaration", "value"),
    "expression_statement": ("",),
    "ambient_declaration": ("",),
}

SPECS: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec(
            "python",
            (".py", ".pyi"),
            ("tree_sitter_python", "language"),
            {"function_definition": "function", "class_definition": "class"},
            {"decorated_definition": ("definition",)},
            indent_blocks=True,
        ),
        LanguageSpec(
            "javascript",
            (".js", ".mjs", ".cjs", ".jsx"),
            ("tree_sitter_javascript", "language"),
            _JS_ROLES,
            _JS_WRAPPERS,
            _BLOCK_COMMENTS | {"decorator"},
        ),
        LanguageSpec(
            "typescript",
            (".ts", ".mts", ".cts"),
            ("tree_sitter_typescript", "language_typescript"),
            _TS_ROLES,
            _JS_WRAPPERS,
            _BLOCK_COMMENTS | {"decorator"},
        ),
        LanguageSpec(
            "tsx",
            (".tsx",),
            ("tree_sitter_typescript", "language_tsx"),
            _TS_ROLES,
            _JS_WRAPPERS,
            _BLOCK_COMMENTS | {"decorator"},
        ),
        LanguageSpec(
            "go",
            (".go",),
            ("tree_sitter_go", "language"),
            {
                "function_declaration": "function",
                "method_declaration": "method",
                "type_declaration": "type",
            },
        ),
        LanguageSpec(
            "rust",
            (".rs",),
            ("tree_sitter_rust", "language"),
            {
                "function_item": "function",
                "function_signature_item": "function",
                "impl_item": "class",
                "trait_item": "class",
                "mod_item": "module",
                "struct_item": "type",
                "enum_item": "type",
                "union_item": "type",
                "type_item": "type",
                "macro_definition": "function",
            },
            attachable=_BLOCK_COMMENTS | {"attribute_item"},
        ),
        LanguageSpec(
            "java",
            (".java",),
            ("tree_sitter_java", "language"),
            {
                "class_declaration": "class",
                "interface_declaration": "class",
                "enum_declaration": "class",
                "record_declaration": "class",
                "annotation_type_declaration": "class",
                "method_declaration": "method",
                "constructor_declaration": "method",
                "compact_constructor_declaration": "method",
            },
        ),
    )
}

_BY_EXTENSION = {ext: spec.name for spec in SPECS.values() for ext in spec.extensions}
# Plain-text languages: labelled for the index, chunked by windows.
_TEXT_EXTENSIONS = {
    ".md": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".sh": "shell",
    ".bash": "shell",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".html": "html",
    ".css": "css",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".rb": "ruby",
    ".kt": "kotlin",
    ".swift": "swift",
    ".sql": "sql",
}
_TEXT_NAMES = {"makefile": "make", "dockerfile": "dockerfile"}


def language_for_path(path: str) -> str:
    """A language label for any file: a parsed language, a known text type, or 'text'."""
    p = PurePosixPath(path)
    suffix = p.suffix.lower()
    if suffix in _BY_EXTENSION:
        return _BY_EXTENSION[suffix]
    return _TEXT_EXTENSIONS.get(suffix) or _TEXT_NAMES.get(p.name.lower(), "text")


def spec_for_path(path: str) -> LanguageSpec | None:
    """The tree-sitter spec for a path, or None (→ window fallback)."""
    name = _BY_EXTENSION.get(PurePosixPath(path).suffix.lower())
    return SPECS[name] if name else None


@dataclass(frozen=True)
class Definition:
    """A named definition found in the tree.

    ``node`` spans the whole definition (decorators and ``export`` included);
    ``core`` is the defining node itself; ``body`` is what gets hidden when the
    definition is collapsed inside its parent (None: nothing to hide).
    ``header_end_row`` is the last row of the signature (``class Foo(Base):``).
    """

    node: Node
    core: Node
    role: str
    name: str | None
    body: Node | None
    header_end_row: int

    def kind(self, in_class: bool) -> str:
        if self.role == "function" and in_class:
            return "method"
        return ROLE_KIND[self.role]


def last_row(node: Node) -> int:
    """Last row holding text of ``node`` (a trailing newline does not count)."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row - 1
    return end.row


def _text(node: Node | None) -> str | None:
    if node is None or node.text is None:
        return None
    return node.text.decode("utf-8", errors="replace").strip("'\"`")


def _first_of_type(node: Node, types: frozenset[str]) -> Node | None:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            return n
        stack.extend(reversed(n.named_children))
    return None


_NAMERS: dict[str, Callable[[Node], str | None]] = {}


def _namer(*types: str) -> Callable[[Callable[[Node], str | None]], Callable[[Node], str | None]]:
    def deco(fn: Callable[[Node], str | None]) -> Callable[[Node], str | None]:
        for t in types:
            _NAMERS[t] = fn
        return fn

    return deco


@_namer("impl_item")
def _impl_name(node: Node) -> str | None:
    ty = node.child_by_field_name("type")
    if ty is not None and ty.type == "generic_type":
        ty = ty.child_by_field_name("type")
    return _text(ty)


@_namer("method_declaration")
def _method_name(node: Node) -> str | None:
    name = _text(node.child_by_field_name("name"))
    receiver = node.child_by_field_name("receiver")  # Go only; Java has none
    if receiver is not None and name:
        ty = _first_of_type(receiver, frozenset({"type_identifier"}))
        if ty is not None:
            return f"{_text(ty)}.{name}"
    return name


@_namer("type_declaration")
def _go_type_name(node: Node) -> str | None:
    for child in node.named_children:
        if child.type in ("type_spec", "type_alias"):
            return _text(child.child_by_field_name("name"))
    return None


def _name_of(node: Node) -> str | None:
    namer = _NAMERS.get(node.type)
    if namer is not None:
        return namer(node)
    return _text(node.child_by_field_name("name"))


def _header_end_row(core: Node, body: Node | None, spec: LanguageSpec) -> int:
    """Row where the signature ends: the ``:`` (Python) or the opening ``{``."""
    if body is None:
        return core.start_point.row
    if spec.indent_blocks:
        colons = [c for c in core.children if c.type == ":" and c.start_byte <= body.start_byte]
        return colons[-1].start_point.row if colons else core.start_point.row
    return body.start_point.row


_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)

_COLLAPSIBLE_BODIES = frozenset(
    {
        "block",  # python, go, rust, java
        "statement_block",  # js/ts
        "class_body",  # js/ts/java
        "interface_body",
        "object_type",
        "enum_body",
        "constructor_body",
        "annotation_type_body",
        "declaration_list",  # rust impl/trait/mod
        "field_declaration_list",
        "enum_variant_list",
    }
)


def _definition(
    spec: LanguageSpec, outer: Node, core: Node, role: str, name: str | None
) -> Definition:
    body = core.child_by_field_name("body")
    if body is not None and body.type not in _COLLAPSIBLE_BODIES:
        body = None  # e.g. an arrow function returning an expression
    return Definition(outer, core, role, name, body, _header_end_row(core, body, spec))


def resolve(node: Node, spec: LanguageSpec, outer: Node | None = None) -> Definition | None:
    """The definition ``node`` introduces, or None for any other statement."""
    outer = outer or node
    t = node.type
    role = spec.roles.get(t)
    if role is not None:
        return _definition(spec, outer, node, role, _name_of(node))
    fields = spec.wrappers.get(t)
    if fields is not None:
        for f in fields:
            candidates = node.named_children if f == "" else [node.child_by_field_name(f)]
            for inner in candidates:
                if inner is not None and inner.type not in spec.attachable:
                    found = resolve(inner, spec, outer)
                    if found is not None:
                        return found
        return None
    if t in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) == 1:
            value = declarators[0].child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                role = "class" if value.type == "class" else "function"
                name = _text(declarators[0].child_by_field_name("name"))
                return _definition(spec, outer, value, role, name)
    if t in ("field_definition", "public_field_definition"):
        value = node.child_by_field_name("value")
        if value is not None and value.type in _FUNCTION_VALUES - {"class"}:
            key = node.child_by_field_name("property") or node.child_by_field_name("name")
            return _definition(spec, outer, value, "method", _text(key))
    return None
