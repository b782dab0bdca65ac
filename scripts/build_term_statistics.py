"""Build the term-statistics table shipped with the package (``legal-terms-v1``) from the LegalBench-RAG corpus.

    python scripts/build_term_statistics.py ../shared/data/legalbenchrag/corpus.tar.xz \
        llama_index_sac/summarizers/data/legal-terms-v1.json.gz

Reads every ``corpus/**.txt`` member of the archive as UTF-8 (nothing is unpacked), counts in how many documents each
term occurs (``TermStatistics.from_texts``, the summarizer's 30,000-character term sample) and keeps the terms of at
least two documents, so no term that names one document alone is shipped. The output is deterministic (sorted,
gzip without a timestamp): re-running it on the same corpus gives the same bytes and fingerprint.
"""

from __future__ import annotations

import sys
import tarfile

from llama_index_sac.summarizers.terms import TermStatistics

PROVENANCE = (
    "Document frequencies of the 714 documents of LegalBench-RAG (Pipitone & Alami 2024, arXiv 2408.10343; "
    "corpus/{contractnli,cuad,maud,privacy_qa}): ContractNLI NDAs (Koreeda & Manning 2021), CUAD commercial "
    "contracts and MAUD merger agreements (The Atticus Project, CC BY 4.0), PrivacyQA privacy policies (MIT). "
    "Terms (lower-cased word tokens, English stop words removed) of each document's 30,000-character term sample, "
    "kept when they occur in at least 2 documents. Built by scripts/build_term_statistics.py."
)


def main(archive: str, out: str) -> None:
    texts = []
    with tarfile.open(archive, "r:xz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and member.name.endswith(".txt"):
                handle = tar.extractfile(member)
                assert handle is not None
                texts.append(handle.read().decode("utf-8"))
    stats = TermStatistics.from_texts(texts, name="legal-terms-v1", provenance=PROVENANCE, min_df=2)
    stats.save(out)
    print(f"{out}: {stats!r} from {len(texts)} documents")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: build_term_statistics.py CORPUS.tar.xz OUT.json.gz")
    main(sys.argv[1], sys.argv[2])
