"""The ranking's orders on the built-in contracts, pinned: a refactoring of the ranking must not move one place.

The expected digests were computed with the ranking of 0.3 (the document located wherever the query names it,
``retrievers/locator.py``, name phrases included; ``as-published`` reads the whole query and is 0.2's digest
unchanged), re-pinned when ``outside_prior`` became 0 (no prior outside the documents the question names; the cases
``whole-prior`` and ``wrapped-whole-prior``, at 1, keep the digests before it) on the built-in benchmark
(``synthetic_contracts()``: 24 contracts, 108 queries, plus each of the first 20 queries reworded without its
leading clause), chunked by ``RecursiveCharacterNodeParser()``, summarized by ``ExtractiveSummarizer()`` and embedded
by the deterministic ``FakeEmbedding``. Each digest is the sha256 of every query's top 8 as ``(document, start
offset, score rounded to 9 decimals)``."""

from __future__ import annotations

import asyncio
import hashlib
import json
from functools import cache
from typing import Any

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_sac import (
    DocumentAwarePostprocessor,
    DocumentAwareRetriever,
    DocumentIndex,
    ExtractiveSummarizer,
    NumpyVectorStore,
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
)
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.retrievers.chunk_lexical import question_text
from tests.conftest import FakeEmbedding

pytest.importorskip("bm25s")

K = 8
#: case -> (DocumentIndex options, ranking options)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "default": ({}, {}),
    "candidates-unfocused": ({}, {"lexical_scope": "candidates", "focus_documents": 0}),
    "focus-3": ({}, {"focus_documents": 3, "question_weight": 0.25, "lexical_weight": 0.05}),
    "hub-fix": ({"prior_margin": 0.5, "require_name_match": True, "name_pairs": True}, {}),
    "as-published": ({"locator_only": False, "word_parts": False}, {"lexical_weight": 0.0, "question_weight": 0.0}),
    "whole-prior": ({"outside_prior": 1.0}, {}),
}
GOLDEN = {
    "default": "984736ce59288a335dfe65e394865bbed95ba8bf491bc4a3ea748e7b442a0a69",
    "candidates-unfocused": "2db4be2dcd457e344ef0c0a31a82541faf4fbea7ab3c9c9a63c1261393a7710a",
    "focus-3": "db21560fd947c117fafc611aaef55bbbb15f85457e71bdf8a39a89c6f653c821",
    "hub-fix": "a3608aa080889c32c11989da66e51b6b3686a98d1d5178a2b63b858a0366b66a",
    "as-published": "6e35693fbf245903424bfe671e439b80a72bfca6d179bdf136779cf2b23e4111",
    "whole-prior": "6136271dfb8c461aeaf3ec9eba8b273cd6cfb128e954ca02f2198cc51782eaa6",
    "wrapped": "03467fcfcd5377db8aa925cb363eb2698136cc0f56ac98f01bbd8a530cbd36b0",
    "postprocessor": "03467fcfcd5377db8aa925cb363eb2698136cc0f56ac98f01bbd8a530cbd36b0",
    "wrapped-whole-prior": "29b3be5fe36795cc8483421bae84f4fa57fedab1c5e30e54ff9cb1ebb6456a6c",
}


@cache
def _setup() -> tuple[list[Any], VectorStoreIndex, list[str]]:
    bench = synthetic_contracts()
    documents = [Document(text=text, id_=doc_id) for doc_id, text in bench.documents.items()]
    nodes = RecursiveCharacterNodeParser()(documents)
    augment = SummaryAugmentationTransformation(summarizer=ExtractiveSummarizer(), embed_model=FakeEmbedding())
    nodes = list(augment(nodes))
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore()),
                             embed_model=FakeEmbedding())
    queries = [q.query for q in bench.queries]
    queries += [question_text(q).strip() for q in queries[:20]]
    return nodes, index, queries


class _Candidates(BaseRetriever):
    """A retriever that is not a vector index's: the dense top 30 of ``index``."""

    def __init__(self, index: VectorStoreIndex) -> None:
        super().__init__()
        self.dense = index.as_retriever(similarity_top_k=30)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.dense.retrieve(query_bundle)


def _digest(orders: list[list[NodeWithScore]]) -> str:
    rows = [[(hit.node.ref_doc_id, getattr(hit.node, "start_char_idx", None), round(hit.score or 0.0, 9))
             for hit in order] for order in orders]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _retriever(case: str) -> DocumentAwareRetriever:
    nodes, index, _ = _setup()
    prior, ranking = CASES[case]
    return DocumentAwareRetriever(index, DocumentIndex.from_nodes(nodes, **prior), similarity_top_k=K, **ranking)


@pytest.mark.parametrize("case", list(CASES))
def test_the_retrievers_orders_on_the_built_in_contracts_are_those_released(case: str) -> None:
    retriever = _retriever(case)
    orders = [retriever.retrieve(query) for query in _setup()[2]]
    assert all(len(order) == K for order in orders)
    assert _digest(orders) == GOLDEN[case]


@pytest.mark.parametrize("case", ["default", "focus-3"])
def test_the_async_path_gives_the_same_orders(case: str) -> None:
    retriever = _retriever(case)
    queries = _setup()[2][::6]

    async def main() -> list[list[NodeWithScore]]:
        return [await retriever.aretrieve(query) for query in queries]

    assert _digest(asyncio.run(main())) == _digest([retriever.retrieve(query) for query in queries])


def test_a_wrapped_retrievers_and_the_postprocessors_orders_are_those_released() -> None:
    nodes, index, queries = _setup()
    documents = DocumentIndex.from_nodes(nodes)
    dense = _Candidates(index)
    wrapped = DocumentAwareRetriever(dense, documents, similarity_top_k=K)
    post = DocumentAwarePostprocessor(documents, top_n=K)
    wrapped_orders, post_orders = [], []
    for query in queries:
        wrapped_orders.append(wrapped.retrieve(query))
        post_orders.append(post.postprocess_nodes(dense.retrieve(query), QueryBundle(query_str=query)))
    assert _digest(wrapped_orders) == GOLDEN["wrapped"]
    assert _digest(post_orders) == GOLDEN["postprocessor"]
    whole = DocumentAwareRetriever(dense, DocumentIndex.from_nodes(nodes, outside_prior=1.0), similarity_top_k=K)
    assert _digest([whole.retrieve(query) for query in queries]) == GOLDEN["wrapped-whole-prior"]
