"""Benchmark (issue 2): recursive character splitting throughput and offset exactness on LegalBench-RAG.

Compares, side by side in one run, on the real LegalBench-RAG corpus (714 documents, 79.7 M characters, read with
``tarfile`` into memory before any timing):

* ours: ``recursive_chunk_spans`` (text level: spans) and ``RecursiveCharacterNodeParser.get_nodes_from_documents``
  (document level: ``TextNode``s with offsets, SOURCE/PREVIOUS/NEXT and deterministic ids);
* LangChain ``RecursiveCharacterTextSplitter``: ``split_text`` vs ``create_documents`` with ``add_start_index=True``;
* LlamaIndex ``SentenceSplitter`` counting characters (``tokenizer=list``): ``split_text`` vs
  ``get_nodes_from_documents``;
* chonkie ``RecursiveChunker`` (character tokenizer): ``chunk`` vs ``chunk_document``;
* semantic-text-splitter (Rust) ``TextSplitter(500)``: ``chunks`` vs ``chunk_indices``.

All at 500 characters, no overlap. Throughput is in millions of characters per second (Mchar/s; the corpus is
pure-ASCII-ish, so this is within a few percent of MB/s of UTF-8), the median of ``--rounds`` rounds; within a round
every (tool, API) pair runs once, in an order rotated from round to round, so machine noise hits all alike.
"build" is the document-level time minus the text-level time (node/document construction, offsets, ids).

Peak memory: one subprocess per tool runs the document-level API once on the same documents (output kept alive);
reported is the peak resident set size above the baseline after loading the corpus (``VmHWM`` reset through
``/proc/self/clear_refs`` after loading; where that is unavailable, ``resource.getrusage`` ``ru_maxrss`` minus
the baseline RSS). RSS, unlike ``tracemalloc``, also sees the Rust allocations of semantic-text-splitter.

Offsets: for every tool that reports offsets, each chunk is checked against the text: ``wrong_text`` (reported
start missing, or ``text[start:start+len(chunk)] != chunk``), ``out_of_order`` (start not greater than the
previous chunk's start), ``earlier_dup`` (the text matches but the start lies inside the previous chunk although
the chunker has no overlap, and the same text occurs again at or after the previous chunk's end: the offset points
at an earlier duplicate). ``misplaced`` counts chunks with any of the three. Peers that strip whitespace (LangChain,
SentenceSplitter, semantic-text-splitter) report the offset of the stripped chunk, so the comparison uses the
chunk exactly as returned; stripped whitespace is not a misplacement.

Usage::

    python bench/bench_recursive.py            # default: every 2nd document (357 docs, ~40 M chars), 3 rounds
    python bench/bench_recursive.py --quick    # every 10th document (72 docs, 8.5 M chars), 3 rounds
    python bench/bench_recursive.py --full     # all 714 documents, 3 rounds
    python bench/bench_recursive.py --full --rounds 5 --no-memory --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CORPUS = Path(os.environ.get("SAC_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared")) / (
    "data/legalbenchrag/corpus.tar.xz"
)
CHUNK_SIZE = 500
TOOLS = ["ours", "langchain", "sentence_splitter", "chonkie", "semantic_text_splitter"]


# -- data ------------------------------------------------------------------------------------------------------
def load_corpus(path: Path, step: int) -> list[tuple[str, str]]:
    """``(name, text)`` of every ``step``-th ``.txt`` document of the tarball, sorted by name (UTF-8 decoded)."""
    if not path.is_file():
        sys.exit(f"LegalBench-RAG corpus not found at {path} (set SAC_SHARED_DIR to the folder holding data/)")
    docs: list[tuple[str, str]] = []
    with tarfile.open(path) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".txt"):
                fh = tar.extractfile(member)
                assert fh is not None
                docs.append((member.name, fh.read().decode("utf-8")))
    docs.sort()
    return docs[::step]


# -- the tools: (text-level callable, document-level callable, offsets extractors) -------------------------------
# Each factory returns a dict with:
#   prepare() -> inputs for the document API (built outside the timed region, fresh for each run)
#   text(texts) -> output of the text-level API
#   doc(inputs) -> output of the document-level API
#   text_offsets(out) / doc_offsets(out) -> per document, a list of (start or None, chunk text), or None
def make_tool(name: str, docs: list[tuple[str, str]]) -> dict[str, Any]:
    texts = [t for _, t in docs]
    if name == "ours":
        from llama_index.core.schema import Document

        from llama_index_sac.node_parser.recursive import RecursiveCharacterNodeParser, recursive_chunk_spans

        parser = RecursiveCharacterNodeParser(chunk_size=CHUNK_SIZE, chunk_overlap=0)

        def ours_text(texts: list[str]) -> list[list[tuple[int, int]]]:
            return [recursive_chunk_spans(t, chunk_size=CHUNK_SIZE, chunk_overlap=0) for t in texts]

        return {
            "label": "ours RecursiveCharacterNodeParser",
            "text_api": "recursive_chunk_spans",
            "doc_api": "get_nodes_from_documents",
            "prepare": lambda: [Document(text=t, id_=n) for n, t in docs],
            "text": ours_text,
            "doc": parser.get_nodes_from_documents,
            "text_offsets": lambda out: [[(s, t[s:e]) for s, e in spans] for t, spans in zip(texts, out)],
            "doc_offsets": lambda out: _nodes_by_doc(out, docs),
        }
    if name == "langchain":
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        lc = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=0, add_start_index=True)
        return {
            "label": "LangChain RecursiveCharacterTextSplitter",
            "text_api": "split_text",
            "doc_api": "create_documents",
            "prepare": lambda: texts,
            "text": lambda texts: [lc.split_text(t) for t in texts],
            # one create_documents call per text, so the chunks stay grouped by document (same output)
            "doc": lambda texts: [lc.create_documents([t]) for t in texts],
            "text_offsets": None,
            "doc_offsets": lambda out: [[(d.metadata.get("start_index"), d.page_content) for d in ds] for ds in out],
        }
    if name == "sentence_splitter":
        from llama_index.core.node_parser import SentenceSplitter
        from llama_index.core.schema import Document

        ss = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=0, tokenizer=list)  # list: 1 token per character
        return {
            "label": "LlamaIndex SentenceSplitter (chars)",
            "text_api": "split_text",
            "doc_api": "get_nodes_from_documents",
            "prepare": lambda: [Document(text=t, id_=n) for n, t in docs],
            "text": lambda texts: [ss.split_text(t) for t in texts],
            "doc": ss.get_nodes_from_documents,
            "text_offsets": None,
            "doc_offsets": lambda out: _nodes_by_doc(out, docs),
        }
    if name == "chonkie":
        from chonkie import RecursiveChunker
        from chonkie.types import Document as ChonkieDocument

        ch = RecursiveChunker(tokenizer="character", chunk_size=CHUNK_SIZE)

        def chonkie_offsets(per_doc: list[list[Any]]) -> list[list[tuple[int | None, str]]]:
            return [[(c.start_index, c.text) for c in chunks] for chunks in per_doc]

        return {
            "label": "chonkie RecursiveChunker (character)",
            "text_api": "chunk",
            "doc_api": "chunk_document",
            "prepare": lambda: [ChonkieDocument(id=n, content=t) for n, t in docs],
            "text": lambda texts: [ch.chunk(t) for t in texts],
            "doc": lambda cdocs: [ch.chunk_document(d) for d in cdocs],
            "text_offsets": chonkie_offsets,
            "doc_offsets": lambda out: chonkie_offsets([d.chunks for d in out]),
        }
    if name == "semantic_text_splitter":
        from semantic_text_splitter import TextSplitter

        st = TextSplitter(CHUNK_SIZE)
        return {
            "label": "semantic-text-splitter TextSplitter (Rust)",
            "text_api": "chunks",
            "doc_api": "chunk_indices",
            "prepare": lambda: texts,
            "text": lambda texts: [st.chunks(t) for t in texts],
            "doc": lambda texts: [st.chunk_indices(t) for t in texts],
            "text_offsets": None,
            "doc_offsets": lambda out: [list(pairs) for pairs in out],
        }
    raise ValueError(f"unknown tool {name!r}; choose from {TOOLS}")


def _nodes_by_doc(nodes: list[Any], docs: list[tuple[str, str]]) -> list[list[tuple[int | None, str]]]:
    index = {name: i for i, (name, _) in enumerate(docs)}
    per_doc: list[list[tuple[int | None, str]]] = [[] for _ in docs]
    for node in nodes:
        per_doc[index[node.ref_doc_id]].append((node.start_char_idx, node.text))
    return per_doc


# -- offset checks -----------------------------------------------------------------------------------------------
def check_offsets(text: str, chunks: list[tuple[int | None, str]]) -> dict[str, int]:
    """Misplacement counts for one document's chunks (no overlap expected), see the module docstring."""
    res = {"chunks": len(chunks), "wrong_text": 0, "out_of_order": 0, "earlier_dup": 0, "misplaced": 0, "max_len": 0}
    prev_start, prev_end = -1, 0
    for start, chunk in chunks:
        res["max_len"] = max(res["max_len"], len(chunk))
        bad = False
        if start is None or start < 0 or text[start : start + len(chunk)] != chunk:
            res["wrong_text"] += 1
            bad = True
        if start is None or start <= prev_start:
            res["out_of_order"] += 1
            bad = True
        if (
            start is not None
            and not bad
            and start < prev_end
            and text.find(chunk, prev_end) != -1
        ):
            res["earlier_dup"] += 1
            bad = True
        res["misplaced"] += bad
        if start is not None and start >= 0:
            prev_start, prev_end = start, start + len(chunk)
    return res


def sum_checks(texts: list[str], per_doc: list[list[tuple[int | None, str]]]) -> dict[str, int]:
    total = {"chunks": 0, "wrong_text": 0, "out_of_order": 0, "earlier_dup": 0, "misplaced": 0, "max_len": 0}
    if len(per_doc) != len(texts):
        raise RuntimeError(f"offset extraction gave {len(per_doc)} documents for {len(texts)} texts")
    for text, chunks in zip(texts, per_doc):
        for key, value in check_offsets(text, chunks).items():
            total[key] = max(total[key], value) if key == "max_len" else total[key] + value
    return total


# -- memory (one subprocess per tool) ----------------------------------------------------------------------------
def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def memory_child(tool: str, step: int) -> None:
    docs = load_corpus(CORPUS, step)
    spec = make_tool(tool, docs)
    inputs = spec["prepare"]()
    spec["doc"](spec["prepare"]()[:1])  # warm imports / lazy initialisation outside the measurement
    gc.collect()
    baseline = _status_kb("VmRSS") or 0
    method = "VmHWM after clear_refs"
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        method = "ru_maxrss - baseline RSS"
    out = spec["doc"](inputs)
    peak = _status_kb("VmHWM") if method.startswith("VmHWM") else None
    if peak is None:
        method = "ru_maxrss - baseline RSS"
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"tool": tool, "peak_delta_mb": (peak - baseline) / 1024, "baseline_mb": baseline / 1024,
                      "method": method, "n_out": len(out)}))


def measure_memory(tool: str, step: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--memory-child", tool, "--step", str(step)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        return {"tool": tool, "error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- main --------------------------------------------------------------------------------------------------------
def timed(fn: Callable[[Any], Any], arg: Any) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    out = fn(arg)
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="every 10th document (72 docs, 8.5 M chars)")
    mode.add_argument("--full", action="store_true", help="all 714 documents (79.7 M chars)")
    mode.add_argument("--step", type=int, default=None, help="every STEP-th document (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds; the median is reported (>= 3)")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {TOOLS}")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-tool memory subprocesses")
    ap.add_argument("--json", type=Path, help="also write all results to this JSON file")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    step = 10 if args.quick else 1 if args.full else (args.step or 2)
    if args.memory_child:
        memory_child(args.memory_child, step)
        return
    if args.rounds < 3:
        ap.error("--rounds must be >= 3 (the median of fewer runs is not a median worth quoting)")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]

    docs = load_corpus(CORPUS, step)
    texts = [t for _, t in docs]
    n_chars = sum(map(len, texts))
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    print(f"# {len(docs)} documents, {n_chars / 1e6:.2f} M characters ({n_bytes / 1e6:.2f} MB UTF-8), "
          f"chunk_size={CHUNK_SIZE}, overlap=0, {args.rounds} rounds; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs", flush=True)
    specs = {t: make_tool(t, docs) for t in tools}
    # warm-up (imports, regex compilation, lazy tokenizers) on one document, outside the timing
    for spec in specs.values():
        spec["text"](texts[:1])
        spec["doc"](spec["prepare"]()[:1])

    jobs = [(t, api) for t in tools for api in ("text", "doc")]
    times: dict[tuple[str, str], list[float]] = {job: [] for job in jobs}
    checks: dict[tuple[str, str], dict[str, int] | None] = {}
    for r in range(args.rounds):
        order = jobs[r % len(jobs):] + jobs[: r % len(jobs)]
        for tool, api in order:
            spec = specs[tool]
            arg = texts if api == "text" else spec["prepare"]()
            dt, out = timed(spec[api], arg)
            times[(tool, api)].append(dt)
            if r == 0:
                extractor = spec[f"{api}_offsets"]
                checks[(tool, api)] = sum_checks(texts, extractor(out)) if extractor else None
                if checks[(tool, api)] is None:
                    checks[(tool, api)] = {"chunks": sum(map(len, out)), "max_len": max(len(c) for o in out for c in o)}
            del out, arg
        print(f"# round {r + 1}/{args.rounds}: " + ", ".join(f"{t}/{a} {times[(t, a)][-1]:.2f}s" for t, a in jobs),
              flush=True)

    med = {job: statistics.median(v) for job, v in times.items()}
    memory = {} if args.no_memory else {t: measure_memory(t, step) for t in tools}

    print()
    print("| tool | text API | text Mchar/s | doc API | doc Mchar/s | build s (doc-text) | peak RSS MB | chunks | "
          "max len | misplaced (wrong/order/dup) |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---|")
    for tool in tools:
        spec = specs[tool]
        t_text, t_doc = med[(tool, "text")], med[(tool, "doc")]
        chk = checks[(tool, "doc")] or {}
        if "misplaced" in chk:
            mis = f"{chk['misplaced']} ({chk['wrong_text']}/{chk['out_of_order']}/{chk['earlier_dup']})"
        else:
            mis = "n/a"
        text_chk = checks[(tool, "text")] or {}
        if "misplaced" in text_chk and tool != "semantic_text_splitter":
            mis += f"; text API {text_chk['misplaced']}"
        mem = memory.get(tool, {})
        mem_s = f"{mem['peak_delta_mb']:.0f}" if "peak_delta_mb" in mem else ("-" if not mem else "error")
        print(f"| {spec['label']} | {spec['text_api']} | {n_chars / 1e6 / t_text:.1f} | {spec['doc_api']} | "
              f"{n_chars / 1e6 / t_doc:.1f} | {t_doc - t_text:.2f} | {mem_s} | {chk.get('chunks', '?')} | "
              f"{chk.get('max_len', '?')} | {mis} |")
    if "ours" in tools:
        print()
        for tool in tools:
            if tool != "ours":
                print(f"# ours / {tool}: text {med[(tool, 'text')] / med[('ours', 'text')]:.2f}x, "
                      f"end to end {med[(tool, 'doc')] / med[('ours', 'doc')]:.2f}x")
    if memory:
        methods = ", ".join(sorted({str(m["method"]) for m in memory.values() if "method" in m}))
        print(f"# memory: peak RSS above the post-load baseline, one subprocess per tool, doc API ({methods})")
    if args.json:
        args.json.write_text(json.dumps({
            "documents": len(docs), "characters": n_chars, "rounds": args.rounds,
            "times": {f"{t}/{a}": v for (t, a), v in times.items()},
            "medians": {f"{t}/{a}": v for (t, a), v in med.items()},
            "checks": {f"{t}/{a}": v for (t, a), v in checks.items()},
            "memory": memory,
        }, indent=1))


if __name__ == "__main__":
    main()
