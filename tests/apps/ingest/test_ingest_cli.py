"""``llama-sac ingest`` / ``llama-sac query`` into REAL vector stores: Chroma (embedded, on disk)
and Qdrant (local mode, on disk), each test in its own temporary directory.

The Python function behind the command (:func:`llama_index_sac.apps.ingest.run.ingest`) is run with a deterministic
counting embedding (``FakeEmbedding``: every embedded text is recorded) into each store and queried back; the command
itself is run end to end with the real offline MiniLM model once, and for its errors. What ``ingest`` reads and
refuses is in ``test_run.py``, what a run writes into the store in ``test_writer.py``; the helpers here (contracts,
a store's rows) are shared by the ingest tests.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from llama_index.core.schema import MetadataMode
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from typer.testing import CliRunner

from llama_index_sac import RecursiveCharacterNodeParser, SummaryAugmentationTransformation
from llama_index_sac.apps.benchmark.datasets import synthetic_contracts
from llama_index_sac.apps.ingest.files import RECORD_DIR, StoreSpec
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest, query
from llama_index_sac.apps.ingest.steps import build_steps, fingerprint, settings_from_options
from llama_index_sac.apps.ingest.walk import find_files
from llama_index_sac.settings import RecursiveParserSettings
from llama_index_sac.summarizers import ExtractiveSummarizer
from tests.conftest import FakeEmbedding

_MISSING = "the 'vectorstores' extra is not installed (pip install -e '.[vectorstores]'; scripts/setup.sh does it)"
chromadb = pytest.importorskip("chromadb", reason=_MISSING)
qdrant_client = pytest.importorskip("qdrant_client", reason=_MISSING)
pytest.importorskip("llama_index.vector_stores.chroma", reason=_MISSING)
pytest.importorskip("llama_index.vector_stores.qdrant", reason=_MISSING)

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

STORES = ["chroma", "qdrant"]
COLLECTION = "llama-sac"  # IngestSettings' default
runner = CliRunner()


# -- helpers -------------------------------------------------------------------------------------------------------
def write_contracts(folder: Path, n: int = 8) -> dict[str, str]:
    """The built-in contracts as .txt files in ``folder``; ``{document id: text}``, the id being the folder's name
    and the file's (so ``folder.parent / id`` is the file)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for doc_id, text in synthetic_contracts(n).documents.items():
        path = folder / Path(doc_id).name
        path.write_text(text, encoding="utf-8")
        out[f"{folder.name}/{path.name}"] = text
    return out


class Row(NamedTuple):
    doc_id: str
    vector: np.ndarray
    metadata: str  # canonical JSON of the stored metadata / payload (``_node_content`` included)
    text: str | None  # Chroma keeps the chunk text beside the metadata; Qdrant inside ``_node_content``


def rows(spec: str, collection: str = COLLECTION) -> dict[str, Row]:
    """Every row of the collection, by node id, read straight from the store's own client."""
    store = StoreSpec.parse(spec)
    out: dict[str, Row] = {}
    if store.kind == "chroma":
        client = chromadb.PersistentClient(path=str(store.path), settings=chromadb.Settings(anonymized_telemetry=False))
        try:
            got = client.get_collection(collection).get(include=["embeddings", "metadatas", "documents"])
        finally:
            client.close()
        for node_id, vector, metadata, text in zip(got["ids"], got["embeddings"], got["metadatas"], got["documents"]):
            out[node_id] = Row(metadata["ref_doc_id"], np.asarray(vector, np.float32),
                               json.dumps(metadata, sort_keys=True), text)
        return out
    client = qdrant_client.QdrantClient(path=str(store.path))
    try:
        offset = None
        for _ in range(1000):  # bounded: 1000 pages of 256 points
            points, offset = client.scroll(collection, limit=256, offset=offset, with_payload=True, with_vectors=True)
            for point in points:
                out[str(point.id)] = Row(point.payload["ref_doc_id"], np.asarray(point.vector, np.float32),
                                         json.dumps(point.payload, sort_keys=True), None)
            if offset is None:
                return out
    finally:
        client.close()
    raise AssertionError("scroll did not end")


def same_rows(got: dict[str, Row], expected: dict[str, Row]) -> bool:
    """Same ids, documents and metadata; vectors equal to float32 rounding (Qdrant re-normalizes on load)."""
    return got.keys() == expected.keys() and all(
        got[i].doc_id == expected[i].doc_id and got[i].metadata == expected[i].metadata
        and got[i].text == expected[i].text and np.allclose(got[i].vector, expected[i].vector, rtol=0, atol=1e-6)
        for i in got)


def per_doc(table: dict[str, Row]) -> Counter[str]:
    return Counter(row.doc_id for row in table.values())


def node_of(row: Row) -> Any:
    return metadata_dict_to_node(json.loads(row.metadata), text=row.text)


def settings(**kw: Any) -> IngestSettings:
    return IngestSettings(show_progress=False, **kw)


# -- the Python function with a counting embedding -------------------------------------------------------------------
@pytest.mark.parametrize("kind", STORES)
def test_ingest_writes_sac_rows_and_query_reads_them(kind: str, tmp_path: Path) -> None:
    texts = write_contracts(tmp_path / "docs")
    spec = f"{kind}:{tmp_path / 'store'}"
    embed = FakeEmbedding()
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=embed)

    assert (report.new, report.changed, report.unchanged, report.removed) == (8, 0, 0, 0)
    assert report.summaries == 8 and not report.skipped and not report.failed
    table = rows(spec)
    assert set(per_doc(table)) == set(texts)  # one document per file, its id the folder's name and its path in it
    assert report.chunks_written == len(table) == len(embed.texts_embedded) > 2 * len(texts)
    summarizer = ExtractiveSummarizer()  # the CLI's default: the shipped term table, the file name folded in
    embedded = set()
    for row in table.values():
        node = node_of(row)
        text = texts[row.doc_id]
        assert node.text == text[node.start_char_idx: node.end_char_idx]  # exact offsets into the file's text
        summary = summarizer.summarize(text, {"file_name": Path(row.doc_id).name}).summary  # the file name first
        assert summary.startswith(Path(row.doc_id).stem.replace("_", " ") + ". ")
        assert node.metadata["document_summary"] == summary
        assert node.metadata["file_path"] == row.doc_id and node.metadata["file_name"] == Path(row.doc_id).name
        assert "last_accessed_date" not in node.metadata  # dates would make every file "changed" (docstore hash)
        assert node.get_content(MetadataMode.EMBED) == f"document_summary: {summary}\n\n{node.text}".strip()
        embedded.add(node.get_content(MetadataMode.EMBED))
    assert embedded == set(embed.texts_embedded)
    chunk_size = RecursiveCharacterNodeParser.model_fields["chunk_size"].default  # the parser's own default
    assert max(len(node_of(r).text) for r in table.values()) <= chunk_size == 500

    # query: the chunk whose EMBED string is the question comes first, with its document, offsets and summary
    target = node_of(next(iter(table.values())))
    hits = query(target.get_content(MetadataMode.EMBED), spec, k=3, embed_model=FakeEmbedding())
    assert len(hits) == 3
    assert (hits[0].doc_id, hits[0].start, hits[0].end) == (target.ref_doc_id, target.start_char_idx,
                                                            target.end_char_idx)
    assert hits[0].summary == target.metadata["document_summary"] and hits[0].text == target.text
    assert hits[0].score is not None and hits[1].score is not None and hits[2].score is not None
    assert hits[0].score >= hits[1].score >= hits[2].score


def test_find_files_rules(tmp_path: Path) -> None:
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "a" / ".git").mkdir()
    for name in ("a/x.txt", "a/deep/y.MD", "a/.git/z.txt", "a/w.csv", "solo.txt"):
        (tmp_path / name).write_text("t", encoding="utf-8")
    files, folders = find_files([tmp_path / "a", tmp_path / "solo.txt", tmp_path / "a" / "x.txt"], (".txt", ".md"))
    assert files == sorted([tmp_path / "a" / "x.txt", tmp_path / "a" / "deep" / "y.MD", tmp_path / "solo.txt"])
    assert folders == [tmp_path / "a"]
    with pytest.raises(IngestError, match="nope: no such file or folder"):
        find_files([tmp_path / "nope"], (".txt",))


@pytest.mark.parametrize(("options", "message"), [
    ({"summarizer": "llm"}, "--summarizer llm needs --llm"),
    ({"llm": "m.gguf"}, "--llm applies to the llm summarizer, not extractive"),
    ({"llm_api_base": "http://h/v1"}, "--llm-api-base applies to the llm summarizer, not extractive"),
    ({"summarizer": "llm", "llm": "/nonexistent/m.gguf"}, "--llm: GGUF model not found: /nonexistent/m.gguf"),
    ({"workers": 2}, "--workers needs --engine ray"),
    ({"collection": "a/b"}, "--collection: 'a/b' is not a valid collection name"),
    ({"chunk_size": 0}, "--chunk-size: Input should be greater than 0"),
    ({"batch_documents": 0}, "--batch-documents: Input should be greater than or equal to 1"),
    ({"parser": "semantic", "chunk_size": 300}, "--chunk-size applies to the recursive and hybrid parsers, not "
     "semantic"),
    ({"parser": "fancy"}, "--parser: Input tag 'fancy' found using 'kind' does not match any of the expected tags"),
])
def test_settings_errors_name_the_options(options: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """The ingest options are validated by the library's settings models (the components' own fields and rules);
    each problem is said in terms of the option."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(IngestError) as caught:
        settings_from_options(**options)
    assert message in str(caught.value)


def test_settings_nest_the_library_models() -> None:
    from llama_index_sac.settings import ExtractiveSummarizerSettings, HybridParserSettings

    default = IngestSettings()
    assert default.parser == RecursiveParserSettings() and default.summarizer == ExtractiveSummarizerSettings()
    assert IngestSettings.model_validate({"parser": "hybrid"}).parser == HybridParserSettings()
    assert IngestSettings.model_validate({"parser": {"chunk_size": 300}}).parser == RecursiveParserSettings(
        chunk_size=300)
    assert settings_from_options(parser="hybrid", chunk_size=10).parser == HybridParserSettings(chunk_size=10)
    with pytest.raises(ValueError, match="chunk_overlap \\(400\\) must be smaller than chunk_size \\(300\\)"):
        IngestSettings.model_validate({"parser": {"chunk_size": 300, "chunk_overlap": 400}})


# -- the command, end to end (real MiniLM) ---------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_ingest_and_query_with_the_default_model(tmp_path: Path) -> None:
    from llama_index_sac.apps.cli import app

    write_contracts(tmp_path / "docs", 4)
    (tmp_path / "docs" / "bad.txt").write_bytes(b"\xff")
    store = f"chroma:{tmp_path / 'store'}"
    result = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--vector-store", store, "--no-progress"])
    assert result.exit_code == 1, result.output  # completed, one file skipped
    assert f"warning: skipped {tmp_path / 'docs' / 'bad.txt'}: not UTF-8 text" in result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(f"ingested into {store} (collection llama-sac, engine local): documents 4 new, 0 changed, "
                           "0 unchanged, 0 removed, 1 unreadable file(s) skipped; ") and " chunks written in " in last
    (tmp_path / "docs" / "bad.txt").unlink()
    result = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--vector-store", store, "--no-progress"])
    assert result.exit_code == 0 and "documents 0 new, 0 changed, 4 unchanged, 0 removed; 0 chunks" in result.stdout

    result = runner.invoke(app, ["query", "Which law governs the agreement?", "--vector-store", store, "--k", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line[:3] for line in lines if not line.startswith(" ")] == ["1. ", "2. "]
    assert sum(line.startswith("   summary: ") for line in lines) == 2 and "characters " in lines[0]
    assert "  docs/" in lines[0]  # the document id: the folder's label and the file's path in it
    result = runner.invoke(app, ["query", "Which law governs the agreement?", "--vector-store", store, "--k", "2",
                                 "--document-aware"])
    assert result.exit_code == 0 and result.stdout.startswith("1. score "), result.output


def test_summary_metadata_reaches_the_summarizer_and_the_model_bounds_the_summaries() -> None:
    embed = FakeEmbedding()
    default = build_steps(settings(), embed, None)[-1]
    assert isinstance(default, SummaryAugmentationTransformation)
    assert default.summarizer.metadata_keys == ["file_name", "title"] and default.embed_model is embed
    content_only = build_steps(settings_from_options(summary_metadata=[], progress=False), embed, None)[-1]
    assert isinstance(content_only, SummaryAugmentationTransformation) and content_only.summarizer.metadata_keys == []
    assert fingerprint([*build_steps(settings(), embed, None)[:-1], content_only], embed) != fingerprint(
        build_steps(settings(), embed, None), embed)  # another collection's settings


@pytest.mark.parametrize(("args", "message"), [
    (["ingest", "{tmp}/nope", "--vector-store", "chroma:{tmp}/store"], "{tmp}/nope: no such file or folder"),
    (["ingest", "{tmp}/docs", "--vector-store", "pinecone:{tmp}/store"],
     "--vector-store: expected chroma:DIR, qdrant:DIR or chroma-http://HOST:PORT, got 'pinecone:{tmp}/store'"),
    (["ingest", "{tmp}/docs", "--vector-store", "chroma:"],
     "--vector-store: expected chroma:DIR, qdrant:DIR or chroma-http"),
    (["ingest", "{tmp}/docs", "--vector-store", "qdrant:{tmp}/docs/c.txt"], "is not a directory"),
    (["ingest", "{tmp}/docs"], "missing option '--vector-store'"),
    (["ingest", "{tmp}/docs", "--vector-store", "chroma:{tmp}/store", "--engine", "spark"],
     "invalid value for '--engine': 'spark' is not one of 'local', 'ray'"),
    (["ingest", "{tmp}/docs", "--vector-store", "chroma:{tmp}/store", "--summarizer", "llm"],
     "--summarizer llm needs --llm"),
    (["ingest", "{tmp}/docs", "--vector-store", "chroma:{tmp}/store", "--collection", "x"],
     "--collection: 'x' is not a valid collection name"),
    (["query", "law", "--vector-store", "chroma:{tmp}/store"], "--vector-store: {tmp}/store does not exist"),
    (["query", " ", "--vector-store", "chroma:{tmp}/store"], "the question is empty"),
])
def test_cli_bad_input_is_one_error_line(tmp_path: Path, args: list[str], message: str) -> None:
    from llama_index_sac.apps.cli import app

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "c.txt").write_text("A contract.", encoding="utf-8")
    result = runner.invoke(app, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message.format(tmp=tmp_path) in errors[0], result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "store").exists()
    assert not list((tmp_path / "docs").glob(RECORD_DIR))


def test_the_last_line_counts_one_chunk_in_the_singular() -> None:
    from llama_index_sac.apps.ingest.run import IngestReport

    report = IngestReport(store="chroma:/s", collection="llama-sac", engine="local", new=1, chunks_written=1)
    assert report.line() == ("chroma:/s (collection llama-sac, engine local): documents 1 new, 0 changed, 0 unchanged, "
                             "0 removed; 1 chunk written in 0.0 s")
    report.chunks_written = 2
    assert report.line().endswith("; 2 chunks written in 0.0 s")
