"""Summarizers (extractive, LLM with a recording fake LLM) and the summary cache."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import tarfile
from pathlib import Path
from typing import TypedDict

import pytest
from llama_index.core import PromptTemplate

from llama_index_sac.summarizers import (
    GENERIC_SUMMARY_PROMPT,
    NDA_SUMMARY_PROMPT,
    ExtractiveSummarizer,
    LLMSummarizer,
    SummarizationError,
    SummaryCache,
    SummaryResult,
    is_transient_error,
    summary_cache_key,
)
from llama_index_sac.summarizers.base import cut_at_word_boundary, normalize_summary
from llama_index_sac.summarizers.legal_identity import find_date, find_document_type, find_parties
from llama_index_sac.summarizers.legal_identity import is_privacy_text as _is_privacy_text
from tests._summary_fakes import HTTPStatusError, RecordingLLM, document_of
from tests.conftest import LEGALBENCH, load_case, requires_legalbench


class _Fast(TypedDict):
    """LLMSummarizer keyword arguments: retries without waiting (seconds)."""

    retry_initial_delay: float
    retry_max_delay: float


FAST: _Fast = {"retry_initial_delay": 0.0, "retry_max_delay": 0.0}

# tests fit tables on a handful of texts on purpose
pytestmark = pytest.mark.filterwarnings("ignore:term statistics from only")


# -- helpers ---------------------------------------------------------------------------------------------------
def test_cut_at_word_boundary_and_normalize() -> None:
    assert cut_at_word_boundary("alpha beta gamma", 11) == "alpha beta"
    assert cut_at_word_boundary("alpha beta gamma", 100) == "alpha beta gamma"
    assert cut_at_word_boundary("abcdefghij", 4) == "abcd"  # one long word: the limit wins
    assert normalize_summary('  Summary:  "An NDA\nbetween A and B."  ') == "An NDA between A and B."
    with pytest.raises(ValueError):
        cut_at_word_boundary("x", 0)


# -- cache -----------------------------------------------------------------------------------------------------
def test_cache_key_is_unambiguous_and_ignores_doc_id() -> None:
    ident = {"class": "X", "max_chars": 150}
    # plain concatenation would give "ab" + "c" == "a" + "bc"; the structured encoding does not
    assert summary_cache_key("ab", ident, {"k": "c"}) != summary_cache_key("a", ident, {"k": "bc"})
    assert summary_cache_key("text", ident, {"a": "b", "c": ""}) != summary_cache_key("text", ident, {"a": "b\"c"})
    assert summary_cache_key("t", {"p": "a", "q": "b"}) != summary_cache_key("t", {"p": "a\", \"q\": \"b"})
    assert summary_cache_key("t", ident) == summary_cache_key("t", dict(reversed(list(ident.items()))))
    assert summary_cache_key("t", ident) != summary_cache_key("t", {**ident, "max_chars": 300})
    assert len(summary_cache_key("t", ident)) == 64


def test_cache_roundtrip_and_corrupt_entries(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = SummaryCache(tmp_path / "c")
    key = summary_cache_key("doc", {"class": "X"})
    assert cache.get(key) is None
    result = SummaryResult("An NDA.", "single", truncated=False, cut=True, llm_calls=3)
    path = cache.put(key, result)
    got = cache.get(key)
    assert got == SummaryResult("An NDA.", "single", truncated=False, cut=True, llm_calls=0)
    assert key in cache and len(cache) == 1
    # truncated entry (a crashed writer of an older version), garbage, wrong key: all are misses, logged
    for bad in (path.read_bytes()[:20], b"\xff\xfe garbage", json.dumps({"format": 1, "key": "0" * 64}).encode()):
        path.write_bytes(bad)
        with caplog.at_level("WARNING"):
            assert cache.get(key) is None
        assert "corrupt" in caplog.text
    cache.put(key, result)  # the next write repairs it
    assert cache.get(key) is not None
    assert not list(path.parent.glob("*.tmp"))  # no temporary files left behind
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def _writer(directory: str, worker: int, n: int) -> None:
    cache = SummaryCache(directory)
    for i in range(n):
        key = summary_cache_key(f"doc {i}", {"class": "X"})
        cache.put(key, SummaryResult(f"summary {i}", "single"))
        got = cache.get(key)
        assert got is not None and got.summary == f"summary {i}", (worker, i)


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_cache_is_safe_under_concurrent_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = SummaryCache(tmp_path)
    assert len(cache) == 40
    for i in range(40):
        got = cache.get(summary_cache_key(f"doc {i}", {"class": "X"}))
        assert got is not None and got.summary == f"summary {i}"


# -- extractive ------------------------------------------------------------------------------------------------
NDA = (
    "Exhibit 10.4\n\nCONFIDENTIAL TREATMENT REQUESTED\n\nMUTUAL NON-DISCLOSURE AGREEMENT\n\nThis Mutual Non-Disclosure "
    "Agreement is made as of March 3, 2021 by and between Kestrel Analytics, Inc., a Delaware corporation "
    "(\"Kestrel\"), and Marlow Biotech Ltd., a company registered in England and Wales (\"Marlow\"). "
    "WHEREAS the parties wish to evaluate a genomics collaboration. Kestrel shall protect sequencing data. "
)
LEASE = (
    "COMMERCIAL LEASE AGREEMENT\n\nThis Lease is entered into on June 1, 2019 between Alder Properties LLC and "
    "Birchwood Bakery Corp. The Tenant shall pay rent for the bakery premises and keep the ovens insured. "
)


def test_extractive_finds_type_parties_date_behind_cover_page() -> None:
    assert find_document_type(NDA) == "Mutual Non-Disclosure Agreement"
    assert find_parties(NDA) == ["Kestrel Analytics, Inc.", "Marlow Biotech Ltd."]
    assert find_date(NDA) == "March 3, 2021"
    assert find_document_type("AGREEMENT AND PLAN OF MERGER\nby and among") == "Agreement and Plan of Merger"
    assert find_parties(
        "AGREEMENT AND PLAN OF MERGER by and among SKY PARENT INC. PROJECT SKY MERGER SUB INC. and CLOUDERA, INC. "
        "Dated as of June 1, 2021"
    ) == ["SKY Parent Inc.", "Cloudera, Inc.", "Project SKY Merger Sub Inc."]  # acronyms; the target first


def test_parties_drop_repeats_and_put_the_target_before_the_deal_vehicles() -> None:
    # a regression: the summary kept the parent and its merger subs and dropped the target, or named a party twice
    merger = ("AGREEMENT AND PLAN OF MERGER\n\nby and among\n\nCANADIAN PACIFIC RAILWAY LIMITED,\n\nCYGNUS MERGER SUB "
              "1 CORPORATION,\n\nCYGNUS MERGER SUB 2 CORPORATION\n\nand\n\nKANSAS CITY SOUTHERN\n\nDated as of "
              "September 15, 2021")
    assert find_parties(merger) == ["Canadian Pacific Railway Limited", "Kansas City Southern",
                                    "Cygnus Merger Sub 1 Corporation"]  # a name may begin with a state
    assert find_parties(merger, max_parties=8) == [
        "Canadian Pacific Railway Limited", "Kansas City Southern", "Cygnus Merger Sub 1 Corporation",
        "Cygnus Merger Sub 2 Corporation"]
    repeated = ("AGREEMENT AND PLAN OF MERGER among AstraZeneca PLC, Delta Omega Sub Holdings Inc., Delta Omega Sub "
                "Holdings Inc. and Alexion Pharmaceuticals, Inc. Dated as of December 12, 2020")
    assert find_parties(repeated) == ["AstraZeneca PLC", "Alexion Pharmaceuticals, Inc.",
                                      "Delta Omega Sub Holdings Inc."]
    # affiliates of an earlier party (same first word) come after the other principals
    assert find_parties("MERGER AGREEMENT among Lake Holdings, LP, Lake Guarantor, LLC, Lake Merger Sub I, Inc. "
                        "and Pluralsight, Inc. Dated March 7, 2021") == [
        "Lake Holdings, LP", "Pluralsight, Inc.", "Lake Guarantor, LLC"]
    # two suffixes; a place word opening a name is kept; "Inc., Company" is not one name
    assert find_parties("SUPPLY AGREEMENT between Nanjing Tuniu Technology Co., Ltd. and COUNTY BANCORP, INC. "
                        "Dated May 1, 2020") == ["Nanjing Tuniu Technology Co., Ltd.", "County Bancorp, Inc."]
    assert find_parties("This Agreement is made between Acme Inc., Company and Beta Corp. Dated May 1, 2020.")[0] \
        == "Acme Inc."
    # the merger summary names the buyer and the target within 150 characters
    summary = ExtractiveSummarizer(max_chars=150).summarize(merger).summary
    assert "Kansas City Southern" in summary and "Canadian Pacific Railway Limited" in summary


def test_extractive_summary_is_contrastive_deterministic_and_bounded() -> None:
    corpus = [NDA, LEASE, NDA.replace("genomics", "robotics").replace("Kestrel", "Osprey")]
    summarizer = ExtractiveSummarizer(max_chars=150).fit(corpus)
    result = summarizer.summarize(NDA)
    assert result.strategy == "extractive" and result.llm_calls == 0
    assert result.summary.startswith(
        "Mutual Non-Disclosure Agreement between Kestrel Analytics, Inc. and Marlow Biotech Ltd."
    )
    assert len(result.summary) <= 150
    lease = summarizer.summarize(LEASE).summary
    assert lease.startswith("Commercial Lease Agreement between Alder Properties LLC and Birchwood Bakery Corp.")
    assert "genomics" in ExtractiveSummarizer(max_chars=300).fit(corpus).summarize(NDA).summary
    again = ExtractiveSummarizer(max_chars=150).fit(list(reversed(corpus)))
    assert again.summarize(NDA) == result  # order of the corpus does not matter
    assert again.identity() == summarizer.identity()
    other = ExtractiveSummarizer(max_chars=150).fit(corpus[:2])
    assert other.identity()["term_statistics"] != summarizer.identity()["term_statistics"]
    for limit in (20, 60, 90):
        assert len(ExtractiveSummarizer(max_chars=limit).fit(corpus).summarize(NDA).summary) <= limit


def test_extractive_needs_no_fit_and_folds_metadata() -> None:
    shipped = ExtractiveSummarizer().summarize(NDA).summary  # the shipped table: no fit needed
    assert shipped.startswith("Mutual Non-Disclosure Agreement between Kestrel Analytics, Inc. and Marlow Biotech")
    with pytest.raises(ValueError):
        ExtractiveSummarizer().fit(["", "  "])
    plain = ExtractiveSummarizer(metadata_keys=[]).fit([NDA, LEASE])
    assert plain.summarize(NDA, {"file_name": "x.txt"}).summary == plain.summarize(NDA).summary  # content-only
    folded = ExtractiveSummarizer(metadata_keys=["file_name"]).fit([NDA, LEASE])
    summary = folded.summarize(NDA, {"file_name": "/data/contracts/kestrel_marlow%20nda.txt"}).summary
    assert summary.startswith("kestrel marlow nda. Mutual Non-Disclosure Agreement")
    assert plain.summarize("   ").strategy == "empty"
    with pytest.raises(TypeError):
        plain.summarize(b"bytes")  # type: ignore[arg-type]


def test_extractive_plural_exhibit_cover_line_and_privacy_density() -> None:
    # "Exhibits 2.1" (plural, as in LegalBench-RAG's PRA Health Sciences merger agreement) is cover-page noise too
    merger = (
        "\ufeffExhibits 2.1 AGREEMENT AND PLAN OF MERGER \n\n\nby and among \n\n\nICON PLC \n\n\n"
        "ICON US HOLDINGS INC. \n\n\nINDIGO MERGER SUB, INC. \n\n\nand \n\n\nPRA HEALTH SCIENCES, INC. \n\n\n"
        "Dated as of February 24, 2021 \n\n\nTABLE OF CONTENTS\n"
    )
    assert find_document_type(merger) == "Agreement and Plan of Merger"
    # a text whose title is missed is a privacy policy only when privacy vocabulary is dense: 8 mentions in 1,885
    # characters (42 per 10,000) is; 4 in 3,764 (10.6 per 10,000: a contract's privacy clause) is not
    clause = "The Reseller shall comply with privacy laws and protect personal information of customers. "
    filler = "The Reseller shall pay the fees within thirty days of invoice and keep accurate records. " * 40
    dense = "Terms for resellers\n\n" + clause * 4 + filler[:1500]
    sparse = "Terms for resellers\n\n" + clause * 2 + filler + "\n"
    summarizer = ExtractiveSummarizer().fit([dense, sparse, NDA, LEASE])
    assert summarizer.summarize(dense).summary.startswith("Privacy policy")
    assert summarizer.summarize(sparse).summary.startswith("Document")
    # the boundary: 12 mentions per 10,000 characters is privacy text, one character more is not
    at_limit = "privacy " * 12 + "x" * (10_000 - 96)
    assert _is_privacy_text(at_limit) and not _is_privacy_text(at_limit + "x")
    assert not _is_privacy_text("privacy personal data")  # 2 mentions: never, however short


@requires_legalbench
def test_extractive_on_real_legalbench_documents() -> None:
    wanted = {
        "cuad/ALCOSTORESINC_12_14_2005-EX-10.26-AGENCY AGREEMENT.txt":
            ("Agency Agreement", ["General Electric Capital Corporation", "Duckwall-Alco Stores, Inc."]),
        "maud/Adamas_Pharmaceuticals_Supernus_Pharmaceuticals.txt":
            ("Agreement and Plan of Merger", ["Adamas Pharmaceuticals, Inc.", "Supernus Pharmaceuticals, Inc."]),
        "contractnli/ExcelerateStandardNDAFormat.txt": ("Non-Disclosure Agreement", ["Excelerate"]),
        "privacy_qa/Fiverr.txt": ("Privacy policy", ["Fiverr"]),
        "cuad/BICYCLETHERAPEUTICSPLC_03_10_2020-EX-10.11-SERVICE AGREEMENT.txt":
            ("Service Agreement", ["Nigel Crockett"]),
    }
    texts: dict[str, str] = {}
    with tarfile.open(LEGALBENCH / "corpus.tar.xz") as tar:
        for member in tar:
            name = member.name.split("corpus/", 1)[-1]
            if name in wanted or (member.isfile() and len(texts) < 40 and name.endswith(".txt")):
                handle = tar.extractfile(member)
                assert handle is not None
                texts[name] = handle.read().decode("utf-8")
            if all(w in texts for w in wanted) and len(texts) >= 40:
                break
    summarizer = ExtractiveSummarizer(max_chars=150).fit(texts.values())
    summaries = {name: summarizer.summarize(texts[name]).summary for name in texts}
    for name, (doc_type, parties) in wanted.items():
        summary = summaries[name]
        assert summary.startswith(doc_type), summary
        for party in parties:
            assert party in summary, (party, summary)
        assert len(summary) <= 150
    assert len(set(summaries.values())) == len(summaries)  # every document gets its own fingerprint


# -- LLM summarizer --------------------------------------------------------------------------------------------
def test_llm_summarizer_prompt_and_single_call() -> None:
    llm = RecordingLLM(script=["Summary: Mutual NDA between Kestrel and Marlow on genomics data."])
    summarizer = LLMSummarizer(llm=llm)
    result = summarizer.summarize(NDA)
    assert result == SummaryResult("Mutual NDA between Kestrel and Marlow on genomics data.", "single", llm_calls=1)
    assert len(llm.prompts) == 1
    assert "at most 150 characters" in llm.prompts[0] and document_of(llm.prompts[0]) == NDA
    assert summarizer.summarize("") == SummaryResult("", "empty") and len(llm.prompts) == 1  # no call


def test_llm_summarizer_expert_prompts_and_identity() -> None:
    llm = RecordingLLM()
    generic = LLMSummarizer(llm=llm)
    nda = LLMSummarizer.expert_nda(llm)
    privacy = LLMSummarizer.expert_privacy_policy(llm)
    merger = LLMSummarizer.expert_merger_agreement(llm)
    commercial = LLMSummarizer.expert_commercial_contract(llm, max_chars=250)
    assert nda.max_chars == 300 and nda.prompt is NDA_SUMMARY_PROMPT
    assert "privacy policy" in privacy.prompt.get_template()
    assert merger.max_chars == 300 and "merger agreement" in merger.prompt.get_template()
    assert commercial.max_chars == 250 and "commercial contracts" in commercial.prompt.get_template()
    hashes = {generic.identity_hash(), nda.identity_hash(), privacy.identity_hash(), merger.identity_hash(),
              commercial.identity_hash(), LLMSummarizer(llm=llm, max_chars=100).identity_hash(),
              LLMSummarizer(llm=RecordingLLM(model_name="other")).identity_hash()}
    assert len(hashes) == 7
    assert generic.identity()["prompt"] == GENERIC_SUMMARY_PROMPT.get_template()
    assert LLMSummarizer(llm=llm, max_retries=9, timeout=1).identity() == generic.identity()  # not output-relevant
    with pytest.raises(ValueError, match="metadata"):
        LLMSummarizer(llm=llm, metadata_keys=["title"], prompt=GENERIC_SUMMARY_PROMPT.__class__(
            "Summarize {document} in {max_chars} characters."))
    with pytest.raises(ValueError, match="document"):
        LLMSummarizer(llm=llm, prompt=GENERIC_SUMMARY_PROMPT.__class__("Summarize in {max_chars} characters."))


def test_llm_summarizer_folds_the_identity_metadata_unless_told_otherwise() -> None:
    llm = RecordingLLM()
    LLMSummarizer(llm=llm, metadata_keys=[]).summarize(NDA, {"title": "Kestrel NDA"})
    LLMSummarizer(llm=llm).summarize(NDA, {"title": "Kestrel NDA", "file_name": "a/nda_kestrel.txt", "x": "y"})
    assert "Kestrel NDA" not in llm.prompts[0]
    assert "Document metadata: file_name: nda kestrel; title: Kestrel NDA\n\n" in llm.prompts[1]
    no_slot = LLMSummarizer(llm=llm, prompt=PromptTemplate("{document} in {max_chars}"))  # cannot show metadata
    assert no_slot.metadata_keys == [] and no_slot.identity()["metadata_keys"] == []
    with pytest.raises(ValueError, match="no {metadata} variable"):
        LLMSummarizer(llm=llm, metadata_keys=["title"], prompt=PromptTemplate("{document} in {max_chars}"))


def test_llm_length_control_retry_then_cut() -> None:
    long = "Mutual NDA between Kestrel Analytics and Marlow Biotech " + "covering data " * 20
    llm = RecordingLLM(script=[long, "Mutual NDA, Kestrel and Marlow."])
    result = LLMSummarizer(llm=llm, max_chars=50).summarize(NDA)
    assert result.summary == "Mutual NDA, Kestrel and Marlow." and not result.cut and result.llm_calls == 2
    assert "Shorten the following summary to at most 50 characters" in llm.prompts[1]
    llm = RecordingLLM(script=[long, long])
    result = LLMSummarizer(llm=llm, max_chars=50, length_tolerance=0.2).summarize(NDA)
    assert result.cut and len(result.summary) <= 60 and long.startswith(result.summary)
    llm = RecordingLLM(script=["", "  "])
    with pytest.raises(SummarizationError, match="empty"):
        LLMSummarizer(llm=llm).summarize(NDA)


def test_llm_map_reduce_reads_every_window() -> None:
    case = load_case("18")
    text = case["input"]["text"]
    llm = RecordingLLM(responder=lambda p: f"{document_of(p)[:60]} .. {document_of(p)[-60:]}")
    window = case["params"]["summarizer_max_input_chars"]
    result = LLMSummarizer(llm=llm, max_input_chars=window, max_chars=150).summarize(text)
    assert result.strategy == "map_reduce" and not result.truncated
    maps = [document_of(p) for p in llm.prompts if p.startswith("You are an expert legal summarizer. Below is one")]
    assert "".join(maps) == text  # the windows tile the document: every character was read
    assert all(len(m) <= window for m in maps)
    assert len(llm.prompts) == len(maps) + 1 + (result.llm_calls - len(maps) - 1)
    assert result.llm_calls == len(llm.prompts) and len(maps) == 3
    assert case["input"]["late_fact"][:50] in "".join(maps)


def test_llm_head_tail_is_flagged_truncated() -> None:
    text = load_case("18")["input"]["text"]
    llm = RecordingLLM()
    result = LLMSummarizer(llm=llm, max_input_chars=2000, long_document="head_tail").summarize(text)
    assert result.strategy == "head_tail" and result.truncated and result.llm_calls == 1
    doc = document_of(llm.prompts[0])
    assert len(doc) <= 2000 and doc.startswith(text[:100]) and doc.endswith(text[-100:]) and "[...]" in doc


def test_llm_retries_transient_errors_with_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float) -> None:
        sleeps.append(delay)
        await real_sleep(0)

    monkeypatch.setattr("llama_index_sac.summarizers.llm.asyncio.sleep", fake_sleep)
    llm = RecordingLLM(script=[HTTPStatusError(429), TimeoutError("slow"), ConnectionError("reset"), "An NDA."])
    result = LLMSummarizer(llm=llm, max_retries=3, retry_initial_delay=0.5, retry_max_delay=1.5).summarize(NDA)
    assert result.summary == "An NDA." and result.llm_calls == 4
    assert sleeps == [0.5, 1.0, 1.5]  # exponential, capped
    llm = RecordingLLM(script=[HTTPStatusError(500)] * 3)
    with pytest.raises(SummarizationError, match="after 3 attempt") as info:
        LLMSummarizer(llm=llm, max_retries=2, **FAST).summarize(NDA)
    assert isinstance(info.value.__cause__, HTTPStatusError) and info.value.attempts == 3
    llm = RecordingLLM(script=[HTTPStatusError(400), "never"])
    with pytest.raises(SummarizationError, match="non-transient"):
        LLMSummarizer(llm=llm, max_retries=5, **FAST).summarize(NDA)
    assert len(llm.prompts) == 1  # a client error is not retried


def test_llm_timeout_is_transient() -> None:
    llm = RecordingLLM(delay=0.5)
    with pytest.raises(SummarizationError, match="TimeoutError"):
        LLMSummarizer(llm=llm, timeout=0.05, max_retries=1, **FAST).summarize(NDA)
    assert len(llm.prompts) == 0  # both attempts were cut before the fake answered


@pytest.mark.parametrize(
    ("exc", "transient"),
    [(TimeoutError(), True), (ConnectionResetError(), True), (HTTPStatusError(429), True),
     (HTTPStatusError(503), True), (HTTPStatusError(404), False), (ValueError("bad"), False),
     (type("APIConnectionError", (Exception,), {})(), True), (type("RateLimitError", (Exception,), {})(), True)],
)
def test_is_transient_error(exc: BaseException, transient: bool) -> None:
    assert is_transient_error(exc) is transient
