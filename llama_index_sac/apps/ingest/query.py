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
from llama_index_sac.embeddings.default import EMBED_PRECISIONS, EmbeddingBackendOptions, default_embedding_model
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever, DocumentIndex
from llama_index_sac.settings import model_space, recorded_space

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


def load_model(name: str | None, show_progress: bool, options: EmbeddingBackendOptions | None = None) -> BaseEmbedding:
    """:func:`~llama_index_sac.default_embedding_model` by name (``None``: all-MiniLM-L6-v2) on the runtime of
    ``options``, its loading bar shown or not.

    Raises:
        IngestError: the model cannot be loaded (not available offline, the ``hf`` extra missing...).
    """
    with model_loading_progress(show_progress):
        try:
            options = options if options is not None else EmbeddingBackendOptions()
            return default_embedding_model(name, backend=options.backend, precision=options.precision,
                                           num_threads=options.num_threads)
        except Exception as exc:  # EmbeddingModelError, an ImportError naming the extra, an error of the backend
            raise IngestError(f"embedding model {name or 'default'!r} cannot be loaded: {exc}") from None


@dataclass(frozen=True)
class QueryHit:
    """One retrieved chunk: its document, character offsets ``[start, end)`` in the document, the store's score
    (higher is closer), the document's summary and the chunk text."""

    doc_id: str
    start: int | None
    end: int | None
    score: float | None
    summary: str | None
    text: str


def query(question: str, store: StoreSpec | str, *, collection: str = "llama-sac", k: int = 5,
          embed_model: BaseEmbedding | None = None, embed_model_name: str | None = None,
          embed_options: EmbeddingBackendOptions | None = None, document_aware: bool = False,
          show_progress: bool = True) -> list[QueryHit]:
    """The ``k`` chunks of the collection closest to ``question``, best first (``[]`` for an empty collection).

    The embedding model is ``embed_model``, else ``embed_model_name``, else the one the collection was ingested with;
    it runs as ``embed_options`` say, by default on the default runtime (ONNX for all-MiniLM-L6-v2: torch and float32
    ONNX vectors are one space) at the precision the collection was embedded with.
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
            precision = (recorded or {}).get("embed_precision", "float32")
            if embed_model is None and precision not in EMBED_PRECISIONS:
                raise IngestError(f"collection {collection!r} was embedded at precision {precision!r}, which "
                                  "llama-sac query does not offer: query it through the API with that model")
            options = embed_options if embed_options is not None else EmbeddingBackendOptions()
            embed = embed_model if embed_model is not None else load_model(name, show_progress, options)
        except ValueError as exc:
            raise IngestError(str(exc)) from None
        space = recorded_space(recorded["settings"].get("embed_model") or {}) if recorded is not None else None
        if space is not None and space != model_space(embed):
            raise IngestError(f"collection {collection!r} was embedded with {space}, not {model_space(embed)}: pass "
                              "that --embed-model / --embed-precision")
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
                     summary=h.node.metadata.get("document_summary"), text=h.node.get_content())
            for h in hits]
