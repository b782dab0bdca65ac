"""The report a user can open: one self-contained HTML page of an evaluation run (``llama-sac report RUN --html``).

The page holds the metric tables (per metric, rows = dataset x configuration, columns = k), the plots (PNG made with
matplotlib's Agg backend, embedded as ``data:`` URIs), the most-confused document pairs, and a per-query drill-down
of two configurations side by side (by default the run's first configuration against ``default``, the best setup
measured, when the run has it): the query, the gold span(s) and, per configuration, the top-``k`` chunks with
document id, character offsets, the document's summary and a mark (:func:`chunk_mark`). Nothing is fetched from the
network (inline CSS, a few lines of inline JS for filtering; the page is complete without JS) and every string taken
from the results or the documents is escaped with :func:`html.escape` (document text is untrusted).

Chunk and gold TEXT needs the documents (``texts``: doc id -> text, e.g. from
:func:`.run_documents.benchmark_texts`); without them the drill-down shows offsets and says
so. Published (slim) results without per-query records give the tables, plots and confusions, and a note that the
drill-down needs a run with records.

The results are :class:`~llama_index_sac.apps.benchmark.results.RunResults` (what ``run_evaluation`` returns), or a
results dictionary of any schema version (parsed with :func:`~llama_index_sac.apps.benchmark.results.parse_results`).
"""

from __future__ import annotations

import base64
import errno
import html
import os
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llama_index_sac.apps.benchmark._html_assets import CSS, JS
from llama_index_sac.apps.benchmark.report import METRIC_LABELS, write_plots
from llama_index_sac.apps.benchmark.results import ConfigResult, QueryResult, RunResults, Span, parse_results

__all__ = ["MARKS", "chunk_mark", "write_html_report"]

#: Mark of a retrieved chunk -> label shown on the page.
MARKS: dict[str, str] = {"hit": "HIT", "right-doc": "RIGHT DOC", "wrong-doc": "WRONG DOC", "empty": "EMPTY"}
_TABLE_METRICS = ("drm", "precision", "recall", "hit_rate", "mrr")
_LOWER_IS_BETTER = {"drm"}
_e = html.escape  # quote=True by default: safe in text and in double-quoted attributes


def _scopes(run: RunResults) -> list[str]:
    return [*run.datasets, "overall"] if len(run.datasets) > 1 else run.datasets


def _model_label(run: RunResults) -> str:
    model = run.settings.embed_model
    return " ".join(model[key] for key in ("class_name", "model_name") if key in model)


def _value(config: ConfigResult, scope: str, k: int, metric: str) -> Any:
    return getattr(config.aggregates.at(scope, k), metric)


# -- marks -------------------------------------------------------------------------------------------------------


def chunk_mark(chunk: Sequence[Any], gold: Sequence[Sequence[Any]]) -> str:
    """The mark of one retrieved chunk ``(doc_id, start, end)`` against the query's gold spans (same shape; offsets
    in characters, half-open), with the conventions of :mod:`llama_index_sac.evaluation.metrics` (zero-length spans
    count nowhere): ``"hit"`` (shares a character with a gold span), ``"right-doc"`` (a gold document, no shared
    character), ``"wrong-doc"`` (another document), ``"empty"`` (a zero-length chunk)."""
    doc_id, start, end = chunk
    if end <= start:
        return "empty"
    spans = [(s, e) for d, s, e in gold if d == doc_id and e > s]
    if any(s < end and start < e for s, e in spans):
        return "hit"
    return "right-doc" if spans else "wrong-doc"


# -- page parts --------------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _metric_tables(run: RunResults) -> str:
    ks, configs, out = run.settings.ks, run.configs, []
    for metric in _TABLE_METRICS:
        label = METRIC_LABELS.get(metric, {"hit_rate": "hit rate@k (higher is better)",
                                           "mrr": "MRR@k (higher is better)"}.get(metric, metric))
        head = "".join(f"<th>k={k}</th>" for k in ks)
        rows = []
        for scope in _scopes(run):
            for i, config in enumerate(configs):
                cells = []
                for k in ks:
                    column = [v for v in (_value(c, scope, k, metric) for c in configs) if v is not None]
                    value = _value(config, scope, k, metric)
                    best = len(set(column)) > 1 and value == (min(column) if metric in _LOWER_IS_BETTER
                                                              else max(column))
                    cells.append(f'<td class="num{" best" if best else ""}" data-config="{_e(config.name)}" '
                                 f'data-scope="{_e(scope)}" data-k="{k}" data-metric="{metric}">{_fmt(value)}</td>')
                first = f'<th rowspan="{len(configs)}" scope="rowgroup">{_e(scope)}</th>' if i == 0 else ""
                rows.append(f"<tr>{first}<td>{_e(config.name)}</td>{''.join(cells)}</tr>")
        out.append(f'<div class="block"><h3>{_e(label)}</h3><table class="metric" data-metric="{metric}"><thead>'
                   f"<tr><th>dataset</th><th>configuration</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
                   "</table></div>")
    counts = ", ".join(f"{_e(name)}: {n}" for name, n in run.benchmark.datasets.items())
    undefined = ", ".join(f"{_e(c.name)}: {_value(c, _scopes(run)[-1], ks[0], 'drm_undefined')}" for c in configs)
    out = ['<div class="blocks">', *out, "</div>"]
    out.append(f'<p class="note">Queries per dataset: {counts}. Overall = unweighted mean of the dataset means. '
               f"Best value of each column in bold (when they differ). Queries with nothing retrieved at k={ks[0]} "
               f"(DRM undefined, left out of the DRM mean): {undefined}.</p>")
    return "".join(out)


def _plots(run: RunResults) -> str:
    with tempfile.TemporaryDirectory(prefix="sac-plots-") as folder:
        paths = write_plots(run, folder)
        images = [base64.b64encode(path.read_bytes()).decode("ascii") for path in paths]
    return "".join(f'<figure><img alt="{_e(METRIC_LABELS.get(p.stem[:-5], p.stem))} against k" '
                   f'src="data:image/png;base64,{data}"></figure>' for p, data in zip(paths, images))


def _confusion_tables(run: RunResults, top: int = 10) -> str:
    out = [f'<p class="note">Which documents steal retrievals from which: per pair, the number of top-'
           f"{run.settings.confusion_k} chunks taken from the second document (and of queries affected) when the "
           f"gold is in the first; the {top} most frequent pairs of each configuration.</p>"]
    for config in run.configs:
        rows = "".join(f"<tr><td>{_e(p.gold)}</td><td>{_e(p.retrieved)}</td><td class=\"num\">{p.chunks}</td>"
                       f'<td class="num">{p.queries}</td></tr>' for p in config.confusions[:top]
                       ) or '<tr><td colspan="4">no chunk from a wrong document</td></tr>'
        out.append(f'<h3>{_e(config.name)}</h3><table class="confusions" data-config="{_e(config.name)}">'
                   "<thead><tr><th>gold document</th><th>stolen by</th><th>chunks</th><th>queries</th></tr></thead>"
                   f"<tbody>{rows}</tbody></table>")
    return "".join(out)


def _text(texts: Mapping[str, str] | None, doc_id: str, start: int, end: int, gold: Sequence[Span] = ()) -> str:
    """The escaped text of ``doc_id[start:end]``, gold characters inside ``<mark>``; "" without texts."""
    if texts is None or doc_id not in texts:
        return "" if texts is None else '<p class="missing">(document text not available)</p>'
    cuts = sorted((max(s, start), min(e, end)) for d, s, e in gold if d == doc_id and s < end and start < e)
    parts, at = [], start
    for s, e in cuts:
        if e > max(s, at):
            parts.append(_e(texts[doc_id][at:max(s, at)]) + f"<mark>{_e(texts[doc_id][max(s, at):e])}</mark>")
            at = e
    parts.append(_e(texts[doc_id][at:end]))
    return f'<div class="text">{"".join(parts)}</div>'


def _column(config: ConfigResult, record: QueryResult | None, k: int,
            texts: Mapping[str, str] | None) -> tuple[str, dict[str, int]]:
    counts = dict.fromkeys(MARKS, 0)
    head = f'<div class="col" data-config="{_e(config.name)}"><h4>{_e(config.name)}</h4>'
    if record is None:
        return f"{head}<p>(query not in this configuration)</p></div>", counts
    scores = None if record.scores is None else record.scores.get(str(k))
    items = []
    for rank, (doc_id, start, end) in enumerate(record.retrieved[:k], start=1):
        mark = chunk_mark((doc_id, start, end), record.gold)
        counts[mark] += 1
        summary = config.summaries.get(doc_id)
        items.append(
            f'<li class="chunk {mark}" data-mark="{mark}" data-doc="{_e(doc_id)}" data-start="{start}" '
            f'data-end="{end}"><div class="where"><span class="badge {mark}">{MARKS[mark]}</span> #{rank} '
            f"<code>{_e(doc_id)}</code> [{start}, {end})</div>"
            + (f'<p class="summary"><b>summary:</b> {_e(summary)}</p>' if summary is not None else "")
            + _text(texts, doc_id, start, end, record.gold) + "</li>")
    line = ("ineligible (no gold span): left out of every mean" if scores is None else
            f"precision {_fmt(scores.precision)} · recall {_fmt(scores.recall)} · DRM {_fmt(scores.drm)}")
    note = "" if config.summaries else '<p class="note">no document summaries in this configuration</p>'
    return f'{head}<p class="scores">{line}</p>{note}<ol>{"".join(items)}</ol></div>', counts


def _drilldown(pair: list[ConfigResult], k: int, texts: Mapping[str, str] | None) -> str:
    by_config = [{r.query_id: r for r in c.records or []} for c in pair]
    out = []
    for n, query_id in enumerate(dict.fromkeys(q for records in by_config for q in records)):
        record = next(r[query_id] for r in by_config if query_id in r)
        columns = [_column(c, r.get(query_id), k, texts) for c, r in zip(pair, by_config)]
        gold = "".join(f"<li><code>{_e(d)}</code> [{s}, {e})" + _text(texts, d, s, e) + "</li>"
                       for d, s, e in record.gold)
        tally = " ".join(f'<span class="tally">{_e(c.name)}: ' + ", ".join(
            f'<span class="badge {m}">{n} {MARKS[m]}</span>' for m, n in counts.items() if n) + "</span>"
            for c, (_, counts) in zip(pair, columns))
        data = " ".join(f'data-wrong-{side}="{counts["wrong-doc"]}" data-hits-{side}="{counts["hit"]}"'
                        for side, (_, counts) in zip("ab", columns))
        out.append(
            f'<details class="query" id="q-{n}" data-query-id="{_e(query_id)}" {data}{" open" if n < 2 else ""}>'
            f'<summary><code>{_e(query_id)}</code> <span class="dataset">{_e(record.dataset)}</span> '
            f'<span class="qtext">{_e(record.query)}</span><br>{tally}</summary>'
            f'<div class="gold"><h4>gold</h4><ul>{gold}</ul></div>'
            f'<div class="pair">{"".join(part for part, _ in columns)}</div></details>')
    return "".join(out)


def _check_texts(texts: Any, pair: list[ConfigResult], k: int) -> None:
    if not isinstance(texts, Mapping) or not all(isinstance(d, str) and isinstance(t, str) for d, t in texts.items()):
        raise TypeError(f"texts must be a mapping document id -> text (str -> str), got {type(texts).__name__}")
    for config in pair:
        for record in config.records or []:
            for doc_id, start, end in [*record.gold, *record.retrieved[:k]]:
                if doc_id in texts and not 0 <= start <= end <= len(texts[doc_id]):
                    raise ValueError(f"texts: span [{start}, {end}) of query {record.query_id!r} is outside "
                                     f"{doc_id!r} ({len(texts[doc_id])} characters): texts of another corpus?")


#: The configuration the drill-down compares with by default (the best setup measured, ``-c default``).
DEFAULT_CONFIG = "default"


def _pair(run: RunResults, compare: Any) -> list[ConfigResult]:
    names = [c.name for c in run.configs]
    if compare is None:  # the run's first configuration against default, when the run has it
        if DEFAULT_CONFIG in names and len(names) > 1:
            other = next(c for c in run.configs if c.name != DEFAULT_CONFIG)
            return [other, run.config(DEFAULT_CONFIG)]
        return run.configs[:2]
    if isinstance(compare, str) or not isinstance(compare, Sequence) or len(compare) != 2 or not all(
            isinstance(n, str) for n in compare):
        raise TypeError(f"compare must be a pair of configuration names, got {compare!r:.100}")
    if unknown := [n for n in compare if n not in names]:
        raise ValueError(f"compare: unknown configuration(s) {', '.join(map(repr, unknown))}; the run has "
                         f"{', '.join(map(repr, names))}")
    if compare[0] == compare[1]:
        raise ValueError(f"compare: two different configurations are needed, got {compare[0]!r} twice")
    return [run.config(name) for name in compare]


def write_html_report(results: RunResults | Mapping[str, Any], out_path: str | Path, *,
                      texts: Mapping[str, str] | None = None, compare: Sequence[str] | None = None,
                      k: int | None = None) -> Path:
    """Write the run's report as ONE self-contained HTML file (see the module docstring).

    Args:
        results: what ``run_evaluation`` returns, or a results dictionary (a loaded ``results.json``), with or
            without per-query records.
        out_path: the ``.html`` file; its folder must exist. Written to a temporary file beside it, then renamed:
            never left half-written.
        texts: document id -> text, for the chunk and gold text of the drill-down (offsets in characters index
            it); ``None``: offsets only, said on the page.
        compare: the two configuration names shown side by side (default: the run's first configuration and
            ``default`` when the run has it, else its first two).
        k: chunks shown per query, one of the run's k values (default: the confusion k, or the largest k below it).

    Returns:
        ``out_path`` as a :class:`~pathlib.Path`.

    Raises:
        TypeError: ``results`` is neither RunResults nor a mapping, ``texts`` is not a ``str -> str`` mapping,
            ``compare`` is not a pair of names, ``k`` is not an int.
        ValueError: results that are not results of ``llama-sac eval`` (``ResultsFormatError``), an unknown or
            repeated ``compare`` name, ``k`` not among the run's k values, a span of the run outside its document
            in ``texts``.
        OSError: the file cannot be written.
    """
    if not isinstance(results, (RunResults, Mapping)):
        raise TypeError(f"results must be RunResults or a results dictionary, got {type(results).__name__}")
    run = parse_results(results)
    pair = _pair(run, compare)
    names = [c.name for c in pair]
    ks = run.settings.ks
    if k is None:
        k = max([x for x in ks if x <= run.settings.confusion_k] or [min(ks)])
    elif type(k) is not int:
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    elif k not in ks:
        raise ValueError(f"k must be one of the run's k values {ks}, got {k}")
    if texts is not None:
        _check_texts(texts, pair, k)
    bench = run.benchmark
    meta = [f"{_e(bench.description or bench.name)}: {bench.n_documents} documents, {bench.n_queries} queries",
            f"k = {', '.join(map(str, ks))}; embedding model <code>{_e(_model_label(run))}</code>"]
    meta += [f"{label}: <code>{_e(value)}</code>" for label, value in (("command", run.command),
                                                                       ("created", run.created)) if value]
    if all(c.records is not None for c in pair):
        intro = (f"Top-{k} chunks of {_e(' and '.join(names))} for every query. Marks: <b>HIT</b> shares a character "
                 "with a gold span (highlighted), <b>RIGHT DOC</b> is from a gold document without overlap, "
                 "<b>WRONG DOC</b> is from another document.")
        if texts is None:
            intro += (' <span id="offsets-only">Document texts were not given: chunks and gold spans are shown by '
                      "document and character offsets only (<code>llama-sac report RUN --html</code> reads the "
                      "texts from the benchmark; <code>--data-dir</code> for LegalBench-RAG).</span>")
        filters = (f'<div id="filters" hidden><input id="f-text" type="search" placeholder="filter: query, id, '
                   f'document"> <select id="f-kind"><option value="all">all queries</option><option value="w0">'
                   f"{_e(names[0])} has a WRONG DOC chunk, {_e(names[-1])} none</option><option value=\"w1\">"
                   f"{_e(names[-1])} has a WRONG DOC chunk, {_e(names[0])} none</option><option value=\"nohit\">"
                   'no HIT in either</option></select> <button id="f-open">expand all</button> <button '
                   'id="f-close">collapse all</button> <span id="f-count"></span></div>')
        drill = f'<p class="note">{intro}</p>{filters}{_drilldown(pair, k, texts)}'
    else:
        drill = ('<p class="note" id="no-records">The per-query drill-down needs a run with records: these results '
                 "have none (published results.json files leave them out; re-run the command above to get them).</p>")
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width='
            f'device-width, initial-scale=1"><title>SAC evaluation report: {_e(bench.name)}</title>'
            f"<style>{CSS}</style></head><body><header><h1>Retrieval evaluation: "
            f"{_e(', '.join(c.name for c in run.configs))}</h1>{''.join(f'<p>{m}</p>' for m in meta)}<nav>"
            '<a href="#tables">tables</a><a href="#plots">plots</a><a href="#confusions">confused documents</a>'
            '<a href="#drilldown">per query</a></nav></header><main><section id="tables"><h2>Metrics per k</h2>'
            f'{_metric_tables(run)}</section><section id="plots"><h2>Plots</h2>{_plots(run)}</section>'
            f'<section id="confusions"><h2>Most-confused document pairs</h2>{_confusion_tables(run)}</section>'
            f'<section id="drilldown"><h2>Per query: {_e(" vs ".join(names))}</h2>{drill}</section></main>'
            f"<script>{JS}</script></body></html>\n")
    out = Path(out_path)
    if out.is_dir():
        raise IsADirectoryError(errno.EISDIR, "the report path is a folder, not a file", str(out))
    if not out.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the report's folder does not exist", str(out.parent))
    staging = out.with_name(f".{out.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    try:
        staging.write_text(page, encoding="utf-8")
        os.replace(staging, out)
    finally:
        staging.unlink(missing_ok=True)
    return out
