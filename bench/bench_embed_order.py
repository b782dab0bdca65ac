"""Embedding throughput and padding: the order texts are batched in, and all-MiniLM-L6-v2's runtimes side by side.

Two questions (``--question``):

``cache-order`` (the default; what ``EmbeddingCache.embed`` does): chunks sent to the model in document order vs
sorted by length. The 500-character recursive chunks (no overlap) of a fixed slice of cuad documents (sorted paths
``[100:130]``, the first ``--texts`` chunks), embedded with ``default_embedding_model()`` in calls of 256 texts, as the
cache does. Runs alternate order / sorted; the median ratio is reported.

    python bench/bench_embed_order.py --runs 3 --texts 800

``tokens`` (issue 37): mixed-length chunks (``--min-chars`` to ``--max-chars`` characters, uniform, at seeded random
offsets of the 72 LegalBench-RAG-mini documents; the built-in synthetic contracts when the data is absent), shuffled.

* Padding: the share of padding tokens each batching computes beyond the real tokens (the model's tokenizer, cut at
  256): batches of 16 in order of characters (the ONNX backend before), of tokens (now), and torch's (LlamaIndex
  batches of 64 in the order given, each sorted by characters by sentence-transformers).
* Throughput: every contender loaded in this process, ``--runs`` rounds, each embedding every text once with each
  contender in turn (the order rotating from round to round), ``--threads`` threads each; texts per second (wall
  clock and per CPU-second of this process), medians over rounds, and the median of the per-round ratios to torch.
  Contenders: ``torch`` (``default_embedding_model(backend="torch")``, batches of 64), ``onnx-chars`` (the ONNX backend
  as it was: batches of 16 ordered by characters, each batch tokenized apart), ``onnx`` (the default now: tokenized
  once, batches of at most 16 ordered by tokens), and where installed (``--others``): ``st-onnx``
  (sentence-transformers' ONNX backend, exported by ``optimum``) and ``fastembed`` (fastembed's ``TextEmbedding`` on
  the offline weights exported with their token embeddings as output, mean pooling, cut at 256 tokens, batches of
  64); a contender that cannot be imported is named in ``others_missing``.
* Agreement: cosine (float64) of each contender's vectors with torch's, minimum over the texts.

    python bench/bench_embed_order.py --question tokens --texts 512 --runs 3 --threads 2 --others \\
        --json /tmp/bench_embed_tokens.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402

from llama_index_sac.embeddings.default import default_embedding_model  # noqa: E402
from llama_index_sac.embeddings.onnx import OnnxEmbedding, padding_overhead, token_batches  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SAC_SHARED_DIR", REPO.parent / "shared")) / "data" / "legalbenchrag"


def cache_order(args: argparse.Namespace) -> None:
    from llama_index_sac.apps.benchmark.datasets.legalbenchrag import load_legalbenchrag
    from llama_index_sac.node_parser.recursive import recursive_chunk_spans

    bench = load_legalbenchrag(args.data_dir, ["cuad"], scope="all")
    texts: list[str] = []
    for doc_id in sorted(bench.documents)[100:130]:
        text = bench.documents[doc_id]
        texts += [text[s:e] for s, e in recursive_chunk_spans(text, chunk_size=500, chunk_overlap=0)]
    texts = texts[: args.texts]
    print(f"{len(texts)} chunks, mean {statistics.mean(map(len, texts)):.0f} characters")
    model = default_embedding_model()
    model.get_text_embedding_batch(texts[:32])  # warm-up

    def rate(batch: list[str]) -> float:
        start = time.perf_counter()
        for i in range(0, len(batch), 256):
            model.get_text_embedding_batch(batch[i : i + 256])
        return len(batch) / (time.perf_counter() - start)

    ratios = []
    for run in range(args.runs):
        plain, ordered = rate(texts), rate(sorted(texts, key=len))
        ratios.append(ordered / plain)
        print(f"run {run + 1}: document order {plain:.1f} texts/s, length order {ordered:.1f} texts/s "
              f"({ordered / plain:.2f}x)", flush=True)
    print(f"median ratio over {args.runs} runs: {statistics.median(ratios):.2f}x")


# -- tokens ----------------------------------------------------------------------------------------------------------


def mixed_chunks(n: int, low: int, high: int, seed: int = 0) -> tuple[list[str], str]:
    """``n`` chunks of ``low``..``high`` characters (uniform) at seeded random offsets of the mini documents."""
    if (DATA / "corpus.tar.xz").is_file():
        from bench_summaries import load_corpus, mini_paths

        corpus = load_corpus()
        documents = [corpus[path] for path in mini_paths()]
        source = "LegalBench-RAG-mini, 72 referenced documents"
    else:
        from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

        documents = list(synthetic_contracts(n_documents=40, seed=seed).documents.values())
        source = "built-in synthetic contracts (LegalBench-RAG data absent)"
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < n:
        doc = documents[rng.randrange(len(documents))]
        size = rng.randint(low, high)
        if len(doc) <= size:
            continue
        start = rng.randrange(0, len(doc) - size)
        texts.append(doc[start : start + size])
    return texts, source


class CharOrderedOnnx(OnnxEmbedding):
    """The ONNX backend as it was before batches by tokens: each call sorted by characters, each batch of
    ``embed_batch_size`` tokenized on its own (the same graph, session and head)."""

    def get_text_embedding_batch(self, texts: list[str], show_progress: bool = False, **kwargs: Any) -> list[Any]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = BaseEmbedding.get_text_embedding_batch(self, [texts[i] for i in order],  # the loop as before
                                                         show_progress=show_progress, **kwargs)
        result: list[Any] = [[] for _ in texts]
        for position, index in enumerate(order):
            result[index] = ordered[position]
        return result

    def _get_text_embeddings(self, texts: list[str]) -> list[Any]:
        return self._forward(texts).astype("float64").tolist()  # type: ignore[no-any-return]


def _st_onnx(threads: int) -> Callable[[list[str]], Any]:
    """sentence-transformers' ONNX backend on the offline weights (exported by optimum)."""
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer

    from llama_index_sac.embeddings.model import offline_model_path

    weights = offline_model_path()
    assert weights is not None, "the offline extra is needed"
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    model = SentenceTransformer(str(weights), backend="onnx", device="cpu",
                                model_kwargs={"provider": "CPUExecutionProvider", "session_options": options})
    return lambda texts: model.encode(texts, batch_size=64, normalize_embeddings=True)


def _token_graph(folder: Path) -> Path:
    """The offline weights exported to ``folder/onnx/model.onnx`` with the token embeddings as output (what
    fastembed pools), with the tokenizer files beside it, cut at 256 tokens (the model's limit)."""
    import shutil
    import warnings

    import torch
    import transformers

    from llama_index_sac.embeddings.model import offline_model_path

    weights = offline_model_path()
    assert weights is not None, "the offline extra is needed"
    (folder / "onnx").mkdir(parents=True)
    for name in ("tokenizer.json", "special_tokens_map.json", "config.json", "vocab.txt"):
        shutil.copy(weights / name, folder / name)
    config = json.loads((weights / "tokenizer_config.json").read_text())
    config["model_max_length"] = 256
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    bert = transformers.AutoModel.from_pretrained(str(weights), attn_implementation="eager").eval()

    class Tokens(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"last_hidden_state": {0: "batch", 1: "tokens"}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Tokens().eval(), tuple(torch.ones((2, 8), dtype=torch.long) for _ in names),
                          str(folder / "onnx" / "model.onnx"), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)
    return folder


def _fastembed(threads: int, folder: Path) -> Callable[[list[str]], Any]:
    """fastembed's ``TextEmbedding`` on the token-embedding graph of :func:`_token_graph`: mean pooling, normalised,
    cut at 256 tokens (fastembed reads the cut from ``tokenizer_config.json``), batches of 64."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    name = "local/all-MiniLM-L6-v2-bench"
    if name not in {m["model"] for m in TextEmbedding.list_supported_models()}:
        TextEmbedding.add_custom_model(name, pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf="local/none"), dim=384, model_file="onnx/model.onnx")
    model = TextEmbedding(name, specific_model_path=str(_token_graph(folder)), threads=threads)
    return lambda texts: list(model.embed(texts, batch_size=64))


def tokens(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    texts, source = mixed_chunks(args.texts, args.min_chars, args.max_chars)
    report: dict[str, Any] = {"texts": {"n": len(texts), "source": source, "chars": [args.min_chars, args.max_chars],
                                        "mean_chars": statistics.mean(map(len, texts))},
                              "threads": args.threads, "load_average": os.getloadavg()}
    torch.set_num_threads(args.threads)
    contenders: dict[str, Callable[[list[str]], Any]] = {}
    torch_model = default_embedding_model(backend="torch")
    contenders["torch"] = torch_model.get_text_embedding_batch
    old = CharOrderedOnnx(num_threads=args.threads)
    contenders["onnx-chars"] = old.get_text_embedding_batch
    new = OnnxEmbedding(num_threads=args.threads)  # the default model on ONNX, as default_embedding_model() builds it
    contenders["onnx"] = new.get_text_embedding_batch
    tmp = tempfile.TemporaryDirectory()
    if args.others:
        for name, make in (("st-onnx", lambda: _st_onnx(args.threads)),
                           ("fastembed", lambda: _fastembed(args.threads, Path(tmp.name) / "fastembed"))):
            try:
                contenders[name] = make()
            except ImportError as exc:  # not installed, or not importable beside this transformers
                report.setdefault("others_missing", {})[name] = f"{type(exc).__name__}: {exc}"

    counter = new.token_counter()
    lengths = [min(counter(t), 256) for t in texts]
    chars16 = [sorted(range(len(texts)), key=lambda i: len(texts[i]))[i : i + 16] for i in range(0, len(texts), 16)]
    torch64 = [sorted(range(i, min(i + 64, len(texts))), key=lambda j: -len(texts[j]))
               for i in range(0, len(texts), 64)]
    report["tokens_per_text"] = statistics.mean(lengths)
    report["padding"] = {"onnx-chars (16, by characters)": padding_overhead(lengths, chars16),
                         "onnx (16, by tokens)": padding_overhead(lengths, token_batches(lengths, 16)),
                         "torch (64 as given, each sorted by characters)": padding_overhead(lengths, torch64)}
    print(json.dumps(report, indent=1), flush=True)
    for embed in contenders.values():
        embed(texts[:32])  # warm-up
    names = list(contenders)
    rates: dict[str, list[float]] = {n: [] for n in names}
    cpu_rates: dict[str, list[float]] = {n: [] for n in names}
    vectors: dict[str, Any] = {}
    for run in range(args.runs):
        for name in names[run % len(names):] + names[: run % len(names)]:  # rotated
            start, cpu = time.perf_counter(), time.process_time()
            vectors[name] = np.array(contenders[name](texts), dtype=np.float64)
            rates[name].append(len(texts) / (time.perf_counter() - start))
            cpu_rates[name].append(len(texts) / (time.process_time() - cpu))
            print(f"round {run + 1} {name}: {rates[name][-1]:.2f} texts/s", flush=True)
    tmp.cleanup()

    def ratio(values: dict[str, list[float]], name: str) -> float:
        return statistics.median(a / b for a, b in zip(values[name], values["torch"]))

    def min_cosine(a: Any, b: Any) -> float:
        return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())

    report["rates"], report["cpu_rates"] = rates, cpu_rates
    report["table"] = {n: {"texts_per_s": statistics.median(rates[n]), "ratio_to_torch": ratio(rates, n),
                           "per_cpu_second": statistics.median(cpu_rates[n]),
                           "cpu_ratio_to_torch": ratio(cpu_rates, n),
                           "cosine_to_torch_min": min_cosine(vectors[n], vectors["torch"])} for n in names}
    report["onnx_vs_onnx_chars"] = statistics.median(a / b for a, b in zip(rates["onnx"], rates["onnx-chars"]))
    report["load_average_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--question", choices=("cache-order", "tokens"), default="cache-order")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=1200, help="number of chunks embedded per run")
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs of each contender")
    parser.add_argument("--threads", type=int, default=2, help="tokens: threads per contender")
    parser.add_argument("--min-chars", type=int, default=120, help="tokens: shortest chunk")
    parser.add_argument("--max-chars", type=int, default=900, help="tokens: longest chunk")
    parser.add_argument("--others", action="store_true", help="tokens: also sentence-transformers' ONNX backend "
                        "and fastembed (needs optimum[onnxruntime] and fastembed)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.question == "cache-order":
        cache_order(args)
    else:
        tokens(args)


if __name__ == "__main__":
    main()
