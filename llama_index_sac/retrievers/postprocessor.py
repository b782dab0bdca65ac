"""The document prior as a LlamaIndex node postprocessor: :class:`DocumentAwarePostprocessor`.

Any query engine (``index.as_query_engine(node_postprocessors=[...])``, ``RetrieverQueryEngine``, chat engines) can
re-rank its retrieved chunks with the prior of :class:`~llama_index_sac.retrievers.DocumentIndex`, the same fusion as
:class:`~llama_index_sac.retrievers.DocumentAwareRetriever` (:func:`~llama_index_sac.retrievers.fusion.fuse`) over the
chunks it is given. It cannot fetch the chunks of the documents the query names that the retriever missed (the
retriever's ``focus_documents``): retrieve generously (``similarity_top_k``) and keep ``top_n``.
"""

from __future__ import annotations

import math
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_sac.retrievers.chunk_lexical import DEFAULT_LEXICAL_SCOPE, DEFAULT_LEXICAL_WEIGHT, LexicalScope
from llama_index_sac.retrievers.document_aware import DEFAULT_PRIOR_WEIGHT
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.fusion import fuse, lexical_bonus

__all__ = ["DocumentAwarePostprocessor"]


class DocumentAwarePostprocessor(BaseNodePostprocessor):
    """Re-rank retrieved chunks by ``score + prior_weight * prior(document of the chunk) + lexical_weight *
    lexical(chunk)`` (module docstring; ``lexical``: the question's BM25 over the chunks given, without the names of
    the top-prior document, :mod:`~llama_index_sac.retrievers.chunk_lexical`).

    Args:
        document_index: the summaries and names (:meth:`DocumentIndex.from_source`, ``load``, ``from_persist_dir``).
        prior_weight: weight of the prior, in the units of the retriever's scores (cosine for a vector index).
        lexical_weight: weight of the question's lexical score, in the same units (0: off).
        top_n: chunks kept (None: all, re-ordered).

    Raises:
        TypeError: ``document_index`` is not a :class:`DocumentIndex`.
        ValueError: ``prior_weight`` or ``lexical_weight`` negative or not finite, ``top_n`` below 1; at query time,
            no query.
    """

    prior_weight: float = Field(default=DEFAULT_PRIOR_WEIGHT, ge=0.0,
                                description="Weight of the document prior, in the units of the chunks' scores.")
    lexical_weight: float = Field(default=DEFAULT_LEXICAL_WEIGHT, ge=0.0,
                                  description="Weight of the question's BM25 over the chunks, in the same units.")
    lexical_scope: LexicalScope = Field(
        default=DEFAULT_LEXICAL_SCOPE, description="The chunks the lexical score ranks: those of the document the "
        "prior located (every chunk when it located none), or every chunk.")
    top_n: int | None = Field(default=None, ge=1, description="Chunks kept after re-ranking (None: all).")

    _document_index: DocumentIndex = PrivateAttr()

    def __init__(self, document_index: DocumentIndex, **kwargs: Any) -> None:
        if not isinstance(document_index, DocumentIndex):
            raise TypeError(f"document_index must be a DocumentIndex, got {type(document_index).__name__}")
        super().__init__(**kwargs)
        self._document_index = document_index

    @field_validator("prior_weight", "lexical_weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"the weight must be finite, got {value!r}")
        return value

    @classmethod
    def class_name(cls) -> str:
        return "DocumentAwarePostprocessor"

    @property
    def document_index(self) -> DocumentIndex:
        return self._document_index

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("DocumentAwarePostprocessor needs the query (query_bundle or query_str)")
        query = query_bundle.query_str
        prior = self._document_index.prior_of(query) if self.prior_weight > 0 else {}
        bonus = None
        if self.lexical_weight > 0:
            located = min(prior, key=lambda d: (-prior[d], d)) if prior else None
            names = self._document_index.names_of(located) if located is not None else frozenset()
            scope = [located] if located is not None and self.lexical_scope == "located" else None
            bonus = lexical_bonus(nodes, query, self.lexical_weight, names, scope)
        return fuse(nodes, prior, self.prior_weight, self.top_n, bonus)
