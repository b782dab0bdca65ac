"""The typed, versioned results schema: the first (unversioned) shape migrated field by field, clear errors for
anything else, and a property: any JSON value either loads or raises ResultsFormatError."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_index_sac.apps.benchmark.components import ExtractiveSummarizerSettings, LLMSummarizerSettings
from llama_index_sac.apps.benchmark.results import SCHEMA_VERSION, ResultsFormatError, load_results, parse_results


def _scores(n_datasets: int | None = None) -> dict:
    out = {"drm": 0.25, "precision": 0.5, "recall": 1.0, "hit_rate": 1.0, "mrr": 0.5, "n_queries": 2,
           "ineligible": 0, "drm_undefined": 0}
    return out if n_datasets is None else {**out, "n_datasets": n_datasets}


def _flat(name: str, **changes) -> dict:
    """A configuration as the first release recorded it: every key, whatever the kind."""
    flat = {"name": name, "parser": "recursive", "chunk_size": 500, "chunk_overlap": 0, "summarizer": "none",
            "llm": None, "llm_api_base": None, "prompt": "generic", "summary_chars": 150,
            "long_document": "map_reduce", "llm_input_chars": None, "summary_metadata": [], "embed_metadata": [],
            "retrieval": "dense"}
    return {**flat, **changes}


def _entry(config: dict, summary_info: dict | None = None) -> dict:
    return {"config": config, "n_chunks": 3, "mean_chunk_chars": 400.0, "mean_embedded_chars": 420.5,
            "chunks_embedded": 3, "chunks_from_cache": 0, "timings": {"parse_s": 0.1},
            "aggregates": {"overall": {"1": _scores(1)}, "datasets": {"nda": {"1": _scores()}}},
            "confusions": [{"gold": "a", "retrieved": "b", "chunks": 1, "queries": 1}],
            "summaries": {"nda/a.txt": "NDA between A and B."} if summary_info else {},
            "summary_info": summary_info or {}}


IDENTITY = {"class": "ExtractiveSummarizer", "max_chars": 150, "metadata_keys": ["file_name"], "version": "v1",
            "max_terms": 5, "lead_chars": 4000, "term_sample_chars": 30000, "include_date": False}

V1: dict[str, Any] = {
    "benchmark": {"name": "synthetic-contracts", "description": "built-in synthetic contracts (n_documents=6, seed=3)",
                  "n_documents": 6, "n_characters": 100, "n_queries": 2, "datasets": {"nda": 2}},
    "settings": {"ks": [1], "embed_model": {"class_name": "M"}, "cache_dir": "/c", "confusion_k": 1},
    "configs": [
        _entry(_flat("baseline", parser="semantic")),
        _entry(_flat("sac-meta", summarizer="extractive", summary_metadata=["file_name"], chunk_size=300),
               {"summarizer_calls": 1, "summarizer_identity": {"nda": IDENTITY}}),
        _entry(_flat("sac-llm", summarizer="llm", llm="q.gguf", long_document="head_tail", llm_input_chars=2000,
                     prompt="expert", summary_chars=300), {"summarizer_calls": 0, "summarizer_identity": {}}),
    ],
    "timings": {"model_load_s": 1.0, "query_embed_s": 0.5, "wall_s": 3.0},
    "peak_memory_mb": 512.0,
    "versions": {"python": "3.11"},
    "command": "llama-sac eval --n-documents 6 --seed 3",
}


def test_the_first_shape_is_migrated_field_by_field():
    results = parse_results(copy.deepcopy(V1))
    assert results.schema_version == SCHEMA_VERSION == 2
    info = results.benchmark
    assert (info.source, info.n_documents, info.seed, info.sampling, info.scope) == ("synthetic", 6, 3, None, None)
    assert info.loader_options().model_dump(include={"source", "n_documents", "seed"}) == {
        "source": "synthetic", "n_documents": 6, "seed": 3}
    semantic, meta, llm = (c.config for c in results.configs)
    assert semantic.parser.kind == "semantic"
    assert "chunk_size" not in semantic.parser.model_dump()  # the semantic parser never read it: not carried over
    assert semantic.summarizer.kind == "none" and results.configs[0].summary_info is None
    assert meta.parser.model_dump() == {"kind": "recursive", "chunk_size": 300, "chunk_overlap": 0}
    assert isinstance(meta.summarizer, ExtractiveSummarizerSettings)
    # the settings the identity recorded complete the extractive configuration
    assert (meta.summarizer.max_chars, meta.summarizer.metadata_keys, meta.summarizer.max_terms,
            meta.summarizer.lead_chars, meta.summarizer.include_date, meta.summarizer.terms) == (
        150, ["file_name"], 5, 4000, False, "corpus")
    assert isinstance(llm.summarizer, LLMSummarizerSettings)
    assert llm.summarizer.model_dump() == {"kind": "llm", "model": "q.gguf", "api_base": None, "prompt": "expert",
                                           "max_chars": 300, "metadata_keys": [], "max_input_chars": 2000,
                                           "long_document": "head_tail"}
    # numbers untouched
    assert results.configs[1].aggregates.at("nda", 1).drm == 0.25
    assert results.configs[1].aggregates.overall["1"].n_datasets == 1
    assert results.configs[1].confusions[0].retrieved == "b"


def test_legalbench_loader_options_come_from_the_description_and_the_command():
    data = copy.deepcopy(V1)
    data["benchmark"]["description"] = "LegalBench-RAG (benchmarks, sampling=random, scope=all)"
    data["command"] = "llama-sac eval --data-dir '/data/lbr x' --sample 7 --seed 11 -c baseline"
    info = parse_results(data).benchmark
    assert (info.source, info.benchmarks_dir, info.sampling, info.scope) == ("legalbenchrag", "benchmarks", "random",
                                                                            "all")
    assert (info.data_dir, info.sample, info.seed) == ("/data/lbr x", 7, 11)
    options = info.loader_options("/elsewhere")
    assert (options.data_dir, options.datasets, options.sample) == ("/elsewhere", ["nda"], 7)
    data["benchmark"]["description"] = "my own benchmark"
    custom = parse_results(data).benchmark
    assert custom.source == "custom"
    with pytest.raises(ValueError, match="not made by a known loader"):
        custom.loader_options()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: [1, 2], "expected a JSON object, got list"),
        (lambda d: {**d, "schema_version": 99}, "schema_version 99 is not one this release reads (1 to 2)"),
        (lambda d: {**d, "schema_version": "2"}, "schema_version '2' is not one"),
        (lambda d: {**d, "benchmark": 3}, "benchmark must be a JSON object, got int"),
        (lambda d: {**d, "configs": {}}, "configs must be a JSON list, got dict"),
        (lambda d: {**d, "configs": [3]}, "configs[0] must be a JSON object"),
        (lambda d: {**d, "configs": d["configs"][:1] * 2}, "configuration names must be distinct"),
        (lambda d: {**d, "settings": {**d["settings"], "ks": [1, 2]}},
         "configuration 'baseline' has no overall aggregates at k=['2']"),
        (lambda d: {**d, "peak_memory_mb": "a lot"}, "peak_memory_mb: Input should be a valid number"),
    ],
)
def test_anything_else_is_one_clear_results_format_error(change, message):
    with pytest.raises(ResultsFormatError) as caught:
        parse_results(change(copy.deepcopy(V1)))
    assert message in str(caught.value)


def test_load_results_reads_a_run_folder_or_a_file(tmp_path: Path):
    results = parse_results(copy.deepcopy(V1))
    (tmp_path / "results.json").write_text(results.to_json(), encoding="utf-8")
    assert load_results(tmp_path) == results == load_results(tmp_path / "results.json")
    assert json.loads((tmp_path / "results.json").read_text())["schema_version"] == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ResultsFormatError, match="is a folder without results.json: expected a run folder"):
        load_results(empty)
    for content in (b"not json", b"\xff\xfe\x00", b"[" * 50_000):
        (tmp_path / "bad.json").write_bytes(content)
        with pytest.raises(ResultsFormatError, match="not valid JSON|not UTF-8|nested deeper"):
            load_results(tmp_path / "bad.json")
    with pytest.raises(OSError):
        load_results(tmp_path / "missing.json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(V1)), json_values, max_size=4), st.booleans())
def test_any_json_either_loads_or_is_a_results_format_error(replaced, versioned):
    """Replace parts of a valid file by random JSON: parse_results returns results or raises ResultsFormatError,
    never another exception."""
    data = {**copy.deepcopy(V1), **replaced}
    if versioned:
        data["schema_version"] = 2
    try:
        parse_results(data)
    except ResultsFormatError:
        pass
