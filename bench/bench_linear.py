"""Benchmark (issue 13): every node parser is linear in its input, adversarial text included.

For each parser (recursive with the default separators, recursive with the legal preset, semantic, hybrid) and each
adversarial input kind (below), a size-doubling series: the text at ``base * 2**k`` characters for ``k = 0 ..
sizes - 1``, parsed with ``get_nodes_from_documents`` (the whole path: input checks, splitting, embedding, node
building). Printed per size: time per input character (best of ``--repeat`` runs) and peak traced memory per input
character (``tracemalloc``, in a separate run so tracing does not slow the timed ones); the ratios
``time(2n) / time(n)`` between consecutive sizes (about 2 for a linear parser, about 4 for a quadratic one); and the
growth of the time per character from the smallest to the largest size (about 1 for a linear parser, below 1 while
fixed costs still weigh, ``2**(sizes-1)`` = 16 for a quadratic one over 5 sizes). On a shared machine a single ratio
can jump (another job); the growth column, over a 16-fold size range, is the robust signal.

The semantic and hybrid parsers use :class:`CheapEmbedding` (16 character counts: deterministic, no model, linear
in the text) so the series measures the parsers, not a transformer; sentence splitting is nupunkt, as by default.

A series stops early when one size takes longer than ``--max-seconds`` (a regression shows as ``stopped``, not as
a hang). Usage::

    python bench/bench_linear.py                 # base 50,000 characters, 5 sizes (up to 800,000), 3 repeats
    python bench/bench_linear.py --quick         # base 10,000, 4 sizes, 1 repeat (~1 minute)
    python bench/bench_linear.py --parsers legal --kinds blank_lines --base 100000 --sizes 6
    python bench/bench_linear.py --json /tmp/bench_linear.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.schema import Document  # noqa: E402

from llama_index_sac.node_parser import (  # noqa: E402
    HybridNodeParser,
    RecursiveCharacterNodeParser,
    SemanticNodeParser,
    SpanNodeParser,
)

_PROSE = "The Supplier shall pay the fees within thirty days of the invoice date. "

#: Input kinds: name -> (what it is, builder of a text of about n characters).
KINDS: dict[str, tuple[str, Callable[[int], str]]] = {
    "prose": ("ordinary sentences (reference)", lambda n: _PROSE * (n // len(_PROSE))),
    "blank_lines": ("a run of n newlines before a heading", lambda n: "Clause.\n" + "\n" * n + "ARTICLE 2 Terms."),
    "blank_ws_lines": ("n/3 lines of a space and a tab", lambda n: "Clause.\n" + " \t\n" * (n // 3) + "End."),
    "separator_run": ("'. ' repeated", lambda n: ". " * (n // 2)),
    "alternating": ("'\\n. ' repeated (line, sentence, space)", lambda n: "\n. " * (n // 3)),
    "giant_word": ("one word of n letters", lambda n: "x" * n),
    "spaces": ("a run of n spaces", lambda n: "a" + " " * n + "b"),
    "tabs": ("a run of n tabs", lambda n: "a" + "\t" * n + "b"),
    "headings": ("'\\nARTICLE 1\\n' repeated", lambda n: "\nARTICLE 1\n" * (n // 11)),
    "glued_ends": ("'.\"' repeated (nupunkt's quadratic case)", lambda n: '."' * (n // 2)),
    "combining": ("one letter and n combining accents", lambda n: "e" + "\u0301" * n),
}


class CheapEmbedding(BaseEmbedding):
    """Deterministic 16-dimensional vectors: the counts of 16 characters (+1), linear in the text, no model."""

    model_name: str = "cheap-char-counts"

    @classmethod
    def class_name(cls) -> str:
        return "CheapEmbedding"

    @staticmethod
    def _vector(text: str) -> list[float]:
        return [float(text.count(c) + 1) for c in "etaoinsrhl.,;\n x"]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


def make_parsers() -> dict[str, SpanNodeParser]:
    return {
        "recursive": RecursiveCharacterNodeParser(),
        "legal": RecursiveCharacterNodeParser.legal(),
        "semantic": SemanticNodeParser(embed_model=CheapEmbedding(), on_embed_overflow="ignore"),
        "hybrid": HybridNodeParser(
            section_parser=SemanticNodeParser(embed_model=CheapEmbedding(), max_chunk_size=None),
            on_embed_overflow="ignore",
        ),
    }


def _parse(parser: SpanNodeParser, text: str) -> int:
    return len(parser.get_nodes_from_documents([Document(text=text, id_="doc")]))


def measure(parser: SpanNodeParser, text: str, repeat: int) -> dict[str, float]:
    """Best time of ``repeat`` parses and the traced peak of one more, both per input character."""
    times = []
    nodes = 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        nodes = _parse(parser, text)
        times.append(time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    try:
        _parse(parser, text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"chars": len(text), "seconds": min(times), "ns_per_char": min(times) / len(text) * 1e9,
            "peak_bytes_per_char": peak / len(text), "nodes": nodes}


def series(parser: SpanNodeParser, build: Callable[[int], str], sizes: list[int], repeat: int,
           max_seconds: float) -> tuple[list[dict[str, float]], bool]:
    """Measurements at each size, stopping after one that took longer than ``max_seconds``."""
    out: list[dict[str, float]] = []
    for n in sizes:
        out.append(measure(parser, build(n), repeat))
        if out[-1]["seconds"] > max_seconds:
            return out, n != sizes[-1]
    return out, False


def ratios(rows: list[dict[str, float]]) -> list[float]:
    """``time(2n) / time(n)`` for consecutive sizes (times scaled to exact doubling of the character count)."""
    out = []
    for a, b in zip(rows, rows[1:]):
        scale = (2 * a["chars"]) / b["chars"]  # builders round n down, so sizes double only approximately
        out.append(b["seconds"] * scale / a["seconds"] if a["seconds"] > 0 else float("nan"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="base 10,000, 4 sizes, 1 repeat")
    ap.add_argument("--base", type=int, help="characters of the smallest size (default 50,000; quick 10,000)")
    ap.add_argument("--sizes", type=int, help="number of doubling sizes (default 5; quick 4)")
    ap.add_argument("--repeat", type=int, help="timed runs per size, best kept (default 3; quick 1)")
    ap.add_argument("--max-seconds", type=float, default=20.0, help="stop a series after a slower size")
    ap.add_argument("--parsers", nargs="*", help="subset of: recursive legal semantic hybrid")
    ap.add_argument("--kinds", nargs="*", help=f"subset of: {' '.join(KINDS)}")
    ap.add_argument("--json", help="write every measurement to this file")
    args = ap.parse_args(argv)
    base = args.base or (10_000 if args.quick else 50_000)
    n_sizes = args.sizes or (4 if args.quick else 5)
    repeat = args.repeat or (1 if args.quick else 3)
    parsers = make_parsers()
    chosen_parsers = args.parsers or list(parsers)
    chosen_kinds = args.kinds or list(KINDS)
    for name in chosen_parsers:
        if name not in parsers:
            print(f"error: unknown parser {name!r} (known: {' '.join(parsers)})", file=sys.stderr)
            return 2
    for kind in chosen_kinds:
        if kind not in KINDS:
            print(f"error: unknown kind {kind!r} (known: {' '.join(KINDS)})", file=sys.stderr)
            return 2
    if base < 100 or n_sizes < 2 or repeat < 1:
        print("error: --base must be >= 100, --sizes >= 2, --repeat >= 1", file=sys.stderr)
        return 2
    sizes = [base * 2**k for k in range(n_sizes)]
    warnings.simplefilter("ignore")  # e.g. a whitespace-only document gives no node: not what is measured here
    results: dict[str, Any] = {"sizes": sizes, "repeat": repeat, "rows": []}
    for parser in parsers.values():  # load nupunkt, compile regexes: not part of the first size's time
        _parse(parser, "Warm up. ARTICLE 1 x.\n\n(a) y. " * 20)
    header = ("| parser | input | " + " | ".join(f"{n:,} ch" for n in sizes)
              + " | t(2n)/t(n) | growth | max B/char |")
    print(f"base {base:,} characters, {n_sizes} sizes, best of {repeat}; cells: ns per character / peak bytes per "
          "character (tracemalloc)\n")
    print(header)
    print("|---|---|" + "---:|" * n_sizes + "---|---:|---:|")
    for pname in chosen_parsers:
        for kind in chosen_kinds:
            rows, stopped = series(parsers[pname], KINDS[kind][1], sizes, repeat, args.max_seconds)
            cells = [f"{r['ns_per_char']:,.0f} / {r['peak_bytes_per_char']:.1f}" for r in rows]
            cells += ["stopped"] * (n_sizes - len(rows)) if stopped else []
            rs = ratios(rows)
            ratio_cell = " ".join(f"{r:.2f}" for r in rs)
            mem = max(r["peak_bytes_per_char"] for r in rows)
            growth = rows[-1]["ns_per_char"] / rows[0]["ns_per_char"]
            print(f"| {pname} | {kind} | " + " | ".join(cells) + f" | {ratio_cell} | {growth:.2f} | {mem:.1f} |",
                  flush=True)
            results["rows"].append({"parser": pname, "kind": kind, "measurements": rows, "ratios": rs,
                                    "median_ratio": statistics.median(rs) if rs else None, "growth": growth,
                                    "stopped": stopped})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
