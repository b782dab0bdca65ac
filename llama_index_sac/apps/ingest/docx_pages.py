"""The text of a DOCX's body and where its pages begin, from the WordprocessingML of ``word/document.xml``.

Text: the body's paragraphs in document order (paragraphs inside tables, content controls and text boxes included;
headers, footers, footnotes, comments, deleted text and field codes left out), those with text joined by a blank
line; a tab is ``\\t``, a line break ``\\n``, a non-breaking hyphen ``-``.

Pages: a DOCX holds no fixed pages (Word lays them out when it opens the file), so a page here is what the file
itself marks:

* when it holds ``<w:lastRenderedPageBreak/>`` marks (Word writes one where each page began when it last laid the
  document out and saved it), those: the pages as Word last showed them;
* otherwise its explicit breaks: page breaks (``<w:br w:type="page"/>``), paragraphs set to begin a page
  (``<w:pageBreakBefore/>``) and section breaks other than continuous ones;
* with neither, the document has no page numbers (``None``), rather than a guess.

A page begins at the first character of text after its break (text never lies between a break and the page it
begins); a run of several breaks gives empty pages, which hold no chunk.

An entity reference inside a text element (``&name;`` declared in a DOCTYPE, which Word never writes; python-docx
neither expands nor drops it) makes the file damaged (:class:`DocxContentError`) rather than a text with a hole in it.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

__all__ = ["DocxContentError", "body_text"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_SKIPPED = frozenset({f"{_W}del", f"{_W}moveFrom", f"{_W}pPrChange", f"{_W}rPrChange", f"{_W}sectPrChange",
                      f"{_W}instrText", f"{_W}delText", f"{_W}footnoteReference", f"{_W}commentReference",
                      _MC_FALLBACK})
_OFF = frozenset({"0", "false", "off"})
_SEPARATOR = "\n\n"


class DocxContentError(ValueError):
    """Text that cannot be taken as it is (an unexpanded entity reference): the message says what and where."""


def _on(element: Any) -> bool:
    """A WordprocessingML on/off property: on unless ``w:val`` says off."""
    return element is not None and element.get(f"{_W}val", "true").lower() not in _OFF


class _Text:
    """The text being built, with the page breaks waiting for their first character."""

    def __init__(self, new_page_after: dict[Any, bool]) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.separate = False  # a paragraph ended: a blank line before the next text
        self.pending = {"explicit": 0, "rendered": 0}
        self.starts: dict[str, list[int]] = {"explicit": [], "rendered": []}
        self.seen = {"explicit": False, "rendered": False}
        self.new_page_after = new_page_after

    def brk(self, kind: str) -> None:
        self.pending[kind] += 1
        self.seen[kind] = True

    def emit(self, text: str) -> None:
        if not text:
            return
        if self.separate and self.length:
            self.parts.append(_SEPARATOR)
            self.length += len(_SEPARATOR)
        self.separate = False
        for kind, count in self.pending.items():
            self.starts[kind].extend([self.length] * count)
            self.pending[kind] = 0
        self.parts.append(text)
        self.length += len(text)

    def walk(self, element: Any) -> None:
        tag = element.tag
        if not isinstance(tag, str) or tag in _SKIPPED:
            return
        if tag == f"{_W}t":
            for child in element:
                if child.tag is etree.Entity:
                    raise DocxContentError(f"an entity reference {str(child.text)[:40]} in its text, which is not "
                                           "expanded (Word never writes one)")
            self.emit((element.text or "") + "".join(child.tail or "" for child in element))  # a comment's tail
        elif tag == f"{_W}tab":
            self.emit("\t")
        elif tag == f"{_W}br":
            kind = element.get(f"{_W}type", "textWrapping")
            if kind == "page":
                self.brk("explicit")
            elif kind != "column":
                self.emit("\n")
        elif tag == f"{_W}cr":
            self.emit("\n")
        elif tag == f"{_W}noBreakHyphen":
            self.emit("-")
        elif tag == f"{_W}lastRenderedPageBreak":
            self.brk("rendered")
        elif tag == f"{_W}p":
            properties = element.find(f"{_W}pPr")
            if properties is not None and _on(properties.find(f"{_W}pageBreakBefore")):
                self.brk("explicit")
            for child in element:
                self.walk(child)
            self.separate = True
            section = None if properties is None else properties.find(f"{_W}sectPr")
            if section is not None and self.new_page_after.get(section, False):
                self.brk("explicit")
        else:
            for child in element:
                self.walk(child)

    def result(self) -> tuple[str, list[int] | None]:
        text = "".join(self.parts)
        kind = "rendered" if self.seen["rendered"] else "explicit" if self.seen["explicit"] else None
        if kind is None:
            return text, None
        self.starts[kind].extend([self.length] * self.pending[kind])  # breaks after the last text: empty pages
        return text, [0, *self.starts[kind]]


def _section_breaks(body: Any) -> dict[Any, bool]:
    """For each paragraph-level ``w:sectPr`` (the end of a section): whether the next section begins a new page
    (its own ``w:sectPr``'s ``w:type`` is not ``continuous``; ``nextPage`` when absent)."""
    sections = [s for s in body.iter(f"{_W}sectPr")
                if s.getparent() is body or (s.getparent().tag == f"{_W}pPr"
                                             and s.getparent().getparent().tag == f"{_W}p")]
    out: dict[Any, bool] = {}
    for this, following in zip(sections, sections[1:], strict=False):
        kind = following.find(f"{_W}type")
        out[this] = (kind.get(f"{_W}val", "nextPage") if kind is not None else "nextPage") != "continuous"
    return out


def body_text(body: Any) -> tuple[str, list[int] | None]:
    """The text of the ``w:body`` element ``body`` (an lxml element) and the offsets where pages 1, 2, ... begin
    (``None``: the file marks no page; module docstring)."""
    builder = _Text(_section_breaks(body))
    for child in body:
        builder.walk(child)
    return builder.result()
