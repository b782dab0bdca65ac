"""The runner (``llama_index_sac.apps.benchmark.runner``) with the fake embedding: results, the embedding cache,
hybrid retrieval, the semantic and hybrid parsers, distinct configuration names."""

from __future__ import annotations

import json

import pytest

from llama_index_sac.apps.benchmark import report
from llama_index_sac.apps.benchmark.components import RecursiveParserSettings
from llama_index_sac.apps.benchmark.config import (
    EvaluationSetupError,
    LoaderOptions,
    RunConfig,
    RunSettings,
    parse_config,
)
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.apps.benchmark.results import RunResults, load_results
from llama_index_sac.apps.benchmark.runner import run_evaluation
from tests.conftest import FakeEmbedding


def _settings(tmp_path, **kw):
    return RunSettings(ks=[1, 2, 4], cache_dir=tmp_path / "cache", show_progress=False, **kw)



@pytest.mark.slow
def test_runner_results_and_embedding_cache(tmp_path):
    bench = synthetic_contracts(n_documents=4)
    embed = FakeEmbedding()
    configs = [parse_config("baseline"), parse_config("llamaindex")]
    loader = LoaderOptions(n_documents=4)
    results = run_evaluation(bench, configs, _settings(tmp_path), embed_model=embed, loader=loader)
    assert isinstance(results, RunResults) and results.schema_version == 2
    base, li = results.configs
    info = results.benchmark
    assert (info.source, info.n_documents, info.seed, info.n_queries) == ("synthetic", 4, 0, len(bench.queries))
    assert info.datasets == {"nda": 8, "services": 10} and info.n_queries == 18
    assert base.records is not None and len(base.records) == 18
    assert set(base.aggregates.overall) == {"1", "2", "4"}
    # chunk offsets point into the documents; every record names gold and retrieved spans
    for record in base.records:
        assert len(record.retrieved) == 4
        for doc_id, start, end in record.retrieved:
            assert 0 <= start < end <= len(bench.documents[doc_id])
    # the "LlamaIndex default" embeds file_path with the chunk, the baseline the chunk alone
    embedded = set(embed.texts_embedded)
    assert any(t.startswith("file_path: corpus/nda/") for t in embedded)
    assert base.mean_embedded_chars < li.mean_embedded_chars
    assert base.chunks_embedded > 0 and base.summary_info is None
    assert results.versions["llama-index-core"] and results.peak_memory_mb > 0
    assert (results.settings.retrieval_threads, results.settings.llm_concurrency) == (4, 2)
    # the JSON round trip gives the same results
    path = tmp_path / "results.json"
    path.write_text(results.to_json())
    assert json.loads(path.read_text())["schema_version"] == 2
    assert load_results(path) == results and load_results(tmp_path) == results

    # a re-run that changes only k embeds nothing (chunks and queries come from the cache)
    calls = len(embed.calls)
    again = run_evaluation(bench, configs, RunSettings(ks=[1, 8], cache_dir=tmp_path / "cache",
                                                        show_progress=False), embed_model=embed)
    assert len(embed.calls) == calls
    assert all(c.chunks_embedded == 0 for c in again.configs)
    assert again.configs[0].aggregates.overall["1"] == base.aggregates.overall["1"]
    assert again.benchmark.source == "custom"  # no loader given: a custom benchmark

    text = report.format_tables(results)
    assert "DRM@k" in text and "overall" in text and "k=4" in text
    assert report.write_plots(results, tmp_path)[0].stat().st_size > 1000


def test_runner_hybrid_retrieval(tmp_path):
    bench = synthetic_contracts(n_documents=4)
    config = parse_config("baseline:retrieval=hybrid,name=hybrid")
    results = run_evaluation(bench, [config], _settings(tmp_path), embed_model=FakeEmbedding())
    records = results.configs[0].records or []
    assert len(records) == 18 and all(len(r.retrieved) == 4 for r in records)
    # BM25 matches the parties' names: the preamble of the right contract comes first for most queries
    drm = results.configs[0].aggregates.overall["1"].drm
    assert drm is not None and drm < 0.5


def test_runner_rejects_duplicate_names(tmp_path):
    with pytest.raises(EvaluationSetupError, match="distinct names"):
        run_evaluation(synthetic_contracts(4), [RunConfig(name="a"), RunConfig(name="a")], _settings(tmp_path),
                       embed_model=FakeEmbedding())



@pytest.mark.parametrize("parser", ["semantic", "hybrid"])
def test_runner_with_semantic_and_hybrid_parsers(tmp_path, parser):
    bench = synthetic_contracts(n_documents=2)
    config = parse_config(f"sac:parser.kind={parser},name={parser}")
    with pytest.warns(UserWarning, match="term statistics from only 2 document"):  # the corpus-fitted table
        results = run_evaluation(bench, [config], _settings(tmp_path), embed_model=FakeEmbedding())
    outcome = results.configs[0]
    assert outcome.config.parser.kind == parser and outcome.n_chunks >= 2
    assert len(outcome.summaries) == 2
    for record in outcome.records or []:
        for doc_id, start, end in record.retrieved:
            assert 0 <= start < end <= len(bench.documents[doc_id])
    if parser == "hybrid":
        assert outcome.mean_chunk_chars <= RecursiveParserSettings().chunk_size
