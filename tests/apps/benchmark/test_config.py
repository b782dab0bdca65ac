"""Run configurations (``llama_index_sac.apps.benchmark.config`` and ``components``): presets and dotted
overrides, the published command lines, clean errors for bad specs, the component settings checked against the
components' own fields, and the run settings' validation."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from llama_index_sac.apps.benchmark import factories
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
    MissingLLMModelError,
    RunConfig,
    RunSettings,
    parse_config,
)
from llama_index_sac.apps.benchmark.results import load_results
from llama_index_sac.node_parser import HybridNodeParser, RecursiveCharacterNodeParser, SemanticNodeParser
from llama_index_sac.summarizers import ExtractiveSummarizer, LLMSummarizer
from tests.conftest import FakeEmbedding


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



def test_run_settings_are_validated():
    assert RunSettings(ks=[4, 1, 4]).ks == [1, 4]  # sorted, deduplicated
    bad: dict[str, Any]
    for bad in ({"ks": []}, {"ks": [0, 2]}, {"retrieval_threads": 0}, {"llm_concurrency": 0}, {"confusion_k": 0},
                {"workers": 4}):
        with pytest.raises(ValueError):
            RunSettings(**bad)
