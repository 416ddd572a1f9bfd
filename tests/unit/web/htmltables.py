"""Reads the tables of a served page (stdlib HTMLParser): header texts, cell texts
and cell links, keyed by the table's ``id`` — what a user sees, without regexes."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Table:
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    links: list[list[str]] = field(default_factory=list)
    """Per row: the hrefs of its links, in order."""
    header_links: dict[str, str] = field(default_factory=dict)

    def column(self, name: str) -> list[str]:
        i = self.header.index(name)
        return [r[i] for r in self.rows]


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, Table] = {}
        self._stack: list[Table] = []
        self._cell: list[str] | None = None
        self._in_head = False
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            t = Table()
            self.tables[a.get("id") or f"table{len(self.tables)}"] = t
            self._stack.append(t)
        elif not self._stack:
            return
        elif tag == "thead":
            self._in_head = True
        elif tag == "tbody":
            self._in_head = False
        elif tag == "tr" and not self._in_head:
            self._stack[-1].rows.append([])
            self._stack[-1].links.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "a" and a.get("href"):
            self._href = a["href"]
            if not self._in_head and self._stack[-1].links:
                self._stack[-1].links[-1].append(a["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if not self._stack:
            return
        t = self._stack[-1]
        if tag == "table":
            self._stack.pop()
        elif tag in ("td", "th") and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            if self._in_head:
                t.header.append(text)
                if self._href:
                    t.header_links[text] = self._href
            else:
                t.rows[-1].append(text)
            self._cell, self._href = None, None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(html: str) -> dict[str, Table]:
    p = _Parser()
    p.feed(html)
    return p.tables
