"""Which document each node belongs to, and that document's full text (for one summary per document).

:func:`group_by_document` groups nodes by their source document (a Document, or the SOURCE relationship of a
chunk) and finds each document's full text: from a Document in the same input, from ``documents=`` (Documents or a
mapping id -> text), else rebuilt from the chunks by their exact offsets with :func:`reconstruct_text`. Each
:class:`DocumentGroup` records where its text came from (``source``):

* ``"document"``: a Document (in the input or ``documents=``) or a given text;
* ``"chunks"``: rebuilt from the chunks, every character covered: the same text as the Document, up to any
  whitespace after the last chunk (this package's parsers always give this);
* ``"chunks_with_gaps"``: rebuilt, but characters no chunk covers (whitespace some parsers drop, e.g. LlamaIndex's
  ``SentenceSplitter``) were filled with as many spaces so every offset stays valid; the text (and so the summary)
  can differ slightly from the Document's.

Linear in the total size of the nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import BaseNode, Document, MetadataMode

from llama_index_sac.summarizers.base import SummaryResult

__all__ = ["DocumentGroup", "group_by_document", "is_document", "reconstruct_text"]


@dataclass
class DocumentGroup:
    """One document's nodes, its full text, its metadata and, once summarized, its result or error."""

    doc_id: str
    members: list[BaseNode] = field(default_factory=list)
    text: str | None = None
    metadata: dict[str, Any] | None = None
    source: str = "document"
    result: SummaryResult | None = None
    error: str | None = None
    cache_error: str | None = None


def is_document(node: BaseNode) -> bool:
    """True for a Document or a node without a SOURCE relationship (it stands for its own document)."""
    return isinstance(node, Document) or node.source_node is None


def _documents_map(documents: Any) -> dict[str, str | BaseNode]:
    if documents is None:
        return {}
    if isinstance(documents, Mapping):
        out: dict[str, str | BaseNode] = {}
        for key, value in documents.items():
            if not isinstance(value, (str, BaseNode)):
                raise TypeError(f"documents[{key!r}] must be a str or a node, got {type(value).__name__}")
            out[str(key)] = value
        return out
    out = {}
    for doc in documents:
        if not isinstance(doc, BaseNode):
            raise TypeError(f"documents must be nodes/Documents or a mapping id -> text, got {type(doc).__name__}")
        out[doc.node_id] = doc
    return out


def group_by_document(nodes: Sequence[BaseNode], documents: Any = None,
                      inherited: Callable[[BaseNode], dict[str, Any]] = lambda n: dict(n.metadata)
                      ) -> list[DocumentGroup]:
    """Group ``nodes`` by document (first-seen order) and find each document's full text (module docstring).

    Args:
        nodes: Documents and/or chunks (chunks name their document by their SOURCE relationship).
        documents: full texts for documents not in ``nodes``: Documents/nodes, or a mapping id -> text.
        inherited: the metadata of a document known only through its chunks, from its first chunk.

    Raises:
        TypeError: an item of ``nodes`` or ``documents`` is of the wrong type.
        ValueError: a text must be rebuilt but a chunk has no exact offsets, or overlapping chunks disagree.
    """
    groups: dict[str, DocumentGroup] = {}
    for node in nodes:
        if not isinstance(node, BaseNode):
            raise TypeError(f"expected LlamaIndex nodes, got {type(node).__name__}")
        if is_document(node):
            group = groups.setdefault(node.node_id, DocumentGroup(node.node_id))
            group.text = node.get_content(metadata_mode=MetadataMode.NONE)
            group.metadata = dict(node.metadata)
        else:
            source = node.source_node
            assert source is not None
            group = groups.setdefault(source.node_id, DocumentGroup(source.node_id))
        group.members.append(node)
    given = _documents_map(documents)
    for group in groups.values():
        if group.text is not None:
            continue
        if group.doc_id in given:
            doc = given[group.doc_id]
            group.text = doc if isinstance(doc, str) else doc.get_content(metadata_mode=MetadataMode.NONE)
            if not isinstance(doc, str):
                group.metadata = dict(doc.metadata)
        else:
            group.text, gaps = reconstruct_text(group.doc_id, group.members)
            group.source = "chunks_with_gaps" if gaps else "chunks"
        if group.metadata is None:
            group.metadata = inherited(group.members[0])
    return list(groups.values())


def reconstruct_text(doc_id: str, nodes: Sequence[BaseNode]) -> tuple[str, int]:
    """The text of document ``doc_id`` rebuilt from ``nodes`` (its chunks, any order), and how many characters
    were not covered by any chunk (filled with spaces; the text before the first chunk counts, the end after the last
    chunk is unknown and not added).

    Raises:
        ValueError: a node has no exact offsets (``start_char_idx``/``end_char_idx`` missing or not spanning its
            text), or two overlapping nodes disagree on a character; the message names the document and node.
    """
    spans: list[tuple[int, int, str, str]] = []
    for node in nodes:
        start = getattr(node, "start_char_idx", None)
        end = getattr(node, "end_char_idx", None)
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        if start is None or end is None or start < 0 or end - start != len(text):
            raise ValueError(
                f"cannot reconstruct document {doc_id!r}: node {node.node_id!r} has no exact offsets "
                f"(start_char_idx={start}, end_char_idx={end}, len(text)={len(text)}). Pass documents=[...] to the "
                "transformation, include the Documents in its input, or place it before the parser."
            )
        spans.append((start, end, text, node.node_id))
    spans.sort(key=lambda s: (s[0], s[1]))
    parts: list[str] = []
    cursor = gaps = 0
    for start, end, text, _ in spans:
        if start > cursor:
            parts.append(" " * (start - cursor))
            gaps += start - cursor
            cursor = start
        if end > cursor:
            parts.append(text[cursor - start:])
            cursor = end
    rebuilt = "".join(parts)
    for start, end, text, node_id in spans:  # every node must read back exactly (overlaps agree)
        if rebuilt[start:end] != text:
            raise ValueError(
                f"cannot reconstruct document {doc_id!r}: node {node_id!r} disagrees with an overlapping node at "
                f"characters {start}..{end}; pass documents=[...]"
            )
    return rebuilt, gaps
