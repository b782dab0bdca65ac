"""SummaryAugmentationTransformation: placements, EMBED rendering, limits, errors, cache."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from llama_index.core import Settings
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.ingestion.pipeline import get_transformation_hash
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document, MetadataMode, TextNode

from llama_index_sac import (
    ExtractiveSummarizer,
    LLMSummarizer,
    RecursiveCharacterNodeParser,
    SummarizationError,
    SummaryAugmentationTransformation,
)
from llama_index_sac.augmentation.transformation import EmbedLimitWarning, markdown_table_header
from llama_index_sac.summarizers import SummaryCache
from tests._nodes import located_nodes, source_id, text_nodes
from tests._summary_fakes import HTTPStatusError, RecordingLLM, document_of
from tests.conftest import load_case

FAST = {"retry_initial_delay": 0.0, "retry_max_delay": 0.0}

NDA = (
    "MUTUAL NON-DISCLOSURE AGREEMENT\n\nThis Agreement is made by and between Kestrel Analytics, Inc., a Delaware "
    "corporation, and Marlow Biotech Ltd. 1. Confidential Information means genomics data disclosed by either "
    "party. 2. The Recipient shall not disclose it. 3. This Agreement lasts three years. 4. Delaware law governs. "
) * 3
LEASE = (
    "COMMERCIAL LEASE AGREEMENT\n\nThis Lease is entered into between Alder Properties LLC and Birchwood Bakery "
    "Corp. 1. The Tenant shall pay rent monthly. 2. The Tenant keeps the ovens insured. 3. Delaware law governs. "
) * 3


def docs() -> list[Document]:
    return [Document(text=NDA, id_="nda", metadata={"file_name": "nda.txt"}),
            Document(text=LEASE, id_="lease", metadata={"file_name": "lease.txt"})]


def fake_summarizer(llm: RecordingLLM, **kwargs: object) -> LLMSummarizer:
    return LLMSummarizer(llm=llm, **{**FAST, **kwargs})  # type: ignore[arg-type]


def summary_by_doc(prompt: str) -> str:
    return "Summary of the NDA." if "Kestrel" in document_of(prompt) else "Summary of the lease."


# -- after the parser ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("parser", [RecursiveCharacterNodeParser(chunk_size=120),
                                    SentenceSplitter(chunk_size=60, chunk_overlap=0)])
def test_after_parser_one_call_per_document_and_exact_offsets(parser: object) -> None:
    documents = docs()
    nodes = parser(documents)  # type: ignore[operator]
    llm = RecordingLLM(responder=summary_by_doc)
    transform = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))
    out = transform(nodes, documents=documents)
    assert len(llm.prompts) == 2 and transform.summarizer_calls == 2  # one per document, never per chunk
    assert sorted(document_of(p) for p in llm.prompts) == sorted([NDA, LEASE])  # the FULL text
    texts = {d.doc_id: d.text for d in documents}
    for node in located_nodes(out):
        source = source_id(node)
        assert texts[source][node.start_char_idx: node.end_char_idx] == node.text  # P-OFFSET untouched
        summary = "Summary of the NDA." if source == "nda" else "Summary of the lease."
        assert node.metadata["document_summary"] == summary
        embedded = node.get_content(MetadataMode.EMBED)
        assert embedded == f"document_summary: {summary}\n\n{node.text}".strip()  # summary first, no file_name
        assert "document_summary" not in node.get_content(MetadataMode.LLM)
        assert node.metadata["file_name"] in ("nda.txt", "lease.txt")  # still in metadata
        assert node.metadata["summary_strategy"] == "single" and node.metadata["summary_source"] == "document"


def test_after_parser_reconstructs_text_from_offsets() -> None:
    documents = docs()
    nodes = RecursiveCharacterNodeParser(chunk_size=120)(documents)
    llm = RecordingLLM(responder=summary_by_doc)
    out = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))(nodes)  # no documents given
    assert sorted(document_of(p) for p in llm.prompts) == sorted([NDA, LEASE])  # our chunks tile the text
    assert {n.metadata["summary_source"] for n in out} == {"chunks"}  # exact: every character covered
    # a gap becomes spaces (offsets stay valid); a node without offsets is refused with a clear error
    a = TextNode(text="Alpha", start_char_idx=0, end_char_idx=5)
    b = TextNode(text="Beta", start_char_idx=8, end_char_idx=12)
    for n in (a, b):
        n.relationships[__import__("llama_index.core.schema").core.schema.NodeRelationship.SOURCE] = \
            Document(text="x", id_="d").as_related_node_info()
    llm = RecordingLLM()
    SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))([a, b])
    assert document_of(llm.prompts[0]) == "Alpha   Beta"
    b.start_char_idx = None
    with pytest.raises(ValueError, match="no exact offsets"):
        SummaryAugmentationTransformation(summarizer=fake_summarizer(RecordingLLM()))([a, b])
    b.start_char_idx, b.end_char_idx, b.text = 3, 7, "XXXX"  # overlaps "Alpha" with other characters
    with pytest.raises(ValueError, match="disagrees"):
        SummaryAugmentationTransformation(summarizer=fake_summarizer(RecordingLLM()))([a, b])


def test_metadata_aware_mode_keeps_other_keys_in_embed() -> None:
    nodes = RecursiveCharacterNodeParser(chunk_size=500)(docs())
    out = SummaryAugmentationTransformation(summarizer=fake_summarizer(RecordingLLM(responder=summary_by_doc)),
                                            embed_other_metadata=True, include_summary_in_llm=True)(nodes)
    embedded = out[0].get_content(MetadataMode.EMBED)
    assert embedded.startswith("document_summary: Summary of the NDA.\nfile_name: nda.txt\n\n")
    assert "Summary of the NDA." in out[0].get_content(MetadataMode.LLM)
    assert "summary_strategy" not in embedded


# -- before the parser -----------------------------------------------------------------------------------------
def test_before_parser_with_our_parser_keeps_content_budget() -> None:
    llm = RecordingLLM(responder=lambda p: "S" * 140)
    documents = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))(docs())
    assert len(llm.prompts) == 2
    nodes = text_nodes(RecursiveCharacterNodeParser(chunk_size=100)(documents))
    assert all(len(n.text) <= 100 for n in nodes)  # the summary does not eat the 100 content characters
    assert max(len(n.text) for n in nodes) > 80
    assert all(n.metadata["document_summary"] == "S" * 140 for n in nodes)
    assert all(n.get_content(MetadataMode.EMBED).startswith("document_summary: " + "S" * 140) for n in nodes)


def test_before_parser_with_sentence_splitter_keeps_the_metadata_out_of_the_budget() -> None:
    llm = RecordingLLM(responder=lambda p: "Mutual NDA between Kestrel Analytics and Marlow Biotech.")
    documents = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))(docs())
    nodes = SentenceSplitter(chunk_size=80, chunk_overlap=0)(documents)
    assert all(n.metadata["document_summary"] for n in nodes)
    for n in nodes:  # metadata-aware sizing: chunk_size bounds summary + chunk (documented)
        assert n.get_content(MetadataMode.NONE) in NDA + LEASE
    # case 02: a summary longer than SentenceSplitter's chunk_size -> LlamaIndex's clear ValueError ...
    long_llm = RecordingLLM(responder=lambda p: "word " * 60)
    documents = SummaryAugmentationTransformation(summarizer=fake_summarizer(long_llm, max_chars=400))(docs())
    with pytest.raises(ValueError, match="Metadata length"):
        SentenceSplitter(chunk_size=40, chunk_overlap=0)(documents)
    # ... and the documented fix: place the transformation after the splitter
    nodes = SentenceSplitter(chunk_size=40, chunk_overlap=0)(docs())
    transform = SummaryAugmentationTransformation(summarizer=fake_summarizer(long_llm, max_chars=400))
    out = transform(nodes, documents=docs())
    assert all(n.metadata["document_summary"].startswith("word word") for n in out)


def test_excluded_metadata_is_not_embedded() -> None:
    variant = load_case("02")["input"]["variant_a"]
    doc = Document(text=variant["text"], metadata=variant["metadata"],
                   excluded_embed_metadata_keys=variant["excluded_embed_metadata_keys"],
                   excluded_llm_metadata_keys=variant["excluded_llm_metadata_keys"])
    nodes = RecursiveCharacterNodeParser(chunk_size=300)([doc])
    out = SummaryAugmentationTransformation()(nodes, documents=[doc])
    for node in located_nodes(out):
        assert "Reviewer note" not in node.get_content(MetadataMode.EMBED)
        assert "Reviewer note" not in node.get_content(MetadataMode.LLM)
        assert node.metadata["reviewer_notes"].startswith("Reviewer note")
        assert doc.text[node.start_char_idx: node.end_char_idx] == node.text


# -- case 03: embedding input limit ----------------------------------------------------------------------------
def test_embed_limit_warns_or_raises_never_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    case = load_case("03")
    text, summary = case["input"]["text"], case["input"]["summary"]
    doc = Document(text=text, id_="c03")
    llm = RecordingLLM(responder=lambda p: summary)
    prefix = len("document_summary: ") + len(summary) + len("\n\n")
    # a budget that reserves room for the summary: every embedded string fits the limit
    nodes = RecursiveCharacterNodeParser(chunk_size=400 - prefix)([doc])
    transform = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_chars=200), embed_limit=400,
                                                  on_embed_overflow="raise")
    out = text_nodes(transform(nodes, documents=[doc]))
    assert all(len(n.get_content(MetadataMode.EMBED)) <= 400 for n in out)
    assert "".join(n.text for n in out) == text  # P-LOSSLESS on the un-augmented text
    assert len({n.metadata["document_summary"] for n in out}) == 1
    # chunk_size == embed_limit: summary + chunk overflow -> one warning, chunks intact; or ValueError
    nodes = RecursiveCharacterNodeParser(chunk_size=400)([doc])
    with pytest.warns(EmbedLimitWarning, match="exceed embed_limit=400"):
        out = text_nodes(SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_chars=200),
                                                           embed_limit=400, on_embed_overflow="warn")(
            nodes, documents=[doc]))
    assert "".join(n.text for n in out) == text
    nodes = RecursiveCharacterNodeParser(chunk_size=180)([doc])
    with pytest.raises(ValueError, match="summary alone leaves no room"):
        SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_chars=200), embed_limit=180,
                                          on_embed_overflow="raise")(nodes, documents=[doc])
    monkeypatch.setattr(Settings, "_embed_model", None)  # no limit, no model: one warning that nothing is fitted
    with pytest.warns(EmbedLimitWarning, match="not fitted to an embedding model's input limit") as record:
        SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_chars=200))(nodes, documents=[doc])
    assert len(record) == 1


# -- case 08: blank documents ----------------------------------------------------------------------------------
def test_blank_documents_get_no_call() -> None:
    blank = [Document(text=t) for t in load_case("08")["input"]["blank_docs"]]
    llm = RecordingLLM()
    out = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))(blank)
    assert llm.prompts == [] and all(d.metadata["summary_strategy"] == "empty" for d in out)
    assert all("document_summary" not in d.metadata for d in out)
    assert RecursiveCharacterNodeParser(chunk_size=30)(out) == []
    extractive = SummaryAugmentationTransformation()
    assert isinstance(extractive.summarizer, ExtractiveSummarizer)
    assert extractive(list(blank)) and extractive.summarizer.term_statistics is None  # nothing fitted, no error


# -- case 15: markdown table header ----------------------------------------------------------------------------
def test_table_header_in_embed_prefix() -> None:
    case = load_case("15")
    text = case["input"]["text"]
    header = "\n".join(case["input"]["header_rows"])
    doc = Document(text=text, id_="fees")
    nodes = RecursiveCharacterNodeParser(chunk_size=250)([doc])
    out = located_nodes(SummaryAugmentationTransformation()(nodes, documents=[doc]))
    for row in case["input"]["row_spans"]:
        assert any(n.start_char_idx <= row[0] and row[1] <= n.end_char_idx for n in out)  # no row cut
    data_rows = case["input"]["row_spans"][2:]
    for node in out:
        assert text[node.start_char_idx: node.end_char_idx] == node.text
        holds_rows = any(node.start_char_idx < e and s < node.end_char_idx for s, e in data_rows)
        if holds_rows and header not in node.text:
            assert node.metadata["table_header"] == header
            assert f"table_header: {header}\n\n{node.text}".strip() in node.get_content(MetadataMode.EMBED)
        else:
            assert "table_header" not in node.metadata
    assert any("table_header" in n.metadata for n in out)
    assert markdown_table_header(text, 0, 20) is None and markdown_table_header("no table", 0, 5) is None


def test_embed_limit_warning_points_at_the_pipeline_run_line() -> None:
    doc = Document(text="Rent is due on the first day of each month. " * 8, id_="d")
    llm = RecordingLLM(responder=lambda p: "Lease between A and B.")  # chunks (88) too long alone for 80
    augment = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm), embed_limit=80)
    pipeline = IngestionPipeline(transformations=[RecursiveCharacterNodeParser(chunk_size=100), augment])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        pipeline.run(documents=[doc])
    hits = [w for w in record if issubclass(w.category, EmbedLimitWarning)]
    assert [(w.filename, w.lineno) for w in hits] == [(__file__, line)]  # the user's line, not the library's


# -- case 17: determinism --------------------------------------------------------------------------------------
def _run_determinism() -> str:
    case = load_case("17")
    nodes = RecursiveCharacterNodeParser(chunk_size=60)([Document(text=case["input"]["text"], id_="d17")])
    out = text_nodes(SummaryAugmentationTransformation()(nodes))
    return repr([(n.node_id, n.text, n.start_char_idx, n.get_content(MetadataMode.EMBED)) for n in out])


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_deterministic_across_processes() -> None:
    load_case("17")  # skips here, not inside the subprocesses, when ../shared is absent
    code = "from tests.augmentation.test_augmentation import _run_determinism; print(_run_determinism())"
    repo = Path(__file__).resolve().parents[2]
    outs = {
        subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}).stdout
        for seed in ("0", "123")
    }
    assert len(outs) == 1 and _run_determinism() + "\n" in outs


# -- case 18: overlong document --------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["map_reduce", "head_tail"])
def test_every_chunk_gets_a_summary(strategy: str) -> None:
    case = load_case("18")
    doc = Document(text=case["input"]["text"], id_="licence")
    nodes = RecursiveCharacterNodeParser(chunk_size=500)([doc])
    llm = RecordingLLM(responder=lambda p: f"{document_of(p)[:60]} .. {document_of(p)[-60:]}")
    summarizer = fake_summarizer(llm, max_input_chars=2000, long_document=strategy, max_chars=150)
    out = SummaryAugmentationTransformation(summarizer=summarizer)(nodes, documents=[doc])
    assert all(n.metadata["document_summary"] for n in out)
    assert {n.metadata["summary_strategy"] for n in out} == {strategy}
    assert {n.metadata["summary_truncated"] for n in out} == {strategy == "head_tail"}
    calls = len(llm.prompts)
    assert calls == (1 if strategy == "head_tail" else 3 + 1)  # per window (+ reduce), never per chunk
    assert calls < len(out)


# -- errors, retries, concurrency, cache -----------------------------------------------------------------------
def test_errors_raise_or_are_recorded_per_document(tmp_path: Path) -> None:
    nodes = RecursiveCharacterNodeParser(chunk_size=200)(docs())

    def flaky(prompt: str) -> str:
        if "Kestrel" in document_of(prompt):
            raise HTTPStatusError(503)
        return "Summary of the lease."

    transform = SummaryAugmentationTransformation(summarizer=fake_summarizer(RecordingLLM(responder=flaky),
                                                                             max_retries=2),
                                                  cache_dir=str(tmp_path), num_workers=1)
    with pytest.raises(SummarizationError, match="'nda'") as info:
        transform(nodes, documents=docs())
    assert info.value.doc_id == "nda"
    assert len(SummaryCache(tmp_path)) == 1  # the lease completed before the NDA gave up: it is kept
    llm = RecordingLLM(responder=flaky)
    skip = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_retries=2), on_error="skip",
                                             cache_dir=str(tmp_path))
    out = skip(nodes, documents=docs())
    assert len(llm.prompts) == 3  # 1 + 2 retries for the NDA; the lease comes from the cache
    for node in out:
        if source_id(node) == "nda":
            assert "HTTPStatusError: HTTP 503" in node.metadata["summary_error"]
            assert "document_summary" not in node.metadata  # no silent substitute
            assert "summary_error" not in node.get_content(MetadataMode.EMBED)
        else:
            assert node.metadata["document_summary"] == "Summary of the lease."
    assert len(SummaryCache(tmp_path)) == 1  # the completed summary is kept, the error is not cached


def test_second_run_makes_zero_calls_and_ids_do_not_matter(tmp_path: Path) -> None:
    llm = RecordingLLM(responder=summary_by_doc)
    make = lambda: SummaryAugmentationTransformation(summarizer=fake_summarizer(llm),  # noqa: E731
                                                     cache_dir=str(tmp_path))
    first = make()(RecursiveCharacterNodeParser(chunk_size=200)(docs()), documents=docs())
    assert len(llm.prompts) == 2
    renamed = [Document(text=NDA, id_="other-id", metadata={"file_name": "nda.txt"}),
               Document(text=LEASE, id_="x", metadata={"file_name": "lease.txt"})]  # same file names, other ids
    second = make()
    again = second(RecursiveCharacterNodeParser(chunk_size=200)(renamed), documents=renamed)
    assert len(llm.prompts) == 2 and second.summarizer_calls == 0
    assert [n.metadata["document_summary"] for n in again] == [n.metadata["document_summary"] for n in first]
    other = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_chars=99), cache_dir=str(tmp_path))
    other(RecursiveCharacterNodeParser(chunk_size=200)(docs()), documents=docs())
    assert len(llm.prompts) == 4  # another max_chars is another key


def test_bounded_concurrency_and_async_path() -> None:
    documents = [Document(text=f"Contract number {i} between Party{i} Inc. and Other{i} LLC.", id_=f"d{i}")
                 for i in range(8)]
    llm = RecordingLLM(delay=0.05)
    transform = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm), num_workers=3)
    out = asyncio.run(transform.acall(RecursiveCharacterNodeParser(chunk_size=500)(documents),
                                      documents=documents))
    assert len(llm.prompts) == 8 and llm.peak_concurrency == 3
    assert all(n.metadata["document_summary"].startswith("Summary ") for n in out)
    llm1 = RecordingLLM(delay=0.01)
    SummaryAugmentationTransformation(summarizer=fake_summarizer(llm1), num_workers=1)(
        RecursiveCharacterNodeParser(chunk_size=500)(documents), documents=documents)
    assert llm1.peak_concurrency == 1


def test_ingestion_pipeline_and_cache_key_include_summarizer_identity() -> None:
    llm = RecordingLLM(responder=summary_by_doc)
    pipeline = IngestionPipeline(transformations=[
        RecursiveCharacterNodeParser(chunk_size=200),
        SummaryAugmentationTransformation(summarizer=fake_summarizer(llm)),
    ])
    nodes = pipeline.run(documents=docs())
    assert len(llm.prompts) == 2 and all("document_summary" in n.metadata for n in nodes)
    pipeline.run(documents=docs())
    assert len(llm.prompts) == 2  # LlamaIndex's ingestion cache: no second call
    base = SummaryAugmentationTransformation(summarizer=fake_summarizer(llm))
    hashes = {
        get_transformation_hash(nodes, t) for t in (
            base,
            SummaryAugmentationTransformation(summarizer=fake_summarizer(llm, max_chars=300)),
            SummaryAugmentationTransformation(summarizer=fake_summarizer(RecordingLLM(model_name="m2"))),
            SummaryAugmentationTransformation(summarizer=LLMSummarizer.expert_nda(llm)),
            SummaryAugmentationTransformation(summarizer=ExtractiveSummarizer()),
        )
    }
    assert len(hashes) == 5
    assert SummaryAugmentationTransformation.class_name() == "SummaryAugmentationTransformation"
    assert base.to_dict()["summarizer_identity"]["llm"]["model"] == "recording-fake"


def test_extractive_default_uses_the_shipped_table_and_fits_nothing() -> None:
    transform = SummaryAugmentationTransformation()
    out = transform(RecursiveCharacterNodeParser(chunk_size=200)(docs()), documents=docs())
    assert isinstance(transform.summarizer, ExtractiveSummarizer)
    assert transform.summarizer.term_statistics is None  # nothing fitted on the call's documents
    assert transform.to_dict()["summarizer_identity"]["term_statistics"]["name"] == "legal-terms-v1"
    nda = {n.metadata["document_summary"] for n in out if source_id(n) == "nda"}
    assert nda == {next(iter(nda))} and next(iter(nda)).startswith(  # the file name first (identity metadata)
        "nda. Mutual Non-Disclosure Agreement between Kestrel Analytics, Inc. and Marlow Biotech Ltd.")
    assert {n.metadata["summary_strategy"] for n in out} == {"extractive"}
