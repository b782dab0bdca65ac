"""The adapter's reads of llama-index-core (``retrievers/_llamaindex.py``), checked against the installed core: a
core release that moves ``VectorStoreIndex._embed_model`` or ``VectorIndexRetriever._index``/``._filters`` fails
here."""

from __future__ import annotations

import llama_index.core
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from llama_index_sac import NumpyVectorStore
from llama_index_sac.retrievers._llamaindex import embed_model_of, index_of
from tests.conftest import FakeEmbedding


def _index(model: FakeEmbedding) -> VectorStoreIndex:
    nodes = [TextNode(text="The Receiving Party keeps copies.", id_="a"), TextNode(text="Notices in writing.", id_="b")]
    return VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore()),
                            embed_model=model)


def test_the_pinned_core_is_the_one_checked() -> None:
    assert llama_index.core.__version__.startswith("0.14.")


def test_the_embedding_model_of_an_index_is_the_one_it_was_built_with() -> None:
    model = FakeEmbedding()
    index = _index(model)
    assert embed_model_of(index) is model
    assert embed_model_of(VectorStoreIndex.from_vector_store(index.vector_store, embed_model=model)) is model
    with pytest.raises(TypeError, match="^index must be a VectorStoreIndex, got str$"):
        embed_model_of("index")  # type: ignore[arg-type]


def test_the_index_and_filters_of_a_vector_index_retriever_are_those_it_was_made_with() -> None:
    index = _index(FakeEmbedding())
    recent = MetadataFilters(filters=[MetadataFilter(key="year", value=2020, operator=FilterOperator.GTE)])
    filtered, plain = index.as_retriever(similarity_top_k=2, filters=recent), index.as_retriever()
    assert isinstance(filtered, VectorIndexRetriever) and isinstance(plain, VectorIndexRetriever)
    found, filters = index_of(filtered)
    assert found is index and filters is recent
    assert index_of(plain) == (index, None)
    with pytest.raises(TypeError, match="^retriever must be a VectorIndexRetriever, got VectorStoreIndex$"):
        index_of(index)  # type: ignore[arg-type]
