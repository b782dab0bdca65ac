"""all-MiniLM-L6-v2 on a CUDA GPU: chunks per second in float32 and float16, and the vectors against the CPU's.

    python bench/bench_embed_gpu.py --texts 20000 --batch-size 256 --json /tmp/bench_embed_gpu.json

* Texts: 500-character recursive chunks (no overlap) of the LegalBench-RAG corpus (``--data-dir``; the built-in
  synthetic contracts when it is absent), the first ``--texts``, each with its document's extractive summary in front
  (what the default configuration embeds).
* Models: ``default_embedding_model(device=..., precision=...)``, torch on the GPU, float32 and float16, batches of
  ``--batch-size``; the CPU reference is the default model (ONNX Runtime) on ``--cpu-texts`` of the same texts.
* Throughput: ``--runs`` rounds, each embedding every text once with each precision in turn (``get_text_embedding_
  batch``: what ``llama-sac eval`` / ``ingest`` call), the GPU synchronised by the returned lists; chunks/s, median.
* Agreement: cosine (float64) of the GPU vectors with the CPU's on the first ``--cpu-texts`` texts, minimum and mean.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SAC_SHARED_DIR", REPO.parent / "shared")) / "data" / "legalbenchrag"


def chunk_texts(data_dir: Path, n: int) -> tuple[list[str], str]:
    from llama_index_sac import ExtractiveSummarizer
    from llama_index_sac.node_parser.recursive import recursive_chunk_spans

    if (data_dir / "corpus.tar.xz").is_file() or (data_dir / "corpus").is_dir():
        from llama_index_sac.apps.benchmark.datasets.legalbenchrag import load_legalbenchrag

        documents = load_legalbenchrag(data_dir, scope="all").documents
        source = f"LegalBench-RAG corpus ({len(documents)} documents)"
    else:
        from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

        documents = synthetic_contracts(n_documents=150, seed=0).documents
        source = "built-in synthetic contracts"
    summarizer, texts = ExtractiveSummarizer(), []
    for doc_id in sorted(documents):
        text = documents[doc_id]
        summary = "document_summary: " + summarizer.summarize(text).summary
        texts += [summary + "\n\n" + text[s:e] for s, e in recursive_chunk_spans(text, chunk_size=500,
                                                                                  chunk_overlap=0)]
        if len(texts) >= n:
            break
    return texts[:n], source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--texts", type=int, default=20000)
    parser.add_argument("--cpu-texts", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--precisions", default="float32,float16")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    import numpy as np
    import torch

    from llama_index_sac.embeddings import default_embedding_model, embedding_identity

    texts, source = chunk_texts(args.data_dir, args.texts)
    report: dict[str, Any] = {"texts": {"n": len(texts), "source": source,
                                        "mean_chars": statistics.mean(map(len, texts))},
                              "device": args.device,
                              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                              "torch": torch.__version__, "python": platform.python_version(),
                              "batch_size": args.batch_size}
    print(json.dumps(report), flush=True)
    models = {precision: default_embedding_model(device=args.device, precision=precision,
                                                 embed_batch_size=args.batch_size)
              for precision in args.precisions.split(",")}
    report["identities"] = {p: embedding_identity(m) for p, m in models.items()}
    for model in models.values():
        model.get_text_embedding_batch(texts[: args.batch_size])  # warm-up: CUDA context, kernels
    rates: dict[str, list[float]] = {p: [] for p in models}
    vectors: dict[str, Any] = {}
    for run in range(args.runs):
        for precision, model in models.items():
            start = time.perf_counter()
            out = model.get_text_embedding_batch(texts)  # lists of floats: the GPU's work is done
            rates[precision].append(len(texts) / (time.perf_counter() - start))
            vectors[precision] = np.array(out[: args.cpu_texts], dtype=np.float64)
            print(f"round {run + 1} {precision}: {rates[precision][-1]:.0f} chunks/s", flush=True)
    report["chunks_per_s"] = {p: statistics.median(r) for p, r in rates.items()}
    if args.json:  # the rates, whatever happens to the CPU reference
        args.json.write_text(json.dumps({**report, "rates": rates}, indent=1))
    try:  # the CPU reference: the default model (ONNX Runtime), else torch on the CPU
        reference: Any = default_embedding_model()
    except Exception as exc:  # noqa: BLE001 - e.g. the one-time ONNX export failing under this torch
        report["cpu_reference_onnx_error"] = f"{type(exc).__name__}: {exc}"
        reference = default_embedding_model(backend="torch", device="cpu")
    report["cpu_reference"] = embedding_identity(reference)
    cpu = np.array(reference.get_text_embedding_batch(texts[: args.cpu_texts]), dtype=np.float64)

    def cosine(a: Any, b: Any) -> dict[str, float]:
        c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        return {"min": float(c.min()), "mean": float(c.mean())}

    report["rates"] = rates
    report["cosine_vs_cpu"] = {p: cosine(v, cpu) for p, v in vectors.items()}
    if "float16" in vectors and "float32" in vectors:
        report["cosine_float16_vs_float32"] = cosine(vectors["float16"], vectors["float32"])
    report["minutes_for_244615_chunks"] = {p: 244_615 / r / 60 for p, r in report["chunks_per_s"].items()}
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
