"""A parsed HTML page for assertions: elements by tag and class, with their text, from the
standard library's `html.parser` (enough for a page the harness itself writes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Self

VOID = frozenset({"meta", "link", "br", "hr", "img", "input", "col", "wbr", "source"})


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def all(self, tag: str = "*", cls: str | None = None) -> list[Element]:
        """Every element below this one (in document order) with this tag and class."""
        found: list[Element] = []
        for child in self.children:
            if isinstance(child, str):
                continue
            if (tag in ("*", child.tag)) and (cls is None or cls in child.classes):
                found.append(child)
            found.extend(child.all(tag, cls))
        return found

    def one(self, tag: str = "*", cls: str | None = None) -> Element:
        found = self.all(tag, cls)
        assert len(found) == 1, f"expected one <{tag} class={cls}>, found {len(found)}"
        return found[0]

    @classmethod
    def parse(cls, html: str) -> Self:
        parser = _TreeBuilder()
        parser.feed(html)
        parser.close()
        return cls("document", {}, parser.root.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("document", {})
        self.open: list[Element] = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.open[-1].children.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.open) - 1, 0, -1):
            if self.open[index].tag == tag:
                del self.open[index:]
                return

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)
