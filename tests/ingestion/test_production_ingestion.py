"""Production ingestion: summaries are a function of the document whatever the ingestion path; failed
summaries come back by running the same pipeline again; cache faults are per-document faults."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import textwrap
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

import pytest
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import BaseNode, Document, MetadataMode
from llama_index.core.storage.docstore import SimpleDocumentStore

from llama_index_sac import (
    ExtractiveSummarizer,
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
    SummaryResult,
    synthetic_contracts,
)
from llama_index_sac.ingestion.pipeline import (
    SACIngestionPipeline,
    SettingsChangedWarning,
    SummaryFailureWarning,
    failed_documents,
)
from llama_index_sac.summarizers.base import BaseSummarizer
from llama_index_sac.summarizers.cache import (
    CacheReadWarning,
    CacheWriteWarning,
    SummaryCache,
    SummaryCacheError,
    summary_cache_key,
)
from llama_index_sac.vector_stores.numpy_store import NumpyVectorStore
from tests.conftest import LEGALBENCH, FakeEmbedding, requires_legalbench

REPO = Path(__file__).resolve().parents[2]


class FlakySummarizer(BaseSummarizer):
    """Deterministic summary; fails for texts containing one of ``fail_on`` while ``<state_dir>/down`` exists.
    Every call (success or failure) leaves a file in ``<state_dir>/calls``: counts survive worker processes."""

    state_dir: str
    fail_on: list[str] = []

    @classmethod
    def class_name(cls) -> str:
        return "FlakySummarizer"

    def _summarize(self, text: str, metadata: dict[str, str]) -> SummaryResult:
        calls = Path(self.state_dir) / "calls"
        calls.mkdir(parents=True, exist_ok=True)
        (calls / uuid.uuid4().hex).write_text(text[:40])
        if (Path(self.state_dir) / "down").exists() and any(f in text for f in self.fail_on):
            raise ConnectionError("summary service down")
        return SummaryResult(summary="Summary: " + " ".join(text.split()[:6]), strategy="single")


def calls(state: Path) -> int:
    folder = state / "calls"
    return len(list(folder.iterdir())) if folder.is_dir() else 0


class ConstantEmbedding(FakeEmbedding):
    """Cheap embedding for paths that only need a vector to reach the vector store."""

    @classmethod
    def class_name(cls) -> str:
        return "ConstantEmbedding"

    def _vector(self, text: str) -> list[float]:
        return [1.0] + [0.0] * (self.dim - 1)


def corpus_documents() -> list[Document]:
    return synthetic_contracts().to_documents()


# -- 1. one summary per document, whatever the path ------------------------------------------------------------
def _by_node(nodes: Sequence[BaseNode]) -> dict[str, tuple[str, str]]:
    return {n.node_id: (n.metadata["document_summary"], n.get_content(metadata_mode=MetadataMode.EMBED))
            for n in nodes}


def _five_paths(documents: list[Document], chunk_size: int) -> dict[str, dict[str, tuple[str, str]]]:
    def transformations() -> list[Any]:
        return [RecursiveCharacterNodeParser(chunk_size=chunk_size), SummaryAugmentationTransformation()]

    fresh = [Document(text=d.text, id_=d.id_, metadata=dict(d.metadata)) for d in documents]
    out = {"plain": _by_node(IngestionPipeline(transformations=transformations()).run(documents=fresh))}
    out["num_workers=2"] = _by_node(IngestionPipeline(transformations=transformations()).run(
        documents=[Document(text=d.text, id_=d.id_, metadata=dict(d.metadata)) for d in documents], num_workers=2))
    out["arun"] = _by_node(asyncio.run(IngestionPipeline(transformations=transformations()).arun(
        documents=[Document(text=d.text, id_=d.id_, metadata=dict(d.metadata)) for d in documents])))
    pipeline = IngestionPipeline(transformations=[*transformations(), ConstantEmbedding()],
                                 docstore=SimpleDocumentStore(), vector_store=NumpyVectorStore())
    one_by_one: dict[str, tuple[str, str]] = {}
    for doc in documents:  # docstore upserts, one document per run
        one_by_one.update(_by_node(pipeline.run(documents=[Document(text=doc.text, id_=doc.id_,
                                                                    metadata=dict(doc.metadata))])))
    out["one at a time (upserts)"] = one_by_one
    parser, sac = transformations()
    restored = pickle.loads(pickle.dumps(sac))
    out["pickled"] = _by_node(restored(parser([Document(text=d.text, id_=d.id_, metadata=dict(d.metadata))
                                                       for d in documents])))
    return out


def _assert_identical(paths: dict[str, dict[str, tuple[str, str]]]) -> None:
    reference = paths["plain"]
    assert reference
    for name, result in paths.items():
        assert result.keys() == reference.keys(), name
        differing = [node_id for node_id in reference if result[node_id] != reference[node_id]]
        assert differing == [], (name, len(differing))


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_five_ingestion_paths_give_identical_summaries_on_the_builtin_corpus() -> None:
    _assert_identical(_five_paths(corpus_documents(), chunk_size=500))


@requires_legalbench
def test_five_ingestion_paths_give_identical_summaries_on_the_mini_corpus() -> None:
    from llama_index_sac import load_legalbenchrag

    documents = load_legalbenchrag(LEGALBENCH, ["contractnli", "cuad", "maud", "privacy_qa"]).to_documents()
    assert len(documents) == 72
    _assert_identical(_five_paths(documents, chunk_size=20000))  # large chunks: the summaries are what is tested


def test_a_document_alone_or_in_a_batch_gets_the_same_summary() -> None:
    documents = corpus_documents()
    summarizer = ExtractiveSummarizer()
    batch = SummaryAugmentationTransformation(summarizer=summarizer)(
        [Document(text=d.text, id_=d.id_) for d in documents])
    for doc, node in zip(documents, batch):
        alone = SummaryAugmentationTransformation()([Document(text=doc.text, id_=doc.id_)])[0]
        assert alone.metadata["document_summary"] == node.metadata["document_summary"]


# -- 2. failures recover by running again ----------------------------------------------------------------------
def _pipeline(state: Path, cache_dir: Path | None, cls: type = IngestionPipeline, **kwargs: Any) -> Any:
    sac = SummaryAugmentationTransformation(
        summarizer=FlakySummarizer(state_dir=str(state), fail_on=["Party 3"]),
        on_error="skip", cache_dir=str(cache_dir) if cache_dir else None,
    )
    return cls(transformations=[RecursiveCharacterNodeParser(chunk_size=200), sac], **kwargs)


def _documents() -> list[Document]:
    return [Document(text=f"This Agreement is made by Party {i}. " + "Clause text. " * 40, id_=f"doc-{i}")
            for i in range(6)]


def _check_recovered(nodes: list[Any]) -> None:
    assert failed_documents(nodes) == {}
    assert all(n.metadata["document_summary"].startswith("Summary: This Agreement") for n in nodes)


def test_a_failed_summary_recovers_through_the_default_ingestion_cache_same_object(tmp_path: Path) -> None:
    (tmp_path / "down").touch()
    pipeline = _pipeline(tmp_path, None)
    first = pipeline.run(documents=_documents())
    assert set(failed_documents(first)) == {"doc-3"} and calls(tmp_path) == 6
    (tmp_path / "down").unlink()
    second = pipeline.run(documents=_documents())
    assert calls(tmp_path) == 7  # exactly the failed document
    _check_recovered(second)
    pipeline.run(documents=_documents())
    assert calls(tmp_path) == 7  # and then the ingestion cache serves the good output


def test_a_failed_summary_recovers_after_persist_and_load(tmp_path: Path) -> None:
    state, cache_dir, persist = tmp_path / "state", tmp_path / "summaries", tmp_path / "pipeline"
    (state / "calls").mkdir(parents=True)
    (state / "down").touch()
    first = _pipeline(state, cache_dir)
    assert set(failed_documents(first.run(documents=_documents()))) == {"doc-3"}
    first.persist(str(persist))
    (state / "down").unlink()
    again = _pipeline(state, cache_dir)  # a new process would build the same pipeline and load the cache
    again.load(str(persist))
    _check_recovered(again.run(documents=_documents()))
    assert calls(state) == 7


def _rows(store: NumpyVectorStore) -> dict[str, tuple[list[float], dict[str, Any]]]:
    """Node id -> (vector, metadata) of every row of ``store`` (each row has its vector: asserted)."""
    rows: dict[str, tuple[list[float], dict[str, Any]]] = {}
    for n in store.get_nodes():
        assert n.embedding is not None, n.node_id
        rows[n.node_id] = (list(n.embedding), dict(n.metadata))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("num_workers", [None, 2])
def test_a_failed_summary_recovers_with_a_docstore_and_vector_store(tmp_path: Path, num_workers: int | None) -> None:
    (tmp_path / "down").touch()
    embed = FakeEmbedding()
    store = NumpyVectorStore()
    pipeline = _pipeline(tmp_path, tmp_path / "summaries", SACIngestionPipeline, docstore=SimpleDocumentStore(),
                         vector_store=store)
    pipeline.transformations.append(embed)
    with pytest.warns(SummaryFailureWarning, match="doc-3"):
        first = pipeline.run(documents=_documents(), num_workers=num_workers)
    assert set(failed_documents(first)) == {"doc-3"}
    assert pipeline.docstore.get_document_hash("doc-3") is None  # not recorded as done
    assert not any(n.ref_doc_id == "doc-3" for n in store.get_nodes())  # no row without its summary
    rows_before = _rows(store)
    embedded_before = len(embed.texts_embedded)
    (tmp_path / "down").unlink()
    second = pipeline.run(documents=_documents(), num_workers=num_workers)
    assert calls(tmp_path) == 7  # six first, then exactly the failed one
    assert {n.ref_doc_id for n in second} == {"doc-3"}
    if num_workers is None:  # (workers embed with their own copies of the model)
        assert len(embed.texts_embedded) - embedded_before == len(second)  # only the recovered document
    _check_recovered(second)
    assert len(store.get_nodes()) == len(rows_before) + len(second)
    after = _rows(store)
    assert {k: v for k, v in after.items() if k in rows_before} == rows_before  # other rows untouched
    assert pipeline.run(documents=_documents(), num_workers=num_workers) == []  # nothing left to do


def test_failed_documents_lists_errors_and_checks_its_input() -> None:
    node = Document(text="x", id_="d1", metadata={"summary_error": "ConnectionError: down"})
    assert failed_documents([node, Document(text="y", id_="d2")]) == {"d1": "ConnectionError: down"}
    with pytest.raises(TypeError, match="LlamaIndex nodes"):
        failed_documents(["not a node"])  # type: ignore[list-item]


# -- 3. cache faults are per-document faults -------------------------------------------------------------------
def _sac(
    state: Path, cache_dir: Path, on_error: Literal["raise", "skip"] = "skip"
) -> SummaryAugmentationTransformation:
    return SummaryAugmentationTransformation(summarizer=FlakySummarizer(state_dir=str(state)), on_error=on_error,
                                             cache_dir=str(cache_dir))


def test_cache_location_under_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(SummaryCacheError, match="cannot be used"):
        _sac(tmp_path, blocker / "cache", on_error="raise")(_documents())
    assert calls(tmp_path) == 0  # refused before any summary
    with pytest.warns(CacheWriteWarning, match="6 summaries could not be stored"):
        out = _sac(tmp_path, blocker / "cache")(_documents())
    assert all(n.metadata["document_summary"] and n.metadata["summary_cache_error"] for n in out)


def test_hits_are_served_and_unwritable_entries_reported(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    warm = _documents()[:3]
    _sac(tmp_path, cache_dir)(warm)
    assert calls(tmp_path) == 3
    cache = SummaryCache(cache_dir)
    identity = FlakySummarizer(state_dir=str(tmp_path)).identity()
    for doc in _documents()[3:]:  # where these entries' folders should be, a file: their writes fail
        folder = cache.path_for(summary_cache_key(doc.text, identity)).parent
        if not folder.exists():
            folder.write_text("in the way")
    with pytest.warns(CacheWriteWarning):
        out = _sac(tmp_path, cache_dir)(_documents())
    assert calls(tmp_path) == 6  # three hits served, three computed
    reported = {n.ref_doc_id or n.node_id for n in out if "summary_cache_error" in n.metadata}
    assert reported <= {"doc-3", "doc-4", "doc-5"} and reported
    assert all(n.metadata.get("document_summary") for n in out)


def test_an_empty_cached_summary_is_a_miss(tmp_path: Path) -> None:
    doc = _documents()[0]
    cache = SummaryCache(tmp_path / "cache")
    key = summary_cache_key(doc.text, FlakySummarizer(state_dir=str(tmp_path)).identity())
    cache.put(key, SummaryResult(summary="", strategy="single"))
    assert cache.get(key) is None
    with pytest.warns(CacheReadWarning, match="1 summary-cache entries .* were unusable"):
        out = _sac(tmp_path, tmp_path / "cache")([doc])
    assert calls(tmp_path) == 1 and out[0].metadata["document_summary"].startswith("Summary:")


@pytest.mark.slow
def test_a_full_disk_is_a_per_document_fault(tmp_path: Path) -> None:
    """RLIMIT_FSIZE stands in for a full disk (writes fail with EFBIG), in a child process."""
    script = textwrap.dedent(f"""
        import json, resource, signal, sys, warnings
        sys.path.insert(0, {str(REPO)!r})
        from llama_index.core.schema import Document
        from llama_index_sac import SummaryAugmentationTransformation, ExtractiveSummarizer
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        docs = [Document(text=f"This Agreement is made by Party {{i}}. " + "Clause text. " * 40, id_=f"d{{i}}")
                for i in range(3)]
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, resource.RLIM_INFINITY))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = SummaryAugmentationTransformation(on_error="skip", cache_dir={str(tmp_path / 'c')!r})(docs)
        print(json.dumps([[n.metadata.get("document_summary", ""), n.metadata.get("summary_cache_error", "")]
                          for n in out] + [[str(w.category.__name__) for w in caught]]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    *rows, categories = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(summary and "File too large" in error for summary, error in rows)
    assert "CacheWriteWarning" in categories


def test_a_settings_change_on_an_existing_index_is_reported(tmp_path: Path) -> None:
    def pipeline(chunk_size: int) -> SACIngestionPipeline:
        return SACIngestionPipeline(
            transformations=[RecursiveCharacterNodeParser(chunk_size=chunk_size), SummaryAugmentationTransformation(),
                             ConstantEmbedding()],
            docstore=SimpleDocumentStore(), vector_store=NumpyVectorStore(),
            documents=None, readers=None)  # IngestionPipeline's defaults, spelled out for mypy (see the report)

    first = pipeline(200)
    assert first.run(documents=_documents())
    first.persist(str(tmp_path))
    same = pipeline(200)
    same.load(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same settings: silent
        assert same.run(documents=_documents()) == []
    changed = pipeline(300)
    changed.load(str(tmp_path))
    for _ in range(2):  # every run says so until the index is rebuilt
        with pytest.warns(SettingsChangedWarning, match="Rebuild the index"):
            assert changed.run(documents=_documents()) == []


def test_cache_dir_takes_a_path(tmp_path: Path) -> None:
    # a Path on purpose: the validator takes it; the field's type is the str it stores
    sac = SummaryAugmentationTransformation(cache_dir=cast(str, tmp_path / "summaries"))
    assert sac.cache_dir == str(tmp_path / "summaries") and sac.cache is not None
