"""The documents of a finished run, found again from its results: the built-in synthetic contracts are regenerated,
LegalBench-RAG is read from its data folder, a folder of your own contracts (``eval --folder``) from that folder with
its questions file; either way they are checked against the run's per-query records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from llama_index_sac.apps.benchmark.results import RunResults, parse_results

__all__ = ["benchmark_texts", "report_texts"]


def benchmark_texts(results: RunResults | Mapping[str, Any], data_dir: str | Path | None = None) -> dict[str, str]:
    """The documents of the run's benchmark (doc id -> text), checked against the run's queries.

    The built-in synthetic contracts are regenerated (same ``n_documents`` and ``seed``); a folder run's documents are
    read again from ``data_dir`` (default: the folder the run recorded) as the run read them; LegalBench-RAG is read
    from ``data_dir`` (default: the folder the run recorded) with the run's datasets, benchmark folder and scope,
    taking every test of those datasets, so that any sample of them is covered.

    Args:
        results: what ``run_evaluation`` returns, or a results dictionary (a loaded ``results.json``).
        data_dir: the LegalBench-RAG data folder, or the folder of a folder run (ignored for the synthetic contracts).

    Returns:
        Document id -> text; a superset of the documents the run's records refer to.

    Raises:
        ValueError: not results of ``llama-sac eval`` (``ResultsFormatError``); a custom benchmark (no loader);
            LegalBench-RAG without a data folder; documents whose queries or gold spans differ from the run's records
            (another seed, data folder or corpus version); ``LegalBenchRAGError`` for unreadable data.
    """
    from llama_index_sac.apps.benchmark.factories import load_benchmark

    run = parse_results(results)
    options = run.benchmark.loader_options(data_dir)
    if options.source == "legalbenchrag":
        if options.data_dir is None:
            raise ValueError("results of LegalBench-RAG: reading its documents needs the data folder (data_dir)")
        options = options.model_copy(update={"sampling": "all", "sample": None})
    bench, _ = load_benchmark(options)
    queries = {q.query_id: q for q in bench.queries}
    for config in run.configs:
        for record in config.records or []:
            query = queries.get(record.query_id)
            if query is None or query.query != record.query or [tuple(s) for s in query.gold] != record.gold:
                raise ValueError(f"the documents of {bench.description} do not match the run: query "
                                 f"{record.query_id!r} is missing or differs")
    return dict(bench.documents)


def report_texts(results: RunResults, data_dir: Path | None, default_data_dir: Path,
                 say: Callable[[str], None]) -> dict[str, str] | None:
    """The documents of a run with records, for the drill-down of ``llama-sac report --html``; ``None`` (said with
    ``say``) when the run has no records or its documents are not found.

    The synthetic contracts are regenerated; an ``eval --folder`` run's documents are read again from ``data_dir``,
    else the folder the run recorded; LegalBench-RAG from ``data_dir``, else the recorded folder, else
    ``default_data_dir``, when present.

    Raises:
        ValueError: see :func:`benchmark_texts`.
    """
    if all(c.records is None for c in results.configs):
        return None
    source, recorded = results.benchmark.source, results.benchmark.data_dir
    if source == "synthetic":
        return benchmark_texts(results)
    if source == "folder":  # eval --folder: the documents read again from the folder, as the run read them
        folder = data_dir or (Path(recorded) if recorded is not None else None)
        if folder is None or not folder.is_dir():
            say(f"note: the folder of the run ({folder}) was not found: the drill-down shows offsets only "
                "(--data-dir names the folder)")
            return None
        say(f"reading the documents from {folder}")
        return benchmark_texts(results, folder)
    found = [Path(d) for d in (recorded, default_data_dir) if d is not None and Path(d).is_dir()]
    folder = data_dir if data_dir is not None else found[0] if found else None
    if source != "legalbenchrag" or folder is None:
        what = "documents of a custom benchmark" if source != "legalbenchrag" else "LegalBench-RAG data not found"
        say(f"note: {what}: the drill-down shows offsets only (--data-dir names the data folder)")
        return None
    say(f"reading the LegalBench-RAG documents from {folder}")
    return benchmark_texts(results, folder)
