"""ExtractiveSummarizer (summarizers/extractive.py) and the legal identity it leads with (type, parties, date)."""

from __future__ import annotations

import tarfile

import pytest

from llama_index_sac.summarizers import (
    ExtractiveSummarizer,
)
from llama_index_sac.summarizers.legal_identity import find_date, find_document_type, find_parties
from llama_index_sac.summarizers.legal_identity import is_privacy_text as _is_privacy_text
from tests.conftest import LEGALBENCH, requires_legalbench

# tests fit tables on a handful of texts on purpose
pytestmark = pytest.mark.filterwarnings("ignore:term statistics from only")


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
