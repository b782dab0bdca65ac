"""Document identity in the extractive summaries of LegalBench-RAG's 714 documents (issue 15, ``docs/results.md`` 6g).

Counts, for the current ``ExtractiveSummarizer`` (shipped term table, content-only):

- merger agreements (maud) whose summary lacks the target: the first word of the file name's first company
  (``Alexion Pharmaceuticals, Inc._AstraZeneca PLC.txt`` -> "alexion"; a leading "The" skipped), case-insensitive;
- documents whose party list names one party twice (names compared on their letters and digits).

``--save`` writes every summary and party list to a JSON file; ``--before`` compares with such a file (how many
summaries changed, per dataset, and the first changes). No embedding, no model.

    python bench/summary_identity.py --data-dir ../shared/data/legalbenchrag --save /tmp/identity-v3.json
    python bench/summary_identity.py --data-dir ../shared/data/legalbenchrag --before /tmp/identity-v2.json
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from llama_index_sac import ExtractiveSummarizer, load_legalbenchrag
from llama_index_sac.summarizers.legal_identity import find_parties


def target_word(doc_id: str) -> str:
    """First word of a maud file name's first company, lower-cased ("The" skipped)."""
    words = [w for w in re.split(r"[ _,~.]+", doc_id.split("/", 1)[1]) if w and w.lower() != "the"]
    return words[0].lower()


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--save", type=Path, help="write {doc id: {summary, parties}} here")
    parser.add_argument("--before", type=Path, help="a --save file of an earlier version to compare with")
    args = parser.parse_args()
    bench = load_legalbenchrag(args.data_dir, scope="all")
    summarizer = ExtractiveSummarizer()
    now: dict[str, dict[str, Any]] = {doc_id: {"summary": summarizer.summarize(text).summary,
                    "parties": find_parties(text[: summarizer.lead_chars], max_parties=8)}
           for doc_id, text in bench.documents.items()}
    maud = [d for d in now if d.startswith("maud/")]
    missing = [d for d in maud if target_word(d) not in now[d]["summary"].lower()]
    repeated = [d for d in now if len({_key(p) for p in now[d]["parties"]}) < len(now[d]["parties"])]
    print(f"{len(now)} documents; maud summaries without the target: {len(missing)} of {len(maud)}; "
          f"documents naming a party twice: {len(repeated)}")
    for doc_id in missing:
        print(f"  no target: {doc_id}: {now[doc_id]['summary']}")
    if args.before:
        before = json.loads(args.before.read_text(encoding="utf-8"))
        changed = [d for d in now if d in before and before[d]["summary"] != now[d]["summary"]]
        print(f"summaries changed: {len(changed)} of {len(now)}",
              dict(Counter(d.split("/", 1)[0] for d in changed)))
        for doc_id in changed[:10]:
            print(f"  {doc_id}\n    before: {before[doc_id]['summary']}\n    now:    {now[doc_id]['summary']}")
    if args.save:
        args.save.write_text(json.dumps(now, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
