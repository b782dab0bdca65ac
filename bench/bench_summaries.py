"""Benchmark of the document summarizers (issue 5).

1. ExtractiveSummarizer on all 714 LegalBench-RAG documents: fit time (TF-IDF on the corpus) and summaries per
   second (median of ``--repeats`` runs).
2. LLMSummarizer with the local Qwen2.5-Coder-0.5B GGUF behind ``llama_cpp.server`` (127.0.0.1) on the
   LegalBench-RAG-mini documents at concurrency (num_workers) 1 vs 2, cold caches, then a cached re-run.

    python bench/bench_summaries.py                      # extractive + LLM on a fixed subset of 8 mini docs
    python bench/bench_summaries.py --llm-docs 72        # all 72 mini documents (about 2 x 20 minutes here)
    python bench/bench_summaries.py --skip-llm

Caches go to a fresh temporary directory outside the repository (``--cache-root``). The corpus is read from
``../shared/data/legalbenchrag/corpus.tar.xz`` with ``tarfile`` (nothing is unpacked).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

from llama_index.core.schema import Document

from llama_index_sac import ExtractiveSummarizer, LLMSummarizer, SummaryAugmentationTransformation

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SAC_SHARED_DIR", REPO.parent / "shared")) / "data" / "legalbenchrag"
MODEL_DIR = Path(os.environ.get("SAC_MODEL_DIR", Path.home() / ".cache" / "llama-index-sac" / "models"))
GGUF = Path(os.environ.get("SAC_TEST_GGUF", MODEL_DIR / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))


def load_corpus() -> dict[str, str]:
    texts: dict[str, str] = {}
    with tarfile.open(DATA / "corpus.tar.xz") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".txt"):
                handle = tar.extractfile(member)
                assert handle is not None
                texts[member.name.split("corpus/", 1)[-1]] = handle.read().decode("utf-8")
    return texts


def mini_paths() -> list[str]:
    paths: set[str] = set()
    for bench in sorted((DATA / "benchmarks_mini").glob("*.json")):
        for test in json.loads(bench.read_text(encoding="utf-8"))["tests"]:
            paths.update(s["file_path"] for s in test["snippets"])
    return sorted(paths)


def bench_extractive(texts: dict[str, str], repeats: int) -> dict[str, float]:
    docs = list(texts.values())
    fits, runs = [], []
    summarizer = ExtractiveSummarizer(max_chars=150)
    for _ in range(repeats):
        t0 = time.perf_counter()
        summarizer = ExtractiveSummarizer(max_chars=150).fit(docs)
        fits.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for doc in docs:
            summarizer.summarize(doc)
        runs.append(time.perf_counter() - t0)
    fit, run = statistics.median(fits), statistics.median(runs)
    return {"docs": len(docs), "chars": sum(map(len, docs)), "fit_s": fit, "summarize_s": run,
            "summaries_per_s": len(docs) / run, "per_s_incl_fit": len(docs) / (fit + run)}


def start_server(threads: int | None) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF), "--model_alias", "qwen", "--host",
           "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--verbose", "False"]
    if threads:
        cmd += ["--n_threads", str(threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    for _ in range(180):
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2):
                return proc, base
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("llama_cpp.server did not start")


def bench_llm(texts: dict[str, str], n_docs: int, cache_root: Path, max_input_chars: int) -> dict[str, object]:
    paths = mini_paths()
    chosen = paths if n_docs >= len(paths) else [paths[round(i * len(paths) / n_docs)] for i in range(n_docs)]
    docs = [Document(text=texts[p], id_=p) for p in chosen]
    proc, base = start_server(None)
    out: dict[str, object] = {"docs": len(docs), "of": len(paths), "chars": sum(len(d.text) for d in docs)}
    try:
        def summarizer() -> LLMSummarizer:
            return LLMSummarizer.from_openai_like(api_base=base, model="qwen", max_tokens=80, max_chars=150,
                                                  max_input_chars=max_input_chars, long_document="head_tail",
                                                  request_timeout=300, timeout=300)

        for workers in (1, 2):
            cache = cache_root / f"cold-w{workers}"
            transform = SummaryAugmentationTransformation(summarizer=summarizer(), num_workers=workers,
                                                          cache_dir=str(cache))
            t0 = time.perf_counter()
            transform([d.model_copy() for d in docs])
            out[f"cold_w{workers}_s"] = time.perf_counter() - t0
            out[f"calls_w{workers}"] = transform.summarizer_calls
        warm = []
        for _ in range(3):
            transform = SummaryAugmentationTransformation(summarizer=summarizer(), num_workers=1,
                                                          cache_dir=str(cache_root / "cold-w1"))
            t0 = time.perf_counter()
            transform([d.model_copy() for d in docs])
            warm.append(time.perf_counter() - t0)
            assert transform.summarizer_calls == 0
        out["cached_s"] = statistics.median(warm)
    finally:
        proc.terminate()
        proc.wait(20)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--llm-docs", type=int, default=8, help="mini documents for the LLM part (72 = all)")
    parser.add_argument("--max-input-chars", type=int, default=4000)
    parser.add_argument("--skip-llm", action="store_true")
    parser.add_argument("--cache-root", type=Path, default=None, help="default: a fresh temporary directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    args = parser.parse_args()
    if not (DATA / "corpus.tar.xz").is_file():
        sys.exit(f"LegalBench-RAG data not found under {DATA}")
    texts = load_corpus()
    results: dict[str, object] = {"extractive": bench_extractive(texts, args.repeats)}
    ex = results["extractive"]
    assert isinstance(ex, dict)
    print("| ExtractiveSummarizer (714 docs) | value |\n|---|---|")
    print(f"| corpus | {ex['docs']} docs, {ex['chars'] / 1e6:.1f} M chars |")
    print(f"| fit (TF-IDF), median of {args.repeats} | {ex['fit_s']:.2f} s |")
    print(f"| summarize all, median of {args.repeats} | {ex['summarize_s']:.2f} s = {ex['summaries_per_s']:.0f} "
          f"summaries/s |")
    print(f"| including fit | {ex['per_s_incl_fit']:.0f} docs/s |")
    if not args.skip_llm:
        if not GGUF.is_file():
            print(f"\nLLM part skipped: {GGUF} not found (bash scripts/setup-llm.sh)")
        else:
            root = args.cache_root or Path(tempfile.mkdtemp(prefix="sac-bench-summaries-"))
            llm = bench_llm(texts, args.llm_docs, root, args.max_input_chars)
            results["llm"] = llm
            n, of = llm["docs"], llm["of"]
            c1, c2, cached = (float(llm["cold_w1_s"]), float(llm["cold_w2_s"]),  # type: ignore[arg-type]
                              float(llm["cached_s"]))  # type: ignore[arg-type]
            print(f"\n| LLMSummarizer, Qwen2.5-0.5B Q4_K_M, {n} of {of} mini docs | time | per doc | "
                  f"72 docs (extrapolated) |\n|---|---|---|---|")
            for label, secs in (("cold, num_workers=1", c1), ("cold, num_workers=2", c2),
                                ("cached re-run (median of 3)", cached)):
                print(f"| {label} | {secs:.2f} s | {secs / int(n):.3f} s | {secs / int(n) * 72:.0f} s |")  # type: ignore[call-overload]
            print(f"\nconcurrency 2 vs 1: {c1 / c2:.2f}x; cached vs cold: {c1 / cached:.0f}x faster")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
