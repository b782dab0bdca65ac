"""Page numbers of the chunks of paged documents (PDF, DOCX) read by ``llama-sac ingest``.

A paged document carries its page table in its metadata: ``metadata["page_char_starts"]`` (:data:`PAGE_TABLE_KEY`)
is the list of character offsets, into the document's text, at which pages 1, 2, ... begin (non-decreasing: a page
without text begins where the next text does). It is excluded from the embedding and from the LLM, and it is part of
the document's hash (LlamaIndex hashes all of the metadata), so a change of pages is a change of the document for
the ingest record.

:class:`PageNumbers`, run after the parser, maps each chunk's span ``[start_char_idx, end_char_idx)`` to its first
and last page by binary search in that table and writes them as ``metadata["page_start"]`` and
``metadata["page_end"]`` (1-based physical pages: the first page of the file is 1, whatever the labels printed on
it). Both are excluded from the embedding, so page numbers never change what is embedded. The table itself is
dropped from the chunk (and from its SOURCE relationship), so it is stored once per document (in the docstore's
hash), not once per chunk.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, Document, TransformComponent

__all__ = ["PAGE_END_KEY", "PAGE_KEYS", "PAGE_START_KEY", "PAGE_TABLE_KEY", "PageNumbers", "page_label",
           "paged_document", "pages_of"]

#: Document metadata: the character offset at which each page begins (list of int, one per page).
PAGE_TABLE_KEY = "page_char_starts"
#: Chunk metadata: the first and the last page (1-based) the chunk's characters lie on.
PAGE_START_KEY = "page_start"
PAGE_END_KEY = "page_end"
PAGE_KEYS = (PAGE_START_KEY, PAGE_END_KEY)


def pages_of(starts: Sequence[int], start: int, end: int) -> tuple[int, int]:
    """The first and last page (1-based) of the characters ``[start, end)`` of a text whose pages begin at
    ``starts`` (``starts[0] == 0``, non-decreasing). An empty span lies on the page of ``start``."""
    first = max(1, bisect_right(starts, start))
    return first, max(first, bisect_right(starts, max(start, end - 1)))


def page_label(first: int, last: int) -> str:
    """``"p. 4"`` or ``"pp. 4-5"``."""
    return f"p. {first}" if first == last else f"pp. {first}-{last}"


def paged_document(doc_id: str, text: str, starts: Sequence[int] | None, metadata: dict[str, Any]) -> Document:
    """The ``Document`` of a file read page by page: ``metadata`` plus the page table (when ``starts`` is not
    ``None``), which is excluded from the embedding and the LLM."""
    meta = dict(metadata)
    if starts is not None:
        meta[PAGE_TABLE_KEY] = [int(s) for s in starts]
    return Document(id_=doc_id, text=text, metadata=meta, excluded_embed_metadata_keys=[PAGE_TABLE_KEY],
                    excluded_llm_metadata_keys=[PAGE_TABLE_KEY])


class PageNumbers(TransformComponent):
    """Chunks of a paged document get ``page_start``/``page_end`` from its page table (module docstring); the
    table is removed from every chunk. Chunks without the table or without exact offsets are left as they are.

    Raises:
        ValueError: a chunk with a page table has no exact offsets (its pages would be a guess).
    """

    @classmethod
    def class_name(cls) -> str:
        return "PageNumbers"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for node in nodes:
            if isinstance(node, Document) or PAGE_TABLE_KEY not in node.metadata:
                continue
            starts = node.metadata[PAGE_TABLE_KEY]
            node.metadata = {k: v for k, v in node.metadata.items() if k != PAGE_TABLE_KEY}
            for related in node.relationships.values():  # new dicts: the document's own metadata is not touched
                for info in related if isinstance(related, list) else [related]:
                    if PAGE_TABLE_KEY in (info.metadata or {}):
                        info.metadata = {k: v for k, v in info.metadata.items() if k != PAGE_TABLE_KEY}
            start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
            if start is None or end is None:
                raise ValueError(f"chunk {node.node_id} of a paged document has no exact character offsets: its "
                                 "pages cannot be found (use a parser that keeps start_char_idx/end_char_idx)")
            node.metadata[PAGE_START_KEY], node.metadata[PAGE_END_KEY] = pages_of(starts, start, end)
            node.excluded_embed_metadata_keys = sorted({*node.excluded_embed_metadata_keys, *PAGE_KEYS}
                                                       - {PAGE_TABLE_KEY})
            node.excluded_llm_metadata_keys = [k for k in node.excluded_llm_metadata_keys if k != PAGE_TABLE_KEY]
        return nodes
