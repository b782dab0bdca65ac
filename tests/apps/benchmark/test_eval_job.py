"""The main job, ``llama-sac eval``: configurations (one system, checked against the components), the runner (fast,
with the fake embedding), the run end to end (real MiniLM) on the built-in dataset and on a slice of the shared
LegalBench-RAG, and clean errors for bad data, models and servers (the options themselves: ``test_commands.py``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from llama_index_sac.apps.benchmark import factories, report
from llama_index_sac.apps.benchmark.components import (
    ComponentSettings,
    DocumentRetrievalSettings,
    ExtractiveSummarizerSettings,
    HybridParserSettings,
    LLMSummarizerSettings,
    RecursiveParserSettings,
    SemanticParserSettings,
)
from llama_index_sac.apps.benchmark.config import (
    PRESETS,
    EvaluationSetupError,
    LoaderOptions,
    MissingLLMModelError,
    RunConfig,
    RunSettings,
    parse_config,
)
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.apps.benchmark.results import RunResults, load_results
from llama_index_sac.apps.benchmark.runner import run_evaluation
from llama_index_sac.apps.cli import app
from llama_index_sac.evaluation.confusion import confused_pairs
from llama_index_sac.node_parser import HybridNodeParser, RecursiveCharacterNodeParser, SemanticNodeParser
from llama_index_sac.summarizers import ExtractiveSummarizer, LLMSummarizer
from tests.apps.benchmark.test_commands import one_error
from tests.conftest import LEGALBENCH, FakeEmbedding, requires_legalbench

runner = CliRunner()

# -- configurations --------------------------------------------------------------------------------------------


def test_parse_config_presets_and_dotted_overrides():
    assert parse_config("baseline") == RunConfig.model_validate(
        {"name": "baseline", "augmentation": {"on_embed_overflow": "warn"}})  # recorded as the published runs
    sac = parse_config("sac")
    assert isinstance(sac.summarizer, ExtractiveSummarizerSettings) and isinstance(sac.parser, RecursiveParserSettings)
    assert (sac.parser.chunk_size, sac.summarizer.max_chars, sac.summarizer.terms) == (500, 150, "corpus")
    custom = parse_config("sac:parser.kind=hybrid,parser.chunk_size=300,summarizer.max_chars=300")
    assert custom.name == "sac[parser.kind=hybrid,parser.chunk_size=300,summarizer.max_chars=300]"
    assert isinstance(custom.parser, HybridParserSettings) and custom.parser.chunk_size == 300
    assert custom.summarizer.model_dump()["max_chars"] == 300  # coerced from the string by the model
    named = parse_config("llamaindex:name=li,augmentation.embed_metadata=file_path+file_name")
    assert named.name == "li" and named.augmentation.embed_metadata == ["file_path", "file_name"]
    assert parse_config("sac:summarizer.metadata_keys=").summarizer.model_dump()["metadata_keys"] == []  # empty
    expert = parse_config("sac-expert:summarizer.model=m.gguf,summarizer.max_input_chars=2000")
    assert isinstance(expert.summarizer, LLMSummarizerSettings)
    assert (expert.summarizer.prompt, expert.summarizer.max_chars, expert.summarizer.max_input_chars) == (
        "expert", 300, 2000)
    unlimited = parse_config("sac-llm:summarizer.model=m,summarizer.max_input_chars=").summarizer
    assert unlimited.model_dump()["max_input_chars"] is None
    semantic = parse_config("baseline:parser.kind=semantic,parser.max_chunk_size=800")
    assert isinstance(semantic.parser, SemanticParserSettings) and semantic.parser.max_chunk_size == 800
    # common options reach every configuration, summary options only those with a summarizer
    summary = {"summarizer.kind": "llm", "summarizer.model": "m.gguf"}
    base = parse_config("baseline", {"parser.kind": "hybrid"}, summary)
    assert base.parser.kind == "hybrid" and base.summarizer.kind == "none"
    llm = parse_config("sac", {"parser.kind": "hybrid"}, {**summary, "summarizer.prompt": "expert"})
    assert isinstance(llm.summarizer, LLMSummarizerSettings)
    assert (llm.parser.kind, llm.summarizer.model, llm.summarizer.prompt) == ("hybrid", "m.gguf", "expert")
    # the spec's own keys come last
    last = parse_config("sac:parser.chunk_size=200", {"parser.chunk_size": 400})
    assert last.parser.model_dump()["chunk_size"] == 200


def test_the_separator_hierarchy_is_one_option_away_and_the_default_parser_is_unchanged():
    default, words = parse_config("default"), parse_config("default:parser.separators=words,name=default-words")
    assert isinstance(default.parser, RecursiveParserSettings) and isinstance(words.parser, RecursiveParserSettings)
    assert (default.parser.separators, words.parser.separators, words.name) == ("sentences", "words", "default-words")
    built, built_words = factories.build_parser(default.parser), factories.build_parser(words.parser)
    assert isinstance(built, RecursiveCharacterNodeParser) and isinstance(built_words, RecursiveCharacterNodeParser)
    assert built.separators == ["\n\n", "\n", ". ", " ", ""] and not built.is_separator_regex  # as published
    assert built.to_dict() == RecursiveCharacterNodeParser().to_dict()  # same settings: same ids and cache keys
    assert built_words.separators == ["\n\n", "\n", " ", ""]
    assert RecursiveParserSettings(separators="words").component_kwargs() == {
        "chunk_size": 500, "chunk_overlap": 0, "separators": ["\n\n", "\n", " ", ""]}


def test_every_preset_is_a_valid_partial_configuration():
    for name, preset in PRESETS.items():
        assert preset["name"] == name
        if name in ("sac-llm", "sac-expert"):  # an LLM needs a model: the user names it
            with pytest.raises(MissingLLMModelError) as caught:
                parse_config(name)
            assert caught.value.config == name
            assert parse_config(f"{name}:summarizer.model=m.gguf").summarizer.kind == "llm"
        else:
            assert parse_config(name).name == name


def test_the_published_command_lines_parse_to_the_recorded_configurations():
    """Every published run's ``-c`` specs (docs/results/*/results.json ``command``) give the configurations the run
    recorded: the recorded commands re-run as they are."""
    import shlex
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[3] / "docs" / "results").glob("*/results.json")):
        results = load_results(path)
        words = shlex.split(results.command or "")
        specs = [value for flag, value in zip(words, words[1:]) if flag in ("-c", "--config")]
        assert [parse_config(spec) for spec in specs] == [c.config for c in results.configs], path


def test_default_is_what_a_user_gets_and_the_published_presets_stay_as_they_ran():
    default = parse_config("default")
    assert default.summarizer.model_dump()["metadata_keys"] == ["file_name", "title"]  # the component's default
    assert (default.augmentation.on_embed_overflow, default.retrieval) == ("trim", "document-aware")
    assert default.document_retrieval == DocumentRetrievalSettings()  # DocumentAwareRetriever's defaults
    for name in ("sac", "sac-doc", "baseline-doc"):
        assert parse_config(name).summarizer.model_dump()["metadata_keys"] == [], name  # content-only, as published
    assert parse_config("sac").augmentation.on_embed_overflow == "warn"  # as published: no trimming
    meta = parse_config("sac-meta")
    assert meta.summarizer.model_dump()["metadata_keys"] == ["file_name"]
    assert meta.augmentation.on_embed_overflow == "warn"


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("nope", "unknown configuration 'nope' in 'nope': choose from default, baseline, llamaindex, sac"),
        ("sac:colour=blue", "bad option 'colour' in configuration 'sac:colour=blue': the keys are name, retrieval"),
        ("sac:parser.chunk_sise=3", "did you mean 'parser.chunk_size'?"),
        ("sac:retrieval.x=1", "bad option 'retrieval.x'"),
        ("sac:name", "bad option 'name' in configuration 'sac:name': expected key=value"),
        ("sac:parser.kind=fancy", "parser.kind must be one of 'recursive', 'semantic', 'hybrid', got 'fancy'"),
        ("sac:parser.kind=semantic,parser.chunk_size=300",
         "parser.chunk_size: the semantic parser has no option 'chunk_size' (its options: breakpoint_method"),
        ("baseline:summarizer.max_chars=300",
         "summarizer.max_chars: summarizer.kind is 'none', which takes no options"),
        ("sac-expert:summarizer.kind=extractive,summarizer.model=m",
         "summarizer.prompt: the extractive summarizer has no option 'prompt'"),
        ("sac-llm", "configuration 'sac-llm' uses the LLM summarizer but names no model: give summarizer.model="),
        ("baseline:parser.chunk_overlap=600", "parser: chunk_overlap (600) must be smaller than chunk_size (500)"),
        ("baseline:parser.kind=semantic,parser.min_chunk_size=900,parser.max_chunk_size=800",
         "min_chunk_size (900) must not exceed max_chunk_size (800)"),  # the component's own rule
        ("sac:summarizer.max_chars=0", "summarizer.max_chars: Input should be greater than 0"),
        ("sac:summarizer.metadata_keys=author", "unknown document metadata key(s) ['author']"),
        ("sac:retrieval=sparse", "retrieval: Input should be 'dense', 'hybrid' or 'document-aware'"),
        ("sac:name=", "name: String should have at least 1 character"),
        ("default:parser.separators=lines", "parser.separators: Input should be 'sentences' or 'words'"),
        ("default:parser.kind=hybrid,parser.separators=words",
         "parser.separators: the hybrid parser has no option 'separators'"),
    ],
)
def test_parse_config_errors(spec, pattern):
    with pytest.raises(EvaluationSetupError) as caught:
        parse_config(spec)
    assert pattern in str(caught.value)


# -- one system: settings are the components' fields, the CLI is checked against the models ----------------------

SETTINGS_OF: list[tuple[type[ComponentSettings], type[BaseModel]]] = [
    (RecursiveParserSettings, RecursiveCharacterNodeParser),
    (SemanticParserSettings, SemanticNodeParser),
    (HybridParserSettings, HybridNodeParser),
    (ExtractiveSummarizerSettings, ExtractiveSummarizer),
    (LLMSummarizerSettings, LLMSummarizer),
]


@pytest.mark.parametrize(("settings", "component"), SETTINGS_OF, ids=[c.__name__ for _, c in SETTINGS_OF])
def test_component_settings_are_the_components_own_fields(settings, component):
    own = set(settings.model_fields) - {"kind"} - settings.builder_fields
    assert own, settings
    for name in own:
        mine, theirs = settings.model_fields[name], component.model_fields[name]
        assert mine.annotation == theirs.annotation, name
        assert mine.get_default(call_default_factory=True) == theirs.get_default(call_default_factory=True), name
        assert mine.metadata == theirs.metadata and mine.description == theirs.description, name
    # and the defaults build the component as its own defaults do
    built = factories.build_parser(settings(), FakeEmbedding()) if "Parser" in settings.__name__ else None
    if built is not None:
        assert {k: getattr(built, k) for k in own} == {k: component.model_fields[k].default for k in own}


def test_the_default_chunk_size_is_written_once():
    """500, the default chunk size, is ``llama_index_sac.constants.DEFAULT_CHUNK_SIZE``: no other module of the
    package writes the number (docstrings may say it; an HTTP status range and a key batch are other 500s)."""
    import ast
    from pathlib import Path

    import llama_index_sac
    from llama_index_sac.constants import DEFAULT_CHUNK_SIZE

    root = Path(llama_index_sac.__file__).parent
    other_500s = {"constants.py", "summarizers/llm_errors.py", "apps/benchmark/cache.py"}
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in other_500s:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        numbers = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value == 500]
        assert not numbers, f"{path.relative_to(root)} repeats 500 on line(s) {numbers}"
    for parser in (RecursiveCharacterNodeParser, HybridNodeParser):
        assert parser.model_fields["chunk_size"].default == DEFAULT_CHUNK_SIZE
    assert RecursiveParserSettings().chunk_size == HybridParserSettings().chunk_size == DEFAULT_CHUNK_SIZE


# -- the runner with the fake embedding (fast) ---------------------------------------------------------------------


def _settings(tmp_path, **kw):
    return RunSettings(ks=[1, 2, 4], cache_dir=tmp_path / "cache", show_progress=False, **kw)


def test_run_settings_are_validated():
    assert RunSettings(ks=[4, 1, 4]).ks == [1, 4]  # sorted, deduplicated
    bad: dict[str, Any]
    for bad in ({"ks": []}, {"ks": [0, 2]}, {"retrieval_threads": 0}, {"llm_concurrency": 0}, {"confusion_k": 0},
                {"workers": 4}):
        with pytest.raises(ValueError):
            RunSettings(**bad)


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


def test_confused_pairs_counts_wrong_document_chunks():
    records: list[dict[str, Any]] = [
        {"query_id": "q1", "gold": [["a", 0, 5]], "retrieved": [["b", 0, 5], ["a", 0, 5], ["b", 5, 9]],
         "scores": {}},
        {"query_id": "q2", "gold": [["a", 0, 5]], "retrieved": [["c", 0, 5], ["b", 0, 5]], "scores": {}},
        {"query_id": "q3", "gold": [], "retrieved": [["z", 0, 5]], "scores": None},  # ineligible: ignored
        {"query_id": "q4", "gold": [["a", 0, 5], ["d", 0, 2]], "retrieved": [["b", 3, 3], ["c", 1, 2]], "scores": {}},
    ]
    assert confused_pairs(records, k=2) == [
        {"gold": "a", "retrieved": "b", "chunks": 2, "queries": 2},
        {"gold": "a", "retrieved": "c", "chunks": 1, "queries": 1},
        {"gold": "a + d", "retrieved": "c", "chunks": 1, "queries": 1},  # the empty span b[3:3] is not counted
    ]
    assert confused_pairs(records, k=2, top=1) == [{"gold": "a", "retrieved": "b", "chunks": 2, "queries": 2}]
    for bad, error in (({"k": 0}, ValueError), ({"k": 2, "top": -1}, ValueError), ({"k": "2"}, TypeError)):
        with pytest.raises(error):
            confused_pairs(records, **bad)


# -- bad input: one clear message, exit code 2, no traceback -----------------------------------------------------------


def _legalbench_dir(root, tests=None, archive=False):
    from tests.apps.benchmark.test_legalbenchrag import make_data

    return make_data(root, archive=archive, tests=tests)


def test_empty_tests_list_leaves_no_output(tmp_path):
    root = _legalbench_dir(tmp_path / "d", tests={"cuad": []})
    out = tmp_path / "runs" / "new" / "out"
    result = runner.invoke(app, ["eval", "--data-dir", str(root), "-o", str(out), "-q"])
    assert one_error(result) == f'error: {root / "benchmarks" / "cuad.json"}: field "tests": empty list (a benchmark ' \
        "file needs at least one test)"
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda data: data[: len(data) // 2], "corpus archive truncated"),
        (lambda data: bytes(range(256)) * 8, "corpus archive not a readable tar archive"),
    ],
)
@pytest.mark.slow
def test_damaged_corpus_archive_from_the_entry_point(tmp_path, damage, why):
    root = _legalbench_dir(tmp_path / "d", archive=True)
    archive = root / "corpus.tar.xz"
    archive.write_bytes(damage(archive.read_bytes()))
    proc = subprocess.run(
        [sys.executable, "-m", "llama_index_sac.apps.cli", "eval", "--data-dir", str(root), "-o", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {archive}: {why}")
    assert "Traceback" not in proc.stderr + proc.stdout and "Aborted" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_output_dir_is_staged_then_moved(tmp_path):
    from llama_index_sac.apps.benchmark.output import staged_output_dir

    out = tmp_path / "a" / "b" / "out"
    with staged_output_dir(out) as staging:
        assert staging.parent == out.parent and not out.exists()
        (staging / "results.json").write_text("{}")
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
    assert (out / "results.json").read_text() == "{}"
    # an existing folder: unchanged by a failure (KeyboardInterrupt included), same-named files replaced on success
    (out / "notes.txt").write_text("mine")
    for error in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)), staged_output_dir(out) as staging:
            (staging / "results.json").write_text("half")
            raise error
        assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
        assert (out / "results.json").read_text() == "{}"
    with staged_output_dir(out) as staging:
        (staging / "results.json").write_text('{"new": 1}')
    assert (out / "results.json").read_text() == '{"new": 1}' and (out / "notes.txt").read_text() == "mine"
    # a failure with a new folder: neither it nor the parents created for it remain
    with pytest.raises(KeyboardInterrupt), staged_output_dir(tmp_path / "x" / "y" / "out") as staging:
        (staging / "partial.csv").write_text("1")
        raise KeyboardInterrupt
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(EvaluationSetupError, match="exists and is not a folder"), staged_output_dir(tmp_path / "file"):
        pass
    with pytest.raises(EvaluationSetupError, match="cannot create output folder"), \
            staged_output_dir(tmp_path / "file" / "sub"):
        pass


@requires_legalbench
def test_unknown_dataset_error(tmp_path):
    result = runner.invoke(app, ["eval", "--data-dir", str(LEGALBENCH), "--datasets", "nope", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "unknown dataset(s) nope" in result.output
    assert "available are contractnli, cuad, maud, privacy_qa" in result.output


@pytest.mark.slow
def test_embedding_model_that_cannot_load_offline_is_a_clean_error(tmp_path):
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set by conftest: nothing may be downloaded
    result = runner.invoke(
        app,
        ["eval", "--embed-model", "no-such-org/no-such-model", "--n-documents", "2", "-c", "baseline",
         "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "--quiet"],
    )
    assert one_error(result).startswith("error: embedding model 'no-such-org/no-such-model' cannot be loaded")
    assert not (tmp_path / "o").exists()
    # an existing output folder is left as it was
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "results.json").write_text("earlier run")
    again = runner.invoke(app, ["eval", "--embed-model", "no-such-org/no-such-model", "--n-documents", "2", "-c",
                                "baseline", "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "-q"])
    assert "cannot be loaded" in one_error(again)
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["results.json"]
    assert (tmp_path / "o" / "results.json").read_text() == "earlier run"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left beside it


@pytest.mark.slow
@pytest.mark.parametrize("server", ["failing", "down"])
def test_llm_server_failing_or_down_is_one_error_naming_endpoint_and_document(tmp_path, server):
    from tests._openai_standin import OpenAIStandIn, status

    standin = OpenAIStandIn(default=status(400))  # a non-transient HTTP error: no retries
    if server == "down":
        standin.close()  # the port now refuses connections (transient: retried, then given up)
    try:
        result = runner.invoke(
            app,
            ["eval", "--n-documents", "2", "-c", "sac-llm", "--llm", "served-model", "--llm-api-base", standin.base,
             "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "-q", "--no-progress"],
        )
    finally:
        standin.close()
    line = one_error(result)
    assert line.startswith("error: LLM summarizer of configuration 'sac-llm' failed")
    assert standin.base in line
    assert re.search(r"document '(nda|services)/[^']+\.txt'", line), line
    assert not (tmp_path / "o").exists()
    if server == "failing":
        assert len(standin.received) >= 1


# -- end to end with the real model -------------------------------------------------------------------------------


@pytest.mark.slow
def test_eval_end_to_end_on_builtin_dataset(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["eval", "--n-documents", "6", "-o", str(out), "--cache-dir", str(cache), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: term statistics from only 6 document" in result.stderr  # SAC's corpus-fitted table, one line
    for name in ("results.json", "results.csv", "queries.csv", "confusions.csv", "drm_at_k.png",
                 "precision_at_k.png", "recall_at_k.png"):
        assert (out / name).stat().st_size > 0, name
    results = load_results(out)
    assert [c.name for c in results.configs] == ["baseline", "llamaindex", "default"]
    assert results.settings.ks == [1, 2, 4, 8, 16, 32, 64]
    info = results.benchmark
    assert (info.source, info.n_documents, info.seed) == ("synthetic", 6, 0)
    assert results.command is not None and results.command.startswith("llama-sac ")
    base, _, sac = results.configs
    assert sac.summaries and all(s.strip() for s in sac.summaries.values())
    # the point of the dataset and of SAC: flat retrieval confuses the look-alike contracts, SAC much less
    drm_base, drm_sac = base.aggregates.overall["4"].drm, sac.aggregates.overall["4"].drm
    assert drm_base is not None and drm_sac is not None
    assert drm_base > 0.3
    assert drm_sac < drm_base
    assert "DRM@k" in result.output and "most-confused document pairs" in result.output

    # changing only k and the report re-embeds nothing
    again = runner.invoke(app, ["eval", "--n-documents", "6", "-o", str(tmp_path / "o2"), "--cache-dir",
                                str(cache), "--no-progress", "--k", "1,3"])
    assert again.exit_code == 0, again.output
    results2 = load_results(tmp_path / "o2" / "results.json")
    assert all(c.chunks_embedded == 0 for c in results2.configs)
    assert results2.configs[0].aggregates.overall["1"] == base.aggregates.overall["1"]


@pytest.mark.slow
@requires_legalbench
def test_eval_end_to_end_on_legalbench_slice(tmp_path):
    out = tmp_path / "out"
    args = ["eval", "--data-dir", str(LEGALBENCH), "--datasets", "contractnli,privacy_qa", "--sample", "2",
            "--k", "1,4,16", "-o", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: term statistics from only 3 document" in result.stderr  # 3 documents referenced
    results = load_results(out)
    info = results.benchmark
    assert info.datasets == {"contractnli": 2, "privacy_qa": 2}
    # the loader options are fields: enough to load the same benchmark again
    assert (info.source, info.sampling, info.sample, info.seed, info.scope) == ("legalbenchrag", "random", 2, 0,
                                                                               "referenced")
    assert info.data_dir == str(LEGALBENCH) and info.benchmarks_dir in ("benchmarks", "benchmarks_mini")
    assert info.loader_options().datasets == ["contractnli", "privacy_qa"]
    for config in results.configs:
        overall = config.aggregates.overall["16"]
        assert overall.n_datasets == 2 and overall.n_queries == 4
        for value in (overall.precision, overall.recall, overall.drm):
            assert value is not None and 0 <= value <= 1
        for record in config.records or []:
            assert all(doc_id.split("/")[0] in ("contractnli", "privacy_qa") for doc_id, _, _ in record.retrieved)


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


def test_expert_prompts_are_routed_by_dataset(monkeypatch):
    from llama_index_sac.summarizers import (
        COMMERCIAL_CONTRACT_SUMMARY_PROMPT,
        MERGER_AGREEMENT_SUMMARY_PROMPT,
        NDA_SUMMARY_PROMPT,
        PRIVACY_POLICY_SUMMARY_PROMPT,
    )
    from tests._summary_fakes import RecordingLLM

    def fake_build(settings):  # the LLM, not its client: the routing is what is tested
        return LLMSummarizer(llm=RecordingLLM(), **settings.component_kwargs())

    monkeypatch.setattr(factories, "build_llm_summarizer", fake_build)
    config = parse_config("sac-expert:summarizer.model=m.gguf,summarizer.max_input_chars=2000,name=sac-expert")
    assert config.summarizer.model_dump()["max_chars"] == 300
    said: list[str] = []
    out = factories.build_summarizers(config, ["contractnli", "privacy_qa", "maud", "cuad", "other"], said.append)
    assert all(isinstance(s, LLMSummarizer) for s in out.values())
    llms = {name: s for name, s in out.items() if isinstance(s, LLMSummarizer)}
    prompts = {name: s.prompt for name, s in llms.items()}
    assert prompts["contractnli"] is NDA_SUMMARY_PROMPT and prompts["privacy_qa"] is PRIVACY_POLICY_SUMMARY_PROMPT
    assert prompts["maud"] is MERGER_AGREEMENT_SUMMARY_PROMPT and prompts["cuad"] is COMMERCIAL_CONTRACT_SUMMARY_PROMPT
    assert {s.max_chars for s in out.values()} == {300}
    assert {s.input_window() for s in llms.values()} == {2000}
    assert said == ["[sac-expert] no expert prompt for dataset 'other': its documents get the generic prompt"]
