"""Semantic splitting on the 18 ContractNLI documents of LegalBench-RAG-mini: ours vs LlamaIndex vs LangChain.

Compares, side by side in one process with ONE all-MiniLM-L6-v2 model instance (``default_embedding_model()``,
embed_batch_size 64 for everybody):

* ``SemanticNodeParser`` (this package) with its defaults (percentile 95, buffer 1, chunks 100..1000 characters),
  and with ``max_chunk_size=None, min_chunk_size=0`` (no size rules, the peers' behaviour);
* LlamaIndex ``SemanticSplitterNodeParser`` with its default settings (percentile 95, buffer 1);
* LangChain ``SemanticChunker`` (langchain-experimental) with its default settings (percentile 95, buffer 1),
  given the same model through a small ``Embeddings`` adapter;
* the floor: embedding every sentence (nupunkt spans, stripped) once, sorted by length, in batches of 64.

Reported per method: wall time (median over ``--runs`` interleaved runs, plus min), number of texts sent to the
model, characters sent, number of chunks, chunk length in characters (min / median / max) and chunks longer than
256 MiniLM tokens (the model truncates them). Needs ``pip install -e '.[bench,offline]'`` and ../shared.

    python bench/bench_semantic.py --runs 3 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tarfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore", category=DeprecationWarning)

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.schema import Document, MetadataMode  # noqa: E402

from llama_index_sac.embeddings.default import default_embedding_model  # noqa: E402
from llama_index_sac.embeddings.limits import embedding_token_counter  # noqa: E402
from llama_index_sac.node_parser.semantic import SemanticNodeParser  # noqa: E402
from llama_index_sac.sentences import sentence_spans  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SAC_SHARED_DIR", REPO.parent / "shared")) / "data" / "legalbenchrag"


def load_contractnli_mini() -> dict[str, str]:
    """The documents referenced by benchmarks_mini/contractnli.json, read from corpus.tar.xz (path -> text)."""
    tests = json.loads((DATA / "benchmarks_mini" / "contractnli.json").read_text(encoding="utf-8"))["tests"]
    wanted = {f"corpus/{s['file_path']}" for t in tests for s in t["snippets"]}
    texts: dict[str, str] = {}
    with tarfile.open(DATA / "corpus.tar.xz") as archive:
        for member in archive:
            if member.name in wanted:
                handle = archive.extractfile(member)
                assert handle is not None
                texts[member.name.removeprefix("corpus/")] = handle.read().decode("utf-8")
    missing = wanted - {f"corpus/{k}" for k in texts}
    if missing:
        raise SystemExit(f"documents missing from the corpus archive: {sorted(missing)}")
    return dict(sorted(texts.items()))


class CountingEmbedding(BaseEmbedding):
    """Delegates to a real model and counts the texts (and characters) it is asked to embed."""

    _inner: BaseEmbedding = PrivateAttr()
    _texts: int = PrivateAttr(default=0)
    _chars: int = PrivateAttr(default=0)

    def __init__(self, inner: BaseEmbedding, **kwargs: Any) -> None:
        super().__init__(model_name=inner.model_name, embed_batch_size=inner.embed_batch_size, **kwargs)
        self._inner = inner

    @classmethod
    def class_name(cls) -> str:
        return "CountingEmbedding"

    def reset(self) -> None:
        self._texts = self._chars = 0

    @property
    def counts(self) -> tuple[int, int]:
        return self._texts, self._chars

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._texts += len(texts)
        self._chars += sum(len(t) for t in texts)
        return self._inner._get_text_embeddings(texts)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def langchain_adapter(model: CountingEmbedding) -> Any:
    from langchain_core.embeddings import Embeddings

    class Adapter(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return model.get_text_embedding_batch(list(texts))

        def embed_query(self, text: str) -> list[float]:
            return model.get_text_embedding(text)

    return Adapter()


def methods(model: CountingEmbedding, docs: list[Document]) -> dict[str, Callable[[], list[str]]]:
    from langchain_experimental.text_splitter import SemanticChunker
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    ours = SemanticNodeParser(embed_model=model)
    ours_plain = SemanticNodeParser(embed_model=model, max_chunk_size=None, min_chunk_size=0)
    llama = SemanticSplitterNodeParser.from_defaults(embed_model=model)
    lang = SemanticChunker(langchain_adapter(model))

    def texts_of(nodes: list[Any]) -> list[str]:
        return [n.get_content(MetadataMode.NONE) for n in nodes]

    def floor() -> list[str]:
        sentences = [d.text[s:e].strip() for d in docs for s, e in sentence_spans(d.text)]
        model.get_text_embedding_batch(sorted(sentences, key=len))
        return []

    return {
        "SemanticNodeParser (ours, defaults)": lambda: texts_of(ours.get_nodes_from_documents(docs)),
        "SemanticNodeParser (ours, no size rules)": lambda: texts_of(ours_plain.get_nodes_from_documents(docs)),
        "LlamaIndex SemanticSplitterNodeParser": lambda: texts_of(llama.get_nodes_from_documents(docs)),
        "LangChain SemanticChunker": lambda: [c for d in docs for c in lang.split_text(d.text)],
        "floor: embed each sentence once": floor,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs per method (median reported)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if not (DATA / "corpus.tar.xz").is_file():
        print(f"LegalBench-RAG data not found under {DATA}", file=sys.stderr)
        return 2

    texts = load_contractnli_mini()
    docs = [Document(text=t, id_=path) for path, t in texts.items()]
    inner = default_embedding_model()
    model = CountingEmbedding(inner)
    count_tokens = embedding_token_counter(inner)
    assert count_tokens is not None
    model.get_text_embedding_batch(["warm-up sentence"] * 8)  # first-call overhead out of the timings

    n_sentences = sum(len(sentence_spans(d.text)) for d in docs)
    print(f"{len(docs)} documents, {sum(len(d.text) for d in docs):,} characters, {n_sentences} sentences (nupunkt); "
          f"torch threads: {__import__('torch').get_num_threads()}", flush=True)

    runs = methods(model, docs)
    times: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, dict[str, Any]] = {}
    for r in range(args.runs):
        for name, run in runs.items():
            model.reset()
            start = time.perf_counter()
            chunks = run()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed)
            print(f"run {r + 1}/{args.runs} {name}: {elapsed:.1f} s", flush=True)
            if r == 0:
                sizes = sorted(len(c) for c in chunks)
                results[name] = {
                    "embed_inputs": model.counts[0],
                    "embed_chars": model.counts[1],
                    "chunks": len(chunks),
                    "min_chars": sizes[0] if sizes else None,
                    "median_chars": statistics.median(sizes) if sizes else None,
                    "max_chars": sizes[-1] if sizes else None,
                    "over_256_tokens": sum(count_tokens(c) > 256 for c in chunks),
                }
    floor_name = "floor: embed each sentence once"
    floor = statistics.median(times[floor_name])
    llama = statistics.median(times["LlamaIndex SemanticSplitterNodeParser"])
    print()
    print("| method | wall time s (median; min) | x floor | embedding inputs | characters embedded | chunks | "
          "chunk chars min / median / max | chunks > 256 tokens |")
    print("|---|---|---|---|---|---|---|---|")
    for name in runs:
        res, med = results[name], statistics.median(times[name])
        res.update(wall_median_s=med, wall_min_s=min(times[name]), runs=len(times[name]))
        size_cell = ("-" if res["chunks"] == 0
                     else f"{res['min_chars']} / {res['median_chars']:.0f} / {res['max_chars']}")
        chunk_cell = "-" if res["chunks"] == 0 else res["chunks"]
        over_cell = "-" if res["chunks"] == 0 else res["over_256_tokens"]
        print(f"| {name} | {med:.1f}; {min(times[name]):.1f} | {med / floor:.2f} | {res['embed_inputs']} | "
              f"{res['embed_chars']:,} | {chunk_cell} | {size_cell} | {over_cell} |")
    ours = statistics.median(times["SemanticNodeParser (ours, defaults)"])
    print(f"\nours vs LlamaIndex: {llama / ours:.2f}x faster; ours vs floor: {ours / floor:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
