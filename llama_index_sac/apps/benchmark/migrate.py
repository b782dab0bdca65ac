"""Results files of the first shape (no ``schema_version``: the published ``docs/results/*/results.json``) in the
current shape, so they load as :class:`~llama_index_sac.apps.benchmark.results.RunResults`.

Version 1 differs from version 2 in three places, each translated here once:

* the configuration was flat (``parser``, ``chunk_size``, ``summary_chars``, ``llm``, ``summary_metadata``...,
  every key present whatever the kind): it becomes the nested :class:`~llama_index_sac.apps.benchmark.config.RunConfig`,
  keeping only the keys the configuration's kinds have (the semantic parser ignored ``chunk_size``; the baselines
  ignored every summary key); an extractive summarizer's remaining settings come from the identity the run recorded;
* the loader options were only in the benchmark's description (``"LegalBench-RAG (benchmarks_mini, sampling=all,
  scope=all)"``, ``"built-in synthetic contracts (n_documents=24, seed=0)"``): they become fields (the sample size
  and data folder of a LegalBench-RAG run from the recorded command, when it has them);
* configurations without a summarizer recorded ``summary_info`` as ``{}``: it becomes ``None``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from llama_index_sac.apps.benchmark.components import ExtractiveSummarizerSettings

__all__ = ["migrate_v1"]

_SYNTHETIC = re.compile(r"built-in synthetic contracts \(n_documents=([0-9]{1,6}), seed=(-?[0-9]{1,20})\)")
_LEGALBENCH = re.compile(r"LegalBench-RAG \(([^,()]{1,300}), sampling=(all|mini|random), scope=(referenced|all)\)")
_COMMAND_OPTIONS = {"--data-dir": "data_dir", "--sample": "sample", "--seed": "seed"}


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _command_options(command: Any) -> dict[str, Any]:
    """``--data-dir``, ``--sample`` and ``--seed`` of a recorded ``llama-sac eval`` command line."""
    if not isinstance(command, str):
        return {}
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: no options
        return {}
    out: dict[str, Any] = {}
    for word, value in zip(words, words[1:]):
        if word in _COMMAND_OPTIONS:
            out[_COMMAND_OPTIONS[word]] = value
    for key in ("sample", "seed"):
        if key in out:
            out[key] = int(out[key]) if re.fullmatch(r"-?[0-9]{1,20}", out[key]) else None
    return out


def _benchmark(benchmark: Mapping[str, Any], command: Any) -> dict[str, Any]:
    out = dict(benchmark)
    description = str(benchmark.get("description", ""))
    if match := _SYNTHETIC.fullmatch(description):
        out.update(source="synthetic", seed=int(match[2]))
    elif match := _LEGALBENCH.fullmatch(description):
        recorded = _command_options(command)
        out.update(source="legalbenchrag", benchmarks_dir=match[1], sampling=match[2], scope=match[3],
                   data_dir=recorded.get("data_dir"), seed=recorded.get("seed", 0), sample=recorded.get("sample"))
    else:
        out["source"] = "custom"
    return out


def _parser(flat: Mapping[str, Any]) -> dict[str, Any]:
    kind = flat.get("parser", "recursive")
    if kind == "semantic":  # the flat configuration's chunk_size/chunk_overlap did not reach the semantic parser
        return {"kind": kind}
    return {"kind": kind, **{key: flat[key] for key in ("chunk_size", "chunk_overlap") if key in flat}}


def _summarizer(flat: Mapping[str, Any], info: Any) -> dict[str, Any]:
    kind = flat.get("summarizer", "none")
    if kind == "none":
        return {"kind": kind}
    out: dict[str, Any] = {"kind": kind}
    common = {"summary_chars": "max_chars", "summary_metadata": "metadata_keys"}
    own = ({"summary_terms": "terms"} if kind == "extractive" else
           {"llm": "model", "llm_api_base": "api_base", "prompt": "prompt", "long_document": "long_document",
            "llm_input_chars": "max_input_chars"})
    for old, new in {**common, **own}.items():
        if old in flat:
            out[new] = flat[old]
    identities = info.get("summarizer_identity") if isinstance(info, Mapping) else None
    if kind == "extractive" and isinstance(identities, Mapping) and identities:
        identity = _mapping(next(iter(identities.values())), "summary_info.summarizer_identity entry")
        fields = set(ExtractiveSummarizerSettings.model_fields) - {"kind", "terms"}
        out.update({key: value for key, value in identity.items() if key in fields and key not in out})
    return out


def _config(entry: Any, index: int) -> dict[str, Any]:
    entry = _mapping(entry, f"configs[{index}]")
    flat = _mapping(entry.get("config"), f"configs[{index}].config")
    out = dict(entry)
    info = entry.get("summary_info")
    out["config"] = {
        "name": flat.get("name"),
        "parser": _parser(flat),
        "summarizer": _summarizer(flat, info),
        "augmentation": {"embed_metadata": flat.get("embed_metadata", [])},
        "retrieval": flat.get("retrieval", "dense"),
    }
    if not info:  # {}: no summarizer
        out["summary_info"] = None
    return out


def migrate_v1(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (a version-1 results dictionary) in the version-2 shape (not validated: the caller validates).

    Raises:
        ValueError: a part that is not the expected JSON type (the benchmark, a configuration).
    """
    out = dict(data)
    out["schema_version"] = 2
    out["benchmark"] = _benchmark(_mapping(data.get("benchmark"), "benchmark"), data.get("command"))
    configs = data.get("configs")
    if not isinstance(configs, list):
        raise ValueError(f"configs must be a JSON list, got {type(configs).__name__}")
    out["configs"] = [_config(entry, i) for i, entry in enumerate(configs)]
    return out
