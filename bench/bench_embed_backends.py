"""all-MiniLM-L6-v2 on torch and on ONNX Runtime (plain and fused float32 graphs, int8), side by side in one run.

    python bench/bench_embed_backends.py --texts 256 --runs 3 --threads 2 --json /tmp/bench_embed_backends.json \
        [--eval-datasets contractnli,privacy_qa] [--eval-results torch=DIR,onnx=DIR,int8=DIR]

* Texts: LegalBench-RAG-mini documents (``../shared/data/legalbenchrag``, or ``$SAC_SHARED_DIR``): for each of the 72
  referenced documents, its extractive summary + a 500-character window, 20 windows per document at seeded random
  offsets, shuffled, the first ``--texts`` (about 660 characters each); the built-in synthetic contracts when the data
  is absent.
* Models (:data:`MODELS`): torch (batches of 64); ONNX float32, the plain graph in batches of 64 (the previous
  default), the fused graph in batches of 64 and in its default batches (``OnnxEmbedding()``: the default); int8
  (plain graph, measured, not offered).
* Throughput: every model loaded in this process; ``--runs`` rounds, each embedding every text once with each model
  in turn (``get_text_embedding_batch``, ``--threads`` threads: ``torch.set_num_threads`` / ``num_threads``);
  chunks/s per model is the median over rounds (wall clock, and per CPU-second of this process: on a shared machine
  the CPU time a model needs is steadier than the wall time it gets), ratios are the medians of the per-round ratios.
* Agreement: cosine (float64) of each vector with the torch vector of the same text and with the plain ONNX graph's.
* The limit: tokens per text (the model's tokenizer, cut at 256) x about 21 MFLOP per token (2 x 22.7 M parameters
  minus the embedding table, plus attention) against the measured rate, and against the float32 peak of the cores
  (FMA pipes x lanes x 2 x clock, from ``/proc/cpuinfo``'s flags and MHz).
* Cold start: a fresh process runs ``llama-sac query`` on a collection ingested once (two synthetic contracts,
  Chroma) with torch and with ONNX; the wall time to the first printed answer and to the end of the process, and the
  process's CPU time, medians of ``--cold-starts`` (byte code compiled once before, in a temporary
  ``PYTHONPYCACHEPREFIX``, as an installed package has it). Peak memory: peak RSS of a fresh process that loads the
  model and embeds 64 synthetic 600-character texts.
* Retrieval: ``--eval-datasets`` runs ``llama-sac eval --data-dir DATA --datasets ... `` once per model (default
  configurations) in a subprocess; ``--eval-results`` reads runs made before. Mean over k of DRM, precision and recall.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
DATA = Path(os.environ.get("SAC_SHARED_DIR", REPO.parent / "shared")) / "data" / "legalbenchrag"
#: name -> OnnxEmbedding / default_embedding_model options (torch: ``backend="torch"``).
MODELS: dict[str, dict[str, Any]] = {
    "torch": {"backend": "torch"},
    "onnx-plain-64": {"graph": "plain", "embed_batch_size": 64},
    "onnx-fused-64": {"graph": "fused", "embed_batch_size": 64},
    "onnx": {},  # the default: fused graph, default batch size
    "int8": {"precision": "int8", "graph": "plain", "embed_batch_size": 64},
}
BACKENDS = {"torch": {"backend": "torch"}, "onnx": {"backend": "onnx"}, "int8": {"precision": "int8"}}
CLI = {"torch": ["--embed-backend", "torch"], "onnx": ["--embed-backend", "onnx"], "int8": []}
#: ``llama-sac eval`` with the int8 graph (not an option of the CLI): the runner's model loader replaced.
INT8_EVAL = ("import sys\nfrom llama_index_sac.apps.benchmark import factories\n"
             "from llama_index_sac.embeddings.onnx import OnnxEmbedding\n"
             "factories.load_embedding_model = lambda *a, **k: OnnxEmbedding(precision='int8', graph='plain', "
             "num_threads=THREADS)\n"
             "from llama_index_sac.apps.cli import app\napp(sys.argv[1:])\n")
MFLOP_PER_TOKEN = 21.0
CHUNKS_714 = 244_615  # 500-character chunks of all 714 LegalBench-RAG documents (one configuration)


def texts_for_bench(n: int, seed: int = 0) -> tuple[list[str], str]:
    from llama_index_sac import ExtractiveSummarizer

    if (DATA / "corpus.tar.xz").is_file():
        from bench_summaries import load_corpus, mini_paths

        corpus = load_corpus()
        documents = {path: corpus[path] for path in mini_paths()}
        source = "LegalBench-RAG-mini, 72 referenced documents"
    else:
        from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

        documents = synthetic_contracts(n_documents=40, seed=seed).documents
        source = "built-in synthetic contracts (LegalBench-RAG data absent)"
    summarizer, rng, texts = ExtractiveSummarizer(), random.Random(seed), []
    for doc in documents.values():
        summary = "document_summary: " + summarizer.summarize(doc).summary
        for _ in range(20):
            start = rng.randrange(0, max(1, len(doc) - 500))
            texts.append(summary + "\n\n" + doc[start: start + 500])
    rng.shuffle(texts)
    return texts[:n], source


def load(name: str, threads: int):  # noqa: ANN201 - a BaseEmbedding
    from llama_index_sac import default_embedding_model

    if name == "torch":
        import torch

        torch.set_num_threads(threads)
        return default_embedding_model(backend="torch")
    from llama_index_sac.embeddings.onnx import OnnxEmbedding

    return OnnxEmbedding(num_threads=threads, **MODELS[name])


def peak_gflops() -> tuple[float | None, str]:
    """float32 FLOP/s of all cores (FMA: 2 pipes x lanes x 2 FLOP x clock) and how it was read."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None, "unknown (no /proc/cpuinfo)"
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    mhz = [float(line.split(":", 1)[1]) for line in info.splitlines() if line.startswith("cpu MHz")]
    if "fma" not in flags or not mhz:
        return None, "unknown (no FMA flag or clock)"
    lanes = 16 if "avx512f" in flags else 8
    cores = os.cpu_count() or 1
    return cores * 2 * lanes * 2 * statistics.mean(mhz) / 1000, (
        f"{cores} cores x 2 FMA pipes x {lanes} float32 lanes x 2 FLOP x {statistics.mean(mhz):.0f} MHz")


def throughput(texts: list[str], runs: int, threads: int) -> dict[str, Any]:
    import numpy as np

    models = {name: load(name, threads) for name in MODELS}
    rates: dict[str, list[float]] = {name: [] for name in MODELS}
    cpu_rates: dict[str, list[float]] = {name: [] for name in MODELS}
    vectors = {}
    for _ in range(runs):
        for name, model in models.items():
            start, cpu = time.perf_counter(), time.process_time()
            vectors[name] = np.array(model.get_text_embedding_batch(texts), dtype=np.float64)
            rates[name].append(len(texts) / (time.perf_counter() - start))
            cpu_rates[name].append(len(texts) / (time.process_time() - cpu))
    out: dict[str, Any] = {"rates": rates, "median": {n: statistics.median(r) for n, r in rates.items()},
                           "cpu_rates": cpu_rates,
                           "median_per_cpu_second": {n: statistics.median(r) for n, r in cpu_rates.items()}}
    out["ratio_vs_torch"] = {n: statistics.median(a / b for a, b in zip(rates[n], rates["torch"])) for n in MODELS}
    out["cpu_ratio_vs_torch"] = {n: statistics.median(a / b for a, b in zip(cpu_rates[n], cpu_rates["torch"]))
                                 for n in MODELS}
    out["ratio_vs_onnx_plain_64"] = {n: statistics.median(a / b for a, b in zip(rates[n], rates["onnx-plain-64"]))
                                     for n in MODELS}

    def cosines(a: Any, b: Any) -> dict[str, float]:
        c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        return {"min": float(c.min()), "mean": float(c.mean()), "one_minus_min": float(1 - c.min())}

    out["cosine_vs_torch"] = {n: cosines(vectors[n], vectors["torch"]) for n in MODELS}
    out["cosine_vs_onnx_plain"] = {n: cosines(vectors[n], vectors["onnx-plain-64"]) for n in MODELS}
    counter = models["onnx"].token_counter()
    tokens = [min(counter(t), 256) for t in texts]
    out["tokens_per_text"] = statistics.mean(tokens)
    flop = out["tokens_per_text"] * MFLOP_PER_TOKEN / 1000  # GFLOP per text
    out["gflop_per_s"] = {n: r * flop for n, r in out["median"].items()}
    out["gflop_per_cpu_second"] = {n: r * flop for n, r in out["median_per_cpu_second"].items()}
    peak, how = peak_gflops()
    out["peak_gflop_per_s"] = {"value": peak, "how": how}
    if peak is not None:
        per_core = peak / (os.cpu_count() or 1)
        out["share_of_peak"] = {n: g / peak for n, g in out["gflop_per_s"].items()}
        out["share_of_one_core_peak_per_cpu_second"] = {n: g / per_core
                                                        for n, g in out["gflop_per_cpu_second"].items()}
    out["hours_for_714_one_config"] = {n: CHUNKS_714 / r / 3600 for n, r in out["median"].items()}
    return out


def _peak_rss_mb() -> float:
    """Peak RSS of this process (``VmHWM``: ``ru_maxrss`` can carry the high-water mark of the parent it was forked
    from)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_process_memory(name: str, threads: int) -> None:
    """Child mode: load ``name``, embed 64 texts, print peak RSS (MiB) and load seconds as JSON."""
    start = time.perf_counter()
    model = load(name, threads)
    loaded = time.perf_counter() - start
    from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

    documents = list(synthetic_contracts(n_documents=8, seed=0).documents.values())
    model.get_text_embedding_batch([doc[i: i + 600] for doc in documents for i in range(0, 4800, 600)][:64])
    print(json.dumps({"peak_mb": _peak_rss_mb(), "load_s": loaded,
                      "torch_imported": "torch" in sys.modules}))


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def memory(threads: int) -> dict[str, dict[str, float]]:
    out = {}
    for name in ("torch", "onnx", "int8"):
        proc = subprocess.run([sys.executable, __file__, "--one", name, "--threads", str(threads)],
                              capture_output=True, text=True, env=child_env(), check=True)
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _timed_query(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """One ``llama-sac query`` process: seconds to its first line of output and to its end, and its CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    first_line = proc.stdout.readline()
    first = time.perf_counter() - start
    rest, err = proc.communicate()
    end = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not first_line.startswith("1. score"):
        raise RuntimeError(f"query failed: {err[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"first_answer_s": first, "exit_s": end, "cpu_s": cpu}


def cold_start(repeats: int) -> dict[str, dict[str, Any]]:
    from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
    from llama_index_sac.apps.ingest.run import IngestSettings, ingest

    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for i, text in enumerate(list(synthetic_contracts(n_documents=2, seed=0).documents.values())):
            (folder / f"contract-{i}.txt").write_text(text, encoding="utf-8")
        ingest([folder], f"chroma:{tmp}/float32", IngestSettings(show_progress=False, embed_backend="onnx"))
        env = {**child_env(), "PYTHONPYCACHEPREFIX": f"{tmp}/pycache"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        commands = {name: [sys.executable, "-m", "llama_index_sac.apps.cli", "query",
                           "Which law governs the agreement?", "--vector-store", f"chroma:{tmp}/float32", "--k", "3",
                           "--no-progress", *CLI[name]] for name in ("torch", "onnx")}  # int8: not a query option
        for command in commands.values():
            _timed_query(command, env)  # byte code compiled once
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
        for _ in range(repeats):  # interleaved
            for name, command in commands.items():
                runs[name].append(_timed_query(command, env))
        for name, timings in runs.items():
            out[name] = {key: statistics.median(t[key] for t in timings) for key in timings[0]}
            out[name]["runs"] = timings  # type: ignore[assignment]
    return out


def mean_over_k(results: Path) -> dict[str, dict[str, float]]:
    data = json.loads((results / "results.json").read_text())
    out = {}
    for config in data["configs"]:
        overall = config["aggregates"]["overall"]
        out[config["config"]["name"]] = {metric: 100 * statistics.mean(v[metric] for v in overall.values())
                                         for metric in ("drm", "precision", "recall")}
    return out


def run_eval(name: str, datasets: str, out: Path, threads: int) -> Path:
    target = out / f"eval-{name}"
    extra = ["--embed-threads", str(threads)] if name == "onnx" else []
    start = [sys.executable, "-c", INT8_EVAL.replace("THREADS", str(threads))] if name == "int8" else [
        sys.executable, "-m", "llama_index_sac.apps.cli"]
    subprocess.run([*start, "eval", "--data-dir", str(DATA), "--datasets", datasets, *CLI[name], *extra,
                    "--cache-dir", str(out / "cache"), "-o", str(target), "-q"],
                   check=True, env=child_env(), stdout=subprocess.DEVNULL)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cold-starts", type=int, default=3)
    parser.add_argument("--eval-datasets", default=None, help="run llama-sac eval per model on these datasets")
    parser.add_argument("--eval-results", default=None, help="name=DIR,... of llama-sac eval runs made before")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: throughput,memory,cold")
    parser.add_argument("--one", choices=sorted(MODELS), help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.one:
        one_process_memory(args.one, args.threads)
        return
    skip = set(filter(None, args.skip.split(",")))
    report: dict[str, object] = {"threads": args.threads, "load_average": os.getloadavg()}
    if "throughput" not in skip:
        texts, source = texts_for_bench(args.texts)
        report["texts"] = {"n": len(texts), "source": source, "mean_chars": statistics.mean(map(len, texts))}
        report["throughput"] = throughput(texts, args.runs, args.threads)
        print(json.dumps(report, indent=1), flush=True)
    if "memory" not in skip:
        report["memory"] = memory(args.threads)
    if "cold" not in skip:
        report["cold_start"] = cold_start(args.cold_starts)
    evals = dict(item.split("=", 1) for item in args.eval_results.split(",")) if args.eval_results else {}
    if args.eval_datasets:
        with tempfile.TemporaryDirectory() as tmp:
            for name in BACKENDS:  # torch, the default ONNX model, int8
                evals[name] = str(run_eval(name, args.eval_datasets, Path(tmp), args.threads))
                report.setdefault("retrieval", {})[name] = mean_over_k(Path(evals[name]))  # type: ignore[index]
    else:
        report["retrieval"] = {name: mean_over_k(Path(path)) for name, path in evals.items()}
    report["load_average_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
