"""Measurement (issue 38): do heading-only chunks ("MUTUAL NON-DISCLOSURE AGREEMENT") rank above the text they head?

The recursive parser makes a chunk of a heading alone when the paragraph after it does not fit in the same chunk.
Such a chunk carries little but the document's summary, so it might match any question about the document. This
script reads the per-query records of an ``llama-sac eval`` run (``results.json`` with records) and the run's
documents (``--folder`` of an ``eval --folder`` run), and prints how many of the documents' chunks (default parser)
are heading-only, then per configuration:

* heading-only chunks among the top-``k`` chunks of every question (``--k``, default the run's largest k), and how
  many questions have one at rank 1;
* how often a retrieved heading-only chunk ranks above its body (the next chunk of the same document, the one that
  starts where the heading's whitespace ends): body retrieved lower, or body not retrieved at all;
* how often it is a HIT (shares a character with a gold span).

A chunk is heading-only when its text, stripped, has at most 12 words and does not end with ``. ; : ! ?`` (a
closing quote or bracket after it allowed). Usage::

    python bench/measure_heading_chunks.py /tmp/pdfbench/eval-txt/results.json --folder /tmp/pdfbench/txt
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from pathlib import Path

_END = re.compile(r"[.;:!?][\"'”’)\]]*$")


def heading_only(text: str) -> bool:
    """At most 12 words and no sentence end (module docstring)."""
    stripped = text.strip()
    return bool(stripped) and len(stripped.split()) <= 12 and not _END.search(stripped)


def measure(results_path: Path, texts: Mapping[str, str], k: int | None = None) -> list[str]:
    """The lines of the report (module docstring)."""
    from llama_index_sac.apps.benchmark.results import load_results

    run = load_results(results_path)
    lines = []
    for config in run.configs:
        records = config.records or []
        k = k or max(run.settings.ks)
        at_one = retrieved = headings = above = above_missing = hits = 0
        for record in records:
            chunks = record.retrieved[:k]
            starts = {(doc, start): rank for rank, (doc, start, _) in enumerate(chunks)}
            for rank, (doc, start, end) in enumerate(chunks):
                retrieved += 1
                text = texts[doc][start:end]
                if not heading_only(text):
                    continue
                headings += 1
                at_one += rank == 0
                hits += any(d == doc and s < end and start < e for d, s, e in record.gold)
                body_start = end + (len(texts[doc][end:]) - len(texts[doc][end:].lstrip()))
                body_rank = starts.get((doc, body_start))
                if body_rank is None:
                    above_missing += 1
                elif body_rank > rank:
                    above += 1
        lines.append(f"{config.name}: {len(records)} questions, top-{k}: {headings} heading-only of {retrieved} "
                     f"chunks ({headings / max(retrieved, 1):.1%}); at rank 1: {at_one} questions; above their body: "
                     f"{above} (body lower) + {above_missing} (body not retrieved); HIT: {hits}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--folder", type=Path, required=True, help="the documents of the eval --folder run")
    parser.add_argument("--k", type=int, help="chunks per question looked at (default: the run's largest k)")
    args = parser.parse_args()
    from llama_index_sac.apps.ingest.files import SUFFIXES, read_file

    texts = {p.relative_to(args.folder).as_posix(): read_file(p, doc_id=p.name).text
             for p in sorted(args.folder.rglob("*")) if p.suffix.lower() in SUFFIXES and p.is_file()}
    from llama_index.core.schema import Document

    from llama_index_sac import RecursiveCharacterNodeParser

    nodes = RecursiveCharacterNodeParser().get_nodes_from_documents([Document(text=t) for t in texts.values()])
    alone = sum(heading_only(n.get_content()) for n in nodes)
    print(f"heading-only chunks in the documents (default parser): {alone} of {len(nodes)}")
    print("\n".join(measure(args.results, texts, args.k)))


if __name__ == "__main__":
    main()
