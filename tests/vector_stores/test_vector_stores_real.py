"""SAC nodes in REAL vector stores: Chroma (``chromadb.PersistentClient``, embedded, on disk) and
Qdrant (``QdrantClient(path=...)``, local mode, on disk) through LlamaIndex's ``ChromaVectorStore`` /
``QdrantVectorStore``, each test in its own temporary directory.

Covered: the round trip (summary, bookkeeping keys, exact offsets, EMBED/LLM renderings, filters on the document id),
persist + reload, docstore updates (``UPSERTS``: only the changed document is deleted, re-summarised and re-embedded,
every other row byte-identical; ``UPSERTS_AND_DELETE``: a removed document's rows go), and the recipe of
``docs/production.md``, executed from the markdown as written, with the real ``ExtractiveSummarizer``.

No mocks: the stores are real; the embedding (``FakeEmbedding``, hashed trigrams) and the counting summarizer
(``LLMSummarizer`` over ``RecordingLLM``) are deterministic real components that record their calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.schema import Document, MetadataMode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from llama_index_sac import LLMSummarizer, RecursiveCharacterNodeParser, SummaryAugmentationTransformation
from llama_index_sac.apps.benchmark.datasets import synthetic_contracts
from llama_index_sac.augmentation.transformation import BOOKKEEPING_KEYS
from tests._nodes import LocatedNode, located_node, located_nodes, source_id
from tests._summary_fakes import RecordingLLM, document_of
from tests.conftest import REPO, FakeEmbedding

_MISSING = "the 'vectorstores' extra is not installed (pip install -e '.[vectorstores]'; scripts/setup.sh does it)"
pytest.importorskip("chromadb", reason=_MISSING)
pytest.importorskip("qdrant_client", reason=_MISSING)
pytest.importorskip("llama_index.vector_stores.chroma", reason=_MISSING)
pytest.importorskip("llama_index.vector_stores.qdrant", reason=_MISSING)

# QdrantVectorStore creates payload indexes, which Qdrant's local mode ignores (documented in docs/production.md).
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

STORES = ["chroma", "qdrant"]
COLLECTION = "contracts"  # the collection name of the docs recipe
DOC = REPO / "docs" / "production.md"
ID_KEYS = ("ref_doc_id", "doc_id", "document_id")  # LlamaIndex writes the document id under all three


# -- the recipe of docs/production.md, run as written ----------------------------------------------------------
_RECIPE = re.compile(r"<!-- recipe: ([\w-]+) -->\n```python\n(.*?)\n```", re.S)


def recipe(name: str) -> str:
    """The code block marked ``<!-- recipe: name -->`` in docs/production.md."""
    blocks = dict(_RECIPE.findall(DOC.read_text(encoding="utf-8")))
    assert name in blocks, f"docs/production.md has no recipe block {name!r} (found {sorted(blocks)})"
    return blocks[name]


def run_recipe(name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute recipe block ``name`` in ``namespace`` (updated in place and returned)."""
    exec(compile(recipe(name), f"{DOC}:{name}", "exec"), namespace)  # noqa: S102 - our own documentation
    return namespace


def open_store(kind: str, path: Path) -> dict[str, Any]:
    """``client`` and ``vector_store`` for ``path``, opened by the docs' own code."""
    return run_recipe(f"store-{kind}", {"persist_dir": str(path)})


# -- reading every row back, straight from the client ----------------------------------------------------------
class Row(NamedTuple):
    doc_id: str
    vector: bytes  # the vector's bytes at the stores' storage precision, float32 (Qdrant's local mode hands back
    # float64 values until the collection is reloaded from disk, then their float32 roundings)
    metadata: str  # canonical JSON of the whole stored metadata / payload (``_node_content`` included)
    text: str | None  # Chroma keeps the text beside the metadata; Qdrant inside ``_node_content``


def _float32(vector: Any) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def rows(kind: str, client: Any) -> dict[str, Row]:
    """Every row of the collection, by node id."""
    out: dict[str, Row] = {}
    if kind == "chroma":
        got = client.get_collection(COLLECTION).get(include=["embeddings", "metadatas", "documents"])
        for node_id, vector, metadata, text in zip(got["ids"], got["embeddings"], got["metadatas"], got["documents"]):
            out[node_id] = Row(metadata["ref_doc_id"], _float32(vector),
                               json.dumps(metadata, sort_keys=True), text)
        return out
    if not client.collection_exists(COLLECTION):
        return out
    offset = None
    for _ in range(1000):  # bounded: 1000 pages of 256 points
        points, offset = client.scroll(COLLECTION, limit=256, offset=offset, with_payload=True, with_vectors=True)
        for point in points:
            out[str(point.id)] = Row(point.payload["ref_doc_id"], _float32(point.vector),
                                     json.dumps(point.payload, sort_keys=True), None)
        if offset is None:
            return out
    raise AssertionError("scroll did not end")


def assert_same_rows(kind: str, got: dict[str, Row], expected: dict[str, Row]) -> None:
    """``got == expected`` across a reload: byte for byte for Chroma; for Qdrant, metadata byte for byte and vectors
    to within float32 rounding (its local mode normalizes the persisted vectors again when it loads a collection, which
    can move the last bit). Within one open client, compare rows with ``==``."""
    if kind == "chroma":
        assert got == expected
        return
    assert got.keys() == expected.keys()
    for node_id, row in got.items():
        assert row._replace(vector=b"") == expected[node_id]._replace(vector=b"")
        np.testing.assert_allclose(np.frombuffer(row.vector, np.float32),
                                   np.frombuffer(expected[node_id].vector, np.float32), rtol=0, atol=1e-6)


def node_of(row: Row) -> LocatedNode:
    """The node a row stores, rebuilt as the vector stores rebuild it (a TextNode with its offsets: asserted)."""
    return located_node(metadata_dict_to_node(json.loads(row.metadata), text=row.text))


def per_doc(table: dict[str, Row]) -> Counter[str]:
    return Counter(row.doc_id for row in table.values())


def summaries(table: dict[str, Row]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in table.values():
        out.setdefault(row.doc_id, set()).add(json.loads(row.metadata).get("document_summary"))
    return out


# -- corpus, counting summarizer, pipeline ---------------------------------------------------------------------
def corpus() -> list[Document]:
    return synthetic_contracts(n_documents=4).to_documents()  # 4 look-alike contracts, about 3,300 characters each


def amended(documents: list[Document], index: int) -> tuple[list[Document], str]:
    """``documents`` with document ``index`` shortened to its first half plus an amendment (so it has fewer chunks
    and other text); returns the new list and the new text."""
    old = documents[index]
    amendment = "AMENDMENT. The Parties agree that this Agreement ends on 31 December 2030 and that no renewal applies."
    text = old.text[: len(old.text) // 2].rstrip() + "\n\n" + amendment
    new = Document(id_=old.doc_id, text=text, metadata=dict(old.metadata),
                   excluded_embed_metadata_keys=list(old.excluded_embed_metadata_keys),
                   excluded_llm_metadata_keys=list(old.excluded_llm_metadata_keys))
    return [new if i == index else d for i, d in enumerate(documents)], text


def summary_of(text: str) -> str:
    """The counting summarizer's summary: a pure function of the document text (title + text digest)."""
    return f"{text.splitlines()[0].title()} #{hashlib.sha1(text.encode()).hexdigest()[:10]}"


class Counting(NamedTuple):
    pipeline: IngestionPipeline
    augment: SummaryAugmentationTransformation
    llm: RecordingLLM
    embed: FakeEmbedding


def counting_pipeline(vector_store: Any, strategy: DocstoreStrategy | None = DocstoreStrategy.UPSERTS,
                      **augment_kwargs: Any) -> Counting:
    """parser -> SAC (LLMSummarizer over a RecordingLLM answering ``summary_of``) -> FakeEmbedding -> store; with a
    ``SimpleDocumentStore`` and ``strategy`` unless ``strategy`` is None."""
    llm = RecordingLLM(responder=lambda prompt: summary_of(document_of(prompt)))
    summarizer = LLMSummarizer(llm=llm, retry_initial_delay=0.0, retry_max_delay=0.0)
    augment = SummaryAugmentationTransformation(summarizer=summarizer, **augment_kwargs)
    embed = FakeEmbedding()
    docstore: dict[str, Any] = {} if strategy is None else {"docstore": SimpleDocumentStore(),
                                                            "docstore_strategy": strategy}
    pipeline = IngestionPipeline(transformations=[RecursiveCharacterNodeParser(chunk_size=500), augment, embed],
                                 vector_store=vector_store, **docstore)
    return Counting(pipeline, augment, llm, embed)


# -- tests -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("include_summary_in_llm", [False, True])
@pytest.mark.parametrize("kind", STORES)
def test_sac_nodes_round_trip(kind: str, include_summary_in_llm: bool, tmp_path: Path) -> None:
    documents = corpus()
    texts = {d.doc_id: d.text for d in documents}
    opened = open_store(kind, tmp_path / "store")
    run = counting_pipeline(opened["vector_store"], strategy=None, include_summary_in_llm=include_summary_in_llm)
    nodes = located_nodes(run.pipeline.run(documents=documents))
    original = {n.node_id: n for n in nodes}
    assert len(run.llm.prompts) == run.augment.summarizer_calls == len(documents)  # one summary per document
    assert len(run.embed.texts_embedded) == len(nodes) > 2 * len(documents)

    table = rows(kind, opened["client"])
    assert set(table) == set(original)
    assert per_doc(table) == Counter(n.ref_doc_id for n in nodes)

    index = VectorStoreIndex.from_vector_store(opened["vector_store"], embed_model=run.embed)
    hits = index.as_retriever(similarity_top_k=len(nodes)).retrieve("governing law and notices")
    assert sorted(h.node.node_id for h in hits) == sorted(original)
    for hit in hits:
        node, before = located_node(hit.node), original[hit.node.node_id]
        text = texts[source_id(node)]
        assert node.text == text[node.start_char_idx: node.end_char_idx] == before.text  # exact offsets
        assert (node.start_char_idx, node.end_char_idx) == (before.start_char_idx, before.end_char_idx)
        assert node.metadata == before.metadata  # summary, bookkeeping keys, file metadata: all back, same types
        summary = summary_of(text)
        assert node.metadata["document_summary"] == summary
        assert {"summary_strategy", "summary_truncated", "summary_cut", "summary_source"} <= set(node.metadata)
        assert not {key for key in BOOKKEEPING_KEYS if key.endswith("_error")} & set(node.metadata)  # no failure
        assert node.metadata["summary_strategy"] == "single" and node.metadata["summary_truncated"] is False
        embedded = node.get_content(MetadataMode.EMBED)
        assert embedded == before.get_content(MetadataMode.EMBED)
        assert embedded == f"document_summary: {summary}\n\n{node.text}".strip()
        llm_text = node.get_content(MetadataMode.LLM)
        assert llm_text == before.get_content(MetadataMode.LLM)
        if include_summary_in_llm:
            assert llm_text == f"document_summary: {summary}\n\n{node.text}".strip()
        else:
            assert llm_text == node.text  # no metadata shown: LlamaIndex returns the chunk as is

    # one query per document with a chunk's own EMBED string: that chunk comes first (its vector is that string's)
    firsts: dict[str | None, LocatedNode] = {}
    for node in nodes:
        firsts.setdefault(node.ref_doc_id, node)
    for node in firsts.values():
        top = index.as_retriever(similarity_top_k=1).retrieve(node.get_content(MetadataMode.EMBED))
        assert [h.node.node_id for h in top] == [node.node_id] and top[0].score == pytest.approx(1.0, abs=1e-5)

    # filters on the document id, under each key LlamaIndex writes: exactly that document's chunks
    for doc_id in texts:
        expected = {n.node_id for n in nodes if n.ref_doc_id == doc_id}
        for key in ID_KEYS:
            only = MetadataFilters(filters=[MetadataFilter(key=key, value=doc_id)])
            got = index.as_retriever(similarity_top_k=len(nodes), filters=only).retrieve("confidential information")
            assert {h.node.node_id for h in got} == expected, (key, doc_id)
    opened["client"].close()


@pytest.mark.parametrize("kind", STORES)
def test_persist_and_reload(kind: str, tmp_path: Path) -> None:
    documents = corpus()
    opened = open_store(kind, tmp_path / "store")
    first = counting_pipeline(opened["vector_store"])
    nodes = first.pipeline.run(documents=documents)
    first.pipeline.persist(str(tmp_path / "pipeline"))
    before = rows(kind, opened["client"])
    assert len(before) == len(nodes)
    opened["client"].close()

    reopened = open_store(kind, tmp_path / "store")  # a new client on the same directory
    reloaded = rows(kind, reopened["client"])
    assert_same_rows(kind, reloaded, before)  # every row is back
    embed = FakeEmbedding()
    index = VectorStoreIndex.from_vector_store(reopened["vector_store"], embed_model=embed)
    texts = {d.doc_id: d.text for d in documents}
    for node in nodes[:: max(1, len(nodes) // 5)]:
        top = index.as_retriever(similarity_top_k=1).retrieve(node.get_content(MetadataMode.EMBED))
        assert [h.node.node_id for h in top] == [node.node_id]
        hit = located_node(top[0].node)
        assert hit.text == texts[source_id(hit)][hit.start_char_idx: hit.end_char_idx]
        assert hit.metadata == node.metadata

    # the same script again (new objects, docstore loaded): nothing to do, nothing touched
    again = counting_pipeline(reopened["vector_store"])
    again.pipeline.load(str(tmp_path / "pipeline"))
    assert again.pipeline.run(documents=documents) == []
    assert again.llm.prompts == [] and again.augment.summarizer_calls == 0 and again.embed.texts_embedded == []
    assert rows(kind, reopened["client"]) == reloaded  # byte for byte
    reopened["client"].close()


@pytest.mark.parametrize("kind", STORES)
def test_upserts_update_recomputes_only_the_changed_document(kind: str, tmp_path: Path) -> None:
    documents = corpus()
    opened = open_store(kind, tmp_path / "store")
    run = counting_pipeline(opened["vector_store"])
    run.pipeline.run(documents=documents)
    before = rows(kind, opened["client"])
    changed_id = documents[1].doc_id
    updated, new_text = amended(documents, 1)
    prompts, calls, embedded = len(run.llm.prompts), run.augment.summarizer_calls, len(run.embed.texts_embedded)

    out = run.pipeline.run(documents=updated)

    # re-summarised: one call, on the new full text; re-embedded: exactly its new nodes' EMBED strings
    assert [document_of(p) for p in run.llm.prompts[prompts:]] == [new_text]
    assert run.augment.summarizer_calls - calls == 1
    assert {n.ref_doc_id for n in out} == {changed_id}
    assert sorted(run.embed.texts_embedded[embedded:]) == sorted(n.get_content(MetadataMode.EMBED) for n in out)
    after = rows(kind, opened["client"])
    # the changed document: its stale rows are gone, its rows are exactly the new nodes
    assert per_doc(after)[changed_id] == len(out) < per_doc(before)[changed_id]
    assert {i for i, r in after.items() if r.doc_id == changed_id} == {n.node_id for n in out}
    for row in after.values():
        if row.doc_id == changed_id:
            node = node_of(row)
            assert node.text == new_text[node.start_char_idx: node.end_char_idx]
            assert node.metadata["document_summary"] == summary_of(new_text)
    # every other row: vector and metadata byte-identical
    others = {i: r for i, r in before.items() if r.doc_id != changed_id}
    assert {i: r for i, r in after.items() if r.doc_id != changed_id} == others
    opened["client"].close()

    # and the result is what a from-scratch ingestion of the new collection gives
    scratch = open_store(kind, tmp_path / "scratch")
    counting_pipeline(scratch["vector_store"]).pipeline.run(documents=updated)
    assert rows(kind, scratch["client"]) == after
    scratch["client"].close()


@pytest.mark.parametrize("kind", STORES)
def test_upserts_and_delete_removes_a_deleted_documents_rows(kind: str, tmp_path: Path) -> None:
    documents = corpus()
    opened = open_store(kind, tmp_path / "store")
    run = counting_pipeline(opened["vector_store"], strategy=DocstoreStrategy.UPSERTS_AND_DELETE)
    run.pipeline.run(documents=documents)
    before = rows(kind, opened["client"])
    removed = documents[2].doc_id
    assert per_doc(before)[removed] > 0
    prompts, embedded = len(run.llm.prompts), len(run.embed.texts_embedded)

    assert run.pipeline.run(documents=[d for d in documents if d.doc_id != removed]) == []

    after = rows(kind, opened["client"])
    assert per_doc(after)[removed] == 0
    assert after == {i: r for i, r in before.items() if r.doc_id != removed}  # the others untouched
    assert len(run.llm.prompts) == prompts and len(run.embed.texts_embedded) == embedded
    assert run.pipeline.docstore is not None and run.pipeline.docstore.get_document_hash(removed) is None
    opened["client"].close()


@pytest.mark.parametrize("kind", STORES)
def test_docs_recipe_update_run_with_the_extractive_summarizer(kind: str, tmp_path: Path) -> None:
    """The recipe of docs/production.md as written (default ExtractiveSummarizer): build, close, reopen, update one
    document. The incremental index must equal a from-scratch index of the new collection: summaries are a pure
    function of the document, so the unchanged documents' summaries (written by the first run) are identical to the
    ones a fresh run over the new collection writes, and so is the changed document's."""
    documents = corpus()
    changed_id = documents[1].doc_id
    updated, _ = amended(documents, 1)

    def script(docs: list[Document], store_dir: Path, pipeline_dir: Path) -> dict[str, Any]:
        namespace: dict[str, Any] = {"documents": docs, "embed_model": FakeEmbedding(),
                                     "persist_dir": str(store_dir), "pipeline_dir": str(pipeline_dir),
                                     "question": "What is the governing law of this agreement?",
                                     "doc_id": changed_id}
        run_recipe(f"store-{kind}", namespace)
        namespace["rows_on_open"] = rows(kind, namespace["client"])
        run_recipe("pipeline", namespace)
        run_recipe("query", namespace)
        run_recipe("document-aware", namespace)
        return namespace

    first = script(documents, tmp_path / "store", tmp_path / "pipeline")
    assert first["rows_on_open"] == {}
    assert len(first["hits"]) == 8 and {h.node.ref_doc_id for h in first["hits_in_contract"]} == {changed_id}
    # the document index read back from the store: every document, its summary as stored, names from its text
    doc_index = first["document_index"]
    assert sorted(doc_index.doc_ids) == sorted(d.doc_id for d in documents)
    assert doc_index.summaries == {d: s.pop() for d, s in summaries(rows(kind, first["client"])).items()}
    assert all(doc_index.names[d.doc_id] for d in documents) and len(first["hits_aware"]) == 8
    # the scores are the cosine (Qdrant) or exp(cosine - 1) (the recipe's Chroma collection is in cosine space, what
    # the document prior's weights assume; Chroma's default l2 space would give exp(2 cosine - 2))
    embed = FakeEmbedding()
    question = np.asarray(embed.get_query_embedding(first["question"]))
    for hit in first["hits"]:
        cosine = float(question @ np.asarray(embed.get_text_embedding(hit.node.get_content(MetadataMode.EMBED))))
        assert hit.score == pytest.approx(np.exp(cosine - 1) if kind == "chroma" else cosine, abs=1e-5)
    first["client"].close()

    update = script(updated, tmp_path / "store", tmp_path / "pipeline")  # the same script, a new process's objects
    initial = update["rows_on_open"]  # what the first run left on disk
    incremental = rows(kind, update["client"])
    update["client"].close()
    changed_embeds = {node_of(r).get_content(MetadataMode.EMBED) for r in incremental.values()
                      if r.doc_id == changed_id}
    assert set(update["embed_model"].texts_embedded) - {update["question"]} == changed_embeds  # only it re-embedded
    assert {i: r for i, r in incremental.items() if r.doc_id != changed_id} == {
        i: r for i, r in initial.items() if r.doc_id != changed_id}

    scratch = script(updated, tmp_path / "scratch", tmp_path / "scratch-pipeline")
    from_scratch = rows(kind, scratch["client"])
    scratch["client"].close()
    assert summaries(incremental) == summaries(from_scratch)  # every document's summary, unchanged ones included
    assert_same_rows(kind, incremental, from_scratch)  # and so every row: vectors, metadata, text


@pytest.mark.parametrize("kind", STORES)
def test_docs_recipe_reads_a_folder_and_a_touched_file_is_not_embedded_again(kind: str, tmp_path: Path) -> None:
    """The recipe's reader (step 0) and pipeline, run twice on a folder of contracts: the second run, after every
    file was touched (new modification and access dates, same bytes), embeds nothing; after one file's text changed,
    only that file's chunks."""
    import os

    folder = tmp_path / "contracts"
    folder.mkdir()
    for doc_id, text in synthetic_contracts(4).documents.items():
        (folder / Path(doc_id).name).write_text(text, encoding="utf-8")

    def script() -> dict[str, Any]:
        namespace: dict[str, Any] = {"contracts_dir": str(folder), "embed_model": FakeEmbedding(),
                                     "persist_dir": str(tmp_path / "store"), "pipeline_dir": str(tmp_path / "pl")}
        run_recipe(f"store-{kind}", namespace)
        run_recipe("read", namespace)
        run_recipe("pipeline", namespace)
        namespace["client"].close()
        return namespace

    first = script()
    assert len(first["documents"]) == 4 and first["embed_model"].texts_embedded
    assert not [k for d in first["documents"] for k in d.metadata if k.endswith("_date")]
    later = 2_000_000_000  # 2033: dates that differ from the first run's whatever the clock says
    for path in folder.iterdir():
        os.utime(path, (later, later))
    touched = script()
    assert touched["embed_model"].texts_embedded == []  # 0 re-embedded
    changed = sorted(folder.iterdir())[2]
    changed.write_text(changed.read_text(encoding="utf-8") + "\n\nAMENDMENT 1. Fees rise by 3%.", encoding="utf-8")
    edited = script()
    text = changed.read_text(encoding="utf-8")
    assert edited["embed_model"].texts_embedded and all(  # only the changed file's chunks: exact substrings of it
        t.split("\n\n", 1)[1] in text for t in edited["embed_model"].texts_embedded)
    assert {d.doc_id for d in edited["documents"]} == {d.doc_id for d in first["documents"]}


@pytest.mark.parametrize("kind", STORES)
def test_a_retriever_over_a_client_store_refuses_pickling_with_the_way_out(kind: str, tmp_path: Path) -> None:
    import pickle

    from llama_index_sac import DocumentAwareRetriever, DocumentIndex

    opened = open_store(kind, tmp_path / "store")
    counting_pipeline(opened["vector_store"]).pipeline.run(documents=corpus())
    index = VectorStoreIndex.from_vector_store(opened["vector_store"], embed_model=FakeEmbedding())
    retriever = DocumentAwareRetriever.from_defaults(index, similarity_top_k=3)
    question = retriever.document_index.summaries[retriever.document_index.doc_ids[0]]
    before = [h.node.node_id for h in retriever.retrieve(question)]
    with pytest.raises(TypeError, match=r"cannot be pickled: the store's client does not travel; pickle its "
                                        r"DocumentIndex"):
        pickle.dumps(retriever)
    documents = pickle.loads(pickle.dumps(retriever.document_index))  # the way out the message names
    assert isinstance(documents, DocumentIndex)
    again = DocumentAwareRetriever.from_defaults(opened["vector_store"], documents, embed_model=FakeEmbedding(),
                                                 similarity_top_k=3)
    assert [h.node.node_id for h in again.retrieve(question)] == before


@pytest.mark.parametrize("kind", STORES)
def test_the_clause_order_searches_the_question_in_the_real_stores(kind: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import llama_index_sac.retrievers.ranking as ranking
    from llama_index_sac import DocumentAwareRetriever, DocumentIndex

    opened = open_store(kind, tmp_path / "store")
    counting_pipeline(opened["vector_store"]).pipeline.run(documents=corpus())
    index = VectorStoreIndex.from_vector_store(opened["vector_store"], embed_model=FakeEmbedding())
    documents = DocumentIndex.from_source(index)
    parties = Path(documents.doc_ids[0]).stem.split("_")[-2:]  # ..._juniper_fairhaven: the contract's two parties
    query = (f"Consider the NDA between {parties[0].title()} and {parties[1].title()}; "
             "how long is information kept secret?")
    asked: list[str] = []
    places: list[tuple[list[Any], list[Any]]] = []
    order = ranking.order_within_documents

    def watched(ranked: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        out = order(ranked, *args, **kwargs)
        places.append(([(h.node.ref_doc_id, h.score) for h in ranked], [(h.node.ref_doc_id, h.score) for h in out]))
        return out

    monkeypatch.setattr(ranking, "order_within_documents", watched)

    class Watching(DocumentAwareRetriever):
        def _question(self, bundle: Any, prior: Any) -> Any:
            question = super()._question(bundle, prior)
            if question is not None:
                asked.append(question.query_str)
            return question

    new = Watching(index, documents, similarity_top_k=3)
    got = new.retrieve(query)
    assert asked == ["how long is information kept secret?"]  # the question without its naming phrase, searched
    assert len(places) == 1 and places[0][0] == places[0][1]  # each place keeps its document and fused score
    assert [(h.node.ref_doc_id, h.score) for h in got] == places[0][1]

    if kind == "qdrant":
        return  # the local Qdrant store opened here has no async client

    async def main() -> list[Any]:
        return await new.aretrieve(query)

    assert [(h.node.node_id, h.score) for h in asyncio.run(main())] == [(h.node.node_id, h.score) for h in got]
