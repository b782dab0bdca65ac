"""Benchmark (issue 38): contracts printed to PDF are chunked at sentence ends as their .txt, and retrieve as well.

The contracts are the LegalBench-RAG-mini documents of one dataset (``--dataset``, default ``contractnli``: 18 NDAs
and their 194 questions). Each ``.txt`` is printed to PDF by headless Chromium, as a word processor's export would
look: one HTML paragraph per line of the text, 11 pt serif, justified, A4/Letter default margins, no header or footer
(``--header-footer`` keeps Chromium's date, title, URL and page numbers on every page). Written under ``--out``:
``txt/`` and ``pdf/`` (the same documents), ``questions-txt.jsonl`` and ``questions-pdf.jsonl`` (the same questions,
``quote`` = the gold passage of the .txt; for the PDF the file name ends in ``.pdf``).

Measured and printed:

1. **Sentence ends**: the share of chunks (the default parser, ``RecursiveCharacterNodeParser()``) whose last
   non-blank character ends a sentence (``. ! ? ;`` or ``:``, optionally followed by a closing quote or bracket) or the
   document, for the .txt folder and for the .pdf folder read as ``llama-sac ingest`` reads it; and their ratio
   (goal: at least 0.9).
2. The two ``llama-sac eval --folder`` commands that score both folders on the same questions (default
   configuration); with ``--eval`` they are run and their DRM / precision / recall at k = 1..``--k`` printed side by
   side (goal: within 1 point). Embedding is cached under ``--cache-dir``.

Usage::

    python bench/bench_pdf_chunking.py --data-dir ../shared/data/legalbenchrag --out /tmp/pdfbench
    python bench/bench_pdf_chunking.py --data-dir ../shared/data/legalbenchrag --out /tmp/pdfbench --eval \\
        --cache-dir /tmp/pdfbench/cache
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_SENTENCE_END = re.compile(r"[.!?;:][\"'”’)\]]*\s*$")
_STYLE = "body{font: 11pt serif; text-align: justify} p{margin: 0 0 6pt 0}"


def _corpus_texts(data_dir: Path, names: set[str]) -> dict[str, str]:
    """The texts of the corpus files ``names`` (``dataset/file.txt``), from ``corpus/`` or ``corpus.tar.xz``."""
    folder = data_dir / "corpus"
    if folder.is_dir():
        return {name: (folder / name).read_text(encoding="utf-8") for name in names}
    texts: dict[str, str] = {}
    with tarfile.open(data_dir / "corpus.tar.xz") as archive:
        for member in archive:
            name = member.name.removeprefix("./").removeprefix("corpus/")
            if name in names and member.isfile():
                handle = archive.extractfile(member)
                assert handle is not None
                texts[name] = handle.read().decode("utf-8")
    missing = names - set(texts)
    if missing:
        raise SystemExit(f"error: not in the corpus: {sorted(missing)[:3]}")
    return texts


def _print_pdf(text: str, out: Path, profile: Path, header_footer: bool) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("error: Chromium is not installed (it prints the PDFs)")
    body = "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n"))
    source = out.with_suffix(".html")
    source.write_text(f'<html><head><meta charset="utf-8"><title>{html.escape(out.stem)}</title><style>{_STYLE}'
                      f"</style></head><body>{body}</body></html>", encoding="utf-8")
    flags = [] if header_footer else ["--no-pdf-header-footer"]
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={profile}", *flags, f"--print-to-pdf={out}", source.as_uri()],
                   check=True, capture_output=True, timeout=300)
    source.unlink()


def build(data_dir: Path, dataset: str, out: Path, header_footer: bool) -> None:
    """Write ``out/txt``, ``out/pdf`` and the two questions files (module docstring)."""
    tests = json.loads((data_dir / "benchmarks_mini" / f"{dataset}.json").read_text(encoding="utf-8"))["tests"]
    names = {s["file_path"] for t in tests for s in t["snippets"]}
    texts = _corpus_texts(data_dir, names)
    for kind in ("txt", "pdf"):
        (out / kind).mkdir(parents=True, exist_ok=True)
    for name, text in sorted(texts.items()):
        stem = Path(name).stem
        (out / "txt" / f"{stem}.txt").write_text(text, encoding="utf-8")
        target = out / "pdf" / f"{stem}.pdf"
        if not target.exists():
            _print_pdf(text, target, out / "chromium-profile", header_footer)
    for kind in ("txt", "pdf"):
        with open(out / f"questions-{kind}.jsonl", "w", encoding="utf-8") as handle:
            for number, test in enumerate(tests):
                snippets = test["snippets"]
                file = f"{Path(snippets[0]['file_path']).stem}.{kind}"
                quotes = [texts[s["file_path"]][s["span"][0]: s["span"][1]] for s in snippets
                          if s["file_path"] == snippets[0]["file_path"]]
                handle.write(json.dumps({"id": f"q{number}", "question": test["query"], "file": file,
                                         "quote": quotes}, ensure_ascii=False) + "\n")


def sentence_ends(folder: Path) -> tuple[int, int]:
    """(chunks ending a sentence or the document, chunks) of the folder's documents, read as ingest reads them."""
    from llama_index_sac import RecursiveCharacterNodeParser
    from llama_index_sac.apps.ingest.files import read_file

    parser = RecursiveCharacterNodeParser()
    ended = total = 0
    for path in sorted(folder.iterdir()):
        document = read_file(path, doc_id=path.name)
        for node in parser([document]):
            total += 1
            start, end = node.start_char_idx, node.end_char_idx  # type: ignore[attr-defined]
            ended += bool(_SENTENCE_END.search(document.text[start:end])) or not document.text[end:].strip()
    return ended, total


def _eval(out: Path, kind: str, cache_dir: Path | None, k: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "llama_index_sac.apps.cli", "eval", "--folder", str(out / kind), "--questions",
               str(out / f"questions-{kind}.jsonl"), "-c", "default", "--k", ",".join(map(str, range(1, k + 1))),
               "-o", str(out / f"eval-{kind}")]
    if cache_dir is not None:
        command += ["--cache-dir", str(cache_dir)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    results: dict[str, Any] = json.loads((out / f"eval-{kind}" / "results.json").read_text(encoding="utf-8"))
    return results


def _overall(results: dict[str, Any]) -> dict[int, dict[str, float]]:
    """k -> {drm, precision, recall} of the default configuration, overall (read from results.json)."""
    run = next(c for c in results["configs"] if c["config"]["name"] == "default")
    return {int(k): {m: float(row[m]) for m in ("drm", "precision", "recall")}
            for k, row in run["aggregates"]["overall"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--dataset", default="contractnli")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--header-footer", action="store_true", help="keep Chromium's header and footer")
    parser.add_argument("--eval", action="store_true", help="run the two eval commands")
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--k", type=int, default=8)
    args = parser.parse_args()
    build(args.data_dir, args.dataset, args.out, args.header_footer)
    (t_end, t_all), (p_end, p_all) = sentence_ends(args.out / "txt"), sentence_ends(args.out / "pdf")
    t_share, p_share = t_end / t_all, p_end / p_all
    print(f"chunks ending a sentence: txt {t_end}/{t_all} = {t_share:.1%}; pdf {p_end}/{p_all} = {p_share:.1%}; "
          f"pdf/txt = {p_share / t_share:.3f}")
    if not args.eval:
        return
    tables = {kind: _overall(_eval(args.out, kind, args.cache_dir, args.k)) for kind in ("txt", "pdf")}
    print("k  " + "  ".join(f"{kind}:{m:<9}" for m in ("drm", "precision", "recall") for kind in ("txt", "pdf")))
    for k in sorted(tables["txt"]):
        cells = [f"{tables[kind][k][m] * 100:13.2f}" for m in ("drm", "precision", "recall") for kind in ("txt", "pdf")]
        print(f"{k:<3}" + " ".join(cells))


if __name__ == "__main__":
    main()
