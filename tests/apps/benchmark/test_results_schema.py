"""The typed, versioned results schema: the current shape field by field, clear errors for anything else (an older
or newer shape included), and a property: any JSON value either loads or raises ResultsFormatError."""

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


def _config(name: str, parser: dict | None = None, summarizer: dict | None = None) -> dict:
    """A configuration as a run records it (the keys it does not give take the models' defaults)."""
    return {"name": name, "parser": parser or {"kind": "recursive"}, "summarizer": summarizer or {"kind": "none"},
            "augmentation": {"embed_metadata": []}, "retrieval": "dense"}


def _entry(config: dict, summary_info: dict | None = None) -> dict:
    return {"config": config, "n_chunks": 3, "mean_chunk_chars": 400.0, "mean_embedded_chars": 420.5,
            "chunks_embedded": 3, "chunks_from_cache": 0, "timings": {"parse_s": 0.1},
            "aggregates": {"overall": {"1": _scores(1)}, "datasets": {"nda": {"1": _scores()}}},
            "confusions": [{"gold": "a", "retrieved": "b", "chunks": 1, "queries": 1}],
            "summaries": {"nda/a.txt": "NDA between A and B."} if summary_info else {},
            "summary_info": summary_info}


IDENTITY = {"class": "ExtractiveSummarizer", "max_chars": 150, "metadata_keys": ["file_name"], "version": "v1",
            "max_terms": 5, "lead_chars": 4000, "term_sample_chars": 30000, "include_date": False}
EXTRACTIVE = {"kind": "extractive", "metadata_keys": ["file_name"], "max_terms": 5, "lead_chars": 4000,
              "include_date": False}
LLM = {"kind": "llm", "model": "q.gguf", "long_document": "head_tail", "max_input_chars": 2000, "prompt": "expert",
       "max_chars": 300}

V2: dict[str, Any] = {
    "schema_version": 2,
    "benchmark": {"name": "synthetic-contracts", "description": "built-in synthetic contracts (n_documents=6, seed=3)",
                  "source": "synthetic", "seed": 3,
                  "n_documents": 6, "n_characters": 100, "n_queries": 2, "datasets": {"nda": 2}},
    "settings": {"ks": [1], "embed_model": {"class_name": "M"}, "cache_dir": "/c", "confusion_k": 1},
    "configs": [
        _entry(_config("baseline", parser={"kind": "semantic"})),
        _entry(_config("sac-meta", parser={"chunk_size": 300}, summarizer=EXTRACTIVE),
               {"summarizer_calls": 1, "summarizer_identity": {"nda": IDENTITY}}),
        _entry(_config("sac-llm", summarizer=LLM), {"summarizer_calls": 0, "summarizer_identity": {}}),
    ],
    "timings": {"model_load_s": 1.0, "query_embed_s": 0.5, "wall_s": 3.0},
    "peak_memory_mb": 512.0,
    "versions": {"python": "3.11"},
    "command": "llama-sac eval --n-documents 6 --seed 3",
}


def test_the_current_shape_loads_field_by_field():
    results = parse_results(copy.deepcopy(V2))
    assert results.schema_version == SCHEMA_VERSION == 2
    info = results.benchmark
    assert (info.source, info.n_documents, info.seed, info.sampling, info.scope) == ("synthetic", 6, 3, None, None)
    assert info.loader_options().model_dump(include={"source", "n_documents", "seed"}) == {
        "source": "synthetic", "n_documents": 6, "seed": 3}
    semantic, meta, llm = (c.config for c in results.configs)
    assert semantic.parser.kind == "semantic" and "chunk_size" not in semantic.parser.model_dump()
    assert semantic.summarizer.kind == "none" and results.configs[0].summary_info is None
    assert meta.parser.model_dump() == {"kind": "recursive", "chunk_size": 300, "chunk_overlap": 0,
                                        "separators": "sentences"}
    assert isinstance(meta.summarizer, ExtractiveSummarizerSettings)
    assert (meta.summarizer.max_chars, meta.summarizer.metadata_keys, meta.summarizer.max_terms,
            meta.summarizer.lead_chars, meta.summarizer.include_date, meta.summarizer.terms) == (
        150, ["file_name"], 5, 4000, False, "corpus")
    assert isinstance(llm.summarizer, LLMSummarizerSettings)
    assert llm.summarizer.model_dump() == {"kind": "llm", "model": "q.gguf", "api_base": None, "prompt": "expert",
                                           "max_chars": 300, "metadata_keys": ["file_name", "title"],  # default
                                           "max_input_chars": 2000,
                                           "long_document": "head_tail"}
    # numbers untouched
    assert results.configs[1].aggregates.at("nda", 1).drm == 0.25
    assert results.configs[1].aggregates.overall["1"].n_datasets == 1
    assert results.configs[1].confusions[0].retrieved == "b"


def test_legalbench_loader_options_are_fields():
    data = copy.deepcopy(V2)
    data["benchmark"].update(description="LegalBench-RAG (benchmarks, sampling=random, scope=all)",
                             source="legalbenchrag", benchmarks_dir="benchmarks", sampling="random", scope="all",
                             data_dir="/data/lbr x", sample=7, seed=11)
    info = parse_results(data).benchmark
    options = info.loader_options("/elsewhere")
    assert (options.data_dir, options.datasets, options.sample, options.seed) == ("/elsewhere", ["nda"], 7, 11)
    data["benchmark"].update(source="custom", description="my own benchmark")
    custom = parse_results(data).benchmark
    with pytest.raises(ValueError, match="not made by a known loader"):
        custom.loader_options()


def test_a_file_of_another_shape_is_refused_by_its_version():
    unversioned = {key: value for key, value in copy.deepcopy(V2).items() if key != "schema_version"}
    with pytest.raises(ResultsFormatError, match="schema_version None is not the one this release reads \\(2\\)$"):
        parse_results(unversioned)
    with pytest.raises(ResultsFormatError, match="schema_version 1 is not the one this release reads"):
        parse_results({**unversioned, "schema_version": 1})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: [1, 2], "expected a JSON object, got list"),
        (lambda d: {**d, "schema_version": 99}, "schema_version 99 is not the one this release reads (2): upgrade"),
        (lambda d: {**d, "schema_version": "2"}, "schema_version '2' is not the one"),
        (lambda d: {**d, "schema_version": True}, "schema_version True is not the one"),
        (lambda d: {**d, "benchmark": 3}, "benchmark: Input should be a valid dictionary"),
        (lambda d: {**d, "configs": {}}, "configs: Input should be a valid list"),
        (lambda d: {**d, "configs": [3]}, "configs.0: Input should be a valid dictionary"),
        (lambda d: {**d, "configs": d["configs"][:1] * 2}, "configuration names must be distinct"),
        (lambda d: {**d, "settings": {**d["settings"], "ks": [1, 2]}},
         "configuration 'baseline' has no overall aggregates at k=['2']"),
        (lambda d: {**d, "peak_memory_mb": "a lot"}, "peak_memory_mb: Input should be a valid number"),
    ],
)
def test_anything_else_is_one_clear_results_format_error(change, message):
    with pytest.raises(ResultsFormatError) as caught:
        parse_results(change(copy.deepcopy(V2)))
    assert message in str(caught.value)


def test_load_results_reads_a_run_folder_or_a_file(tmp_path: Path):
    results = parse_results(copy.deepcopy(V2))
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
@given(st.dictionaries(st.sampled_from(sorted(V2)), json_values, max_size=4), st.booleans())
def test_any_json_either_loads_or_is_a_results_format_error(replaced, versioned):
    """Replace parts of a valid file by random JSON: parse_results returns results or raises ResultsFormatError,
    never another exception."""
    data = {**copy.deepcopy(V2), **replaced}
    if versioned:
        data["schema_version"] = 2
    try:
        parse_results(data)
    except ResultsFormatError:
        pass
