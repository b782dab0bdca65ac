"""``llama-sac query``: the top-k chunks of a question in a collection written by ``llama-sac ingest``.

:func:`query` only reads: the folder must already be a store of the kind named (checked before any client is opened,
:func:`~llama_index_sac.apps.ingest.store.check_store_folder`), so a wrong folder or kind is refused without
creating anything. :func:`model_loading_progress` switches the embedding model's loading bars (``transformers`` and
``huggingface_hub``) off and on again, for ``--no-progress``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_sac.apps.ingest.files import IngestError, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.store import open_store
from llama_index_sac.embeddings.model import default_embedding_model
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever, DocumentIndex
from llama_index_sac.settings import model_identity

__all__ = ["QueryHit", "load_model", "model_loading_progress", "query"]


@contextmanager
def model_loading_progress(enabled: bool) -> Iterator[None]:
    """With ``enabled=False``, no progress bar while a model loads in the block (``transformers``' and
    ``huggingface_hub``'s own switch, ``transformers.utils.logging.disable_progress_bar``); restored afterwards.
    Nothing to do when ``enabled`` or when transformers is not installed."""
    hf_logging: Any
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        hf_logging = None
    if enabled or hf_logging is None or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()


def load_model(name: str | None, show_progress: bool) -> BaseEmbedding:
    """:func:`~llama_index_sac.default_embedding_model` by name (``None``: all-MiniLM-L6-v2), its loading bar shown
    or not.

    Raises:
        IngestError: the model cannot be loaded (not available offline, the ``hf`` extra missing...).
    """
    with model_loading_progress(show_progress):
        try:
            return default_embedding_model(name)
        except Exception as exc:  # EmbeddingModelError, an ImportError naming the extra, an error of the backend
            raise IngestError(f"embedding model {name or 'default'!r} cannot be loaded: {exc}") from None


@dataclass(frozen=True)
class QueryHit:
    """One retrieved chunk: its document, character offsets ``[start, end)`` in the document, the store's score
    (higher is closer), the document's summary, the chunk text and, when the reader recorded them, the pages
    ``(first, last)`` the chunk lies on (metadata ``page_start``/``page_end``)."""

    doc_id: str
    start: int | None
    end: int | None
    score: float | None
    summary: str | None
    text: str
    pages: tuple[int, int] | None = None


def query(question: str, store: StoreSpec | str, *, collection: str = "llama-sac", k: int = 5,
          embed_model: BaseEmbedding | None = None, embed_model_name: str | None = None,
          document_aware: bool = False, show_progress: bool = True) -> list[QueryHit]:
    """The ``k`` chunks of the collection closest to ``question``, best first (``[]`` for an empty collection).

    The embedding model is ``embed_model``, else ``embed_model_name``, else the one the collection was ingested with.
    With ``document_aware``, :class:`~llama_index_sac.DocumentAwareRetriever` with its defaults
    ranks them (its document index is read from the collection: every row once per call). Nothing is created or
    written: the folder must be a store of the kind named.

    Raises:
        IngestError: an empty question, ``k < 1``, a missing store or collection, a folder that is not a store of
            that kind (or whose ingest record names the other kind), a store that cannot be read, or an embedding
            model other than the collection's.
    """
    if not question.strip():
        raise IngestError("the question is empty")
    if k < 1:
        raise IngestError(f"--k must be at least 1, got {k}")
    spec = store if isinstance(store, StoreSpec) else StoreSpec.parse(store)
    record = IngestRecord(spec, collection)
    recorded = record.settings()
    name = embed_model_name if embed_model_name is not None else (recorded or {}).get("embed_model_name")
    with open_store(spec, collection, create=False, empty_ok=record.exists(),
                    recorded_kind=record.store_kind()) as opened:
        if opened.rows == 0:
            return []
        try:
            embed = embed_model if embed_model is not None else load_model(name, show_progress)
        except ValueError as exc:
            raise IngestError(str(exc)) from None
        if recorded is not None and recorded["settings"].get("embed_model") != model_identity(embed):
            raise IngestError(f"collection {collection!r} was embedded with {recorded['settings']['embed_model']}, "
                              f"not {model_identity(embed)}: pass that --embed-model")
        index = VectorStoreIndex.from_vector_store(opened.vector_store, embed_model=embed)
        if document_aware:
            try:
                documents = DocumentIndex.from_source(opened.vector_store)
            except ValueError as exc:  # no summaries: not a SAC collection
                raise IngestError(f"--document-aware: {exc}") from None
            hits = DocumentAwareRetriever(index, documents, similarity_top_k=k).retrieve(question)
        else:
            hits = index.as_retriever(similarity_top_k=k).retrieve(question)
    return [QueryHit(doc_id=h.node.ref_doc_id or h.node.node_id, start=getattr(h.node, "start_char_idx", None),
                     end=getattr(h.node, "end_char_idx", None), score=h.score,
                     summary=h.node.metadata.get("document_summary"), text=h.node.get_content(),
                     pages=_pages(h.node.metadata))
            for h in hits]


def _pages(metadata: dict[str, Any]) -> tuple[int, int] | None:
    first, last = metadata.get("page_start"), metadata.get("page_end")
    return (first, last) if isinstance(first, int) and isinstance(last, int) else None
