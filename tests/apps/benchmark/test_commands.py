"""``llama-sac eval`` and ``llama-sac report`` (``llama_index_sac.apps.benchmark.commands``): every ``eval`` option
checked against the model it sets, bad input as one clear error line (exit 2, no traceback, no output), and the
tables of a finished run printed again."""

from __future__ import annotations

import inspect
import typing

import pytest
from typer.testing import CliRunner

from llama_index_sac.apps.benchmark.commands import eval_command
from llama_index_sac.apps.benchmark.components import (
    PARSER_KINDS,
    SUMMARIZER_KINDS,
    ComponentSettings,
    ExtractiveSummarizerSettings,
    HybridParserSettings,
    LLMSummarizerSettings,
    RecursiveParserSettings,
    SemanticParserSettings,
)
from llama_index_sac.apps.benchmark.config import PRESETS, LoaderOptions, RunConfig, RunSettings, parse_config
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.apps.benchmark.eval_job import (
    COMMON_OPTIONS,
    DEFAULT_CONFIGS,
    LOADER_OPTIONS,
    SETTINGS_OPTIONS,
    SUMMARY_OPTIONS,
)
from llama_index_sac.apps.benchmark.runner import run_evaluation
from llama_index_sac.apps.cli import app
from tests.conftest import FakeEmbedding

runner = CliRunner()


def _inner(annotation):
    """The type of an eval parameter without Annotated and Optional."""
    args = typing.get_args(annotation)
    annotation = args[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    options = [a for a in typing.get_args(annotation) if a is not type(None)]
    return options[0] if typing.get_origin(annotation) in (typing.Union, __import__("types").UnionType) else annotation


def _config_fields(key):
    """The pydantic fields a dotted configuration key names (one per kind that has it)."""
    if "." not in key:
        return [RunConfig.model_fields[key]]
    section, name = key.split(".")
    parsers: list[type[ComponentSettings]] = [RecursiveParserSettings, SemanticParserSettings, HybridParserSettings]
    summarizers: list[type[ComponentSettings]] = [ExtractiveSummarizerSettings, LLMSummarizerSettings]
    classes = parsers if section == "parser" else summarizers
    return [cls.model_fields[name] for cls in classes if name in cls.model_fields]


def _min(field):
    for item in field.metadata:
        if getattr(item, "gt", None) is not None:
            return item.gt + 1
        if getattr(item, "ge", None) is not None:
            return item.ge
    return None


def test_every_eval_option_is_checked_against_the_models():
    """Each ``llama-sac eval`` option sets a configuration key, a RunSettings field or a LoaderOptions field (or is
    one of the few CLI-only ones); its choices, default and bounds are the model's."""
    signature = inspect.signature(eval_command)
    hints = typing.get_type_hints(eval_command, include_extras=True)
    cli_only = {"mini", "config", "output_dir", "quiet"}
    tables = [COMMON_OPTIONS, SUMMARY_OPTIONS, SETTINGS_OPTIONS, LOADER_OPTIONS]
    assert sum(len(t) for t in tables) + len(cli_only) == len(signature.parameters)  # nothing unclassified
    for name, parameter in signature.parameters.items():
        info = typing.get_args(hints[name])[1]  # typer's OptionInfo
        kind = _inner(hints[name])
        choices = typing.get_args(kind) if typing.get_origin(kind) is typing.Literal else None
        if name in COMMON_OPTIONS or name in SUMMARY_OPTIONS:
            key = {**COMMON_OPTIONS, **SUMMARY_OPTIONS}[name]
            assert parameter.default is None, name  # not given: each configuration keeps its own value
            assert key in info.help, (name, info.help)
            field = _config_fields(key)[0] if key not in ("parser.kind", "summarizer.kind") else None
            assert field is None or info.help.startswith(field.description.rstrip(".")), (name, info.help)
            if key == "parser.kind":
                assert choices == PARSER_KINDS
            elif key == "summarizer.kind":
                assert choices == tuple(k for k in SUMMARIZER_KINDS if k != "none")
            else:
                fields = _config_fields(key)
                assert fields, key
                for field in fields:
                    if choices is not None:
                        assert choices == typing.get_args(field.annotation), name
                    assert info.min == _min(field), name
                    default = None if field.is_required() else field.get_default(call_default_factory=True)
                    if default is not None and not isinstance(default, bool):
                        assert f"default {default}" in info.help, (name, info.help)
        elif name in SETTINGS_OPTIONS:
            field = RunSettings.model_fields[SETTINGS_OPTIONS[name]]
            default = field.get_default(call_default_factory=True)
            if name == "k":
                assert parameter.default == ",".join(map(str, default))
            elif name == "cache_dir":
                assert parameter.default is None and str(default) in info.help
            else:
                assert parameter.default == default, name
                assert info.min == _min(field), name
        elif name in LOADER_OPTIONS:
            field = LoaderOptions.model_fields[LOADER_OPTIONS[name]]
            default = field.get_default(call_default_factory=True)
            assert parameter.default == default, name
            assert info.min == _min(field), name
            if choices is not None:
                assert choices == typing.get_args(field.annotation), name
            if name == "n_documents":
                assert info.max == next(m.le for m in field.metadata if getattr(m, "le", None) is not None)
        else:
            assert name in cli_only, f"eval option --{name} is checked against no model"
    assert DEFAULT_CONFIGS == ("baseline", "llamaindex", "default") and all(c in PRESETS for c in DEFAULT_CONFIGS)


def one_error(result) -> str:
    """The single ``error:`` line of a failed invocation (exit 2, nothing else starts with ``error:``, no traceback,
    no typer box)."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.output and "\u256d" not in result.output  # no box drawing
    return errors[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data-dir", "/nonexistent/lbr"], "data directory not found"),
        (["--data-dir", "x" * 5000], "data directory not found"),  # a name too long for the OS
        (["-c", "nope"], "unknown configuration"),
        (["--scope", "everything"], "invalid value for '--scope': 'everything' is not one of 'referenced', 'all'"),
        (["--datasets", "cuad"], "need --data-dir"),
        (["--parser", "fancy"], "invalid value for '--parser': 'fancy' is not one of 'recursive', 'semantic'"),
        (["--retrieval", "sparse"], "invalid value for '--retrieval'"),
        (["--summarizer", "none"], "invalid value for '--summarizer'"),  # the summarizer OF the SAC configurations
        (["--chunk-size", "0"], "invalid value for '--chunk-size'"),
        (["--retrieval-threads", "0"], "invalid value for '--retrieval-threads'"),
        (["--parser", "semantic", "--chunk-size", "300"], "the semantic parser has no option 'chunk_size'"),
        (["--summarizer", "llm"], "--summarizer llm needs --llm MODEL: an OpenAI model name"),
        (["-c", "sac-llm"], "configuration 'sac-llm' (an LLM summarizer) needs --llm MODEL"),
        (["--summary-chars", "100"], "error: no such option: --summary-chars"),
        (["-c", "sac:summary_metadata=file_name"], "bad option 'summary_metadata'"),
        (["-c", "sac-doc:document_retrieval.prior_weight=inf"], "document_retrieval.prior_weight: Input should be a "
         "finite number"),
        (["-c", "sac-llm:summarizer.model=/nonexistent/m.gguf"], "GGUF model not found: /nonexistent/m.gguf"),
        (["--k", "0,2"], "error: --k: expected comma-separated positive integers"),
        (["--k", "0"], "positive integers (at most 7 digits) such as 1,4,16, got '0'"),
        (["--k", "1,,4"], "got '1,,4'"),
        (["--k", ""], "got ''"),
        (["--k", "1,x"], "got '1,x'"),
        (["--k", "\u0663"], "positive integers"),  # an Arabic-Indic digit: int() would take it
        (["--k", "1" * 5000], "at most 7 digits"),
        (["--nope"], "error: no such option: --nope"),
        (["--sample", "0"], "error: invalid value for '--sample'"),
        (["--seed", "x"], "error: invalid value for '--seed'"),
        (["--n-documents", "1"], "error: invalid value for '--n-documents'"),
        (["-c", "baseline;"], "error: --config: empty item in 'baseline;'"),
        (["-d", "cuad,,maud"], "error: --datasets: empty item"),
    ],
)
def test_bad_input_gives_one_clear_error(tmp_path, args, message):
    result = runner.invoke(app, ["eval", *args, "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")])
    assert message in one_error(result)
    assert not (tmp_path / "out").exists()


def test_report_command_rebuilds_tables_from_a_run_folder_or_its_results_json(tmp_path):
    results = run_evaluation(synthetic_contracts(n_documents=2), [parse_config("baseline")],
                             RunSettings(ks=[1, 2, 4], cache_dir=tmp_path / "cache", show_progress=False),
                             embed_model=FakeEmbedding())
    results = results.model_copy(update={"command": "llama-sac eval --n-documents 2"})
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(results.to_json())
    drm4 = results.configs[0].aggregates.overall["4"].drm
    for target in (tmp_path / "run", tmp_path / "run" / "results.json"):
        out = runner.invoke(app, ["report", str(target), "--markdown"])
        assert out.exit_code == 0, out.output
        assert "| baseline | drm |" in out.output and "k=4" in out.output
        assert "llama-sac eval --n-documents 2" in out.output and f"{drm4:.3f}" in out.output
    bad = runner.invoke(app, ["report", str(tmp_path / "missing.json")])
    assert bad.exit_code == 2 and "cannot read results" in bad.output
