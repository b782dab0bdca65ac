"""Fitting each node's EMBED string into the embedding model's input limit: the summary gives way, never the chunk.

An embedding model reads at most a fixed number of tokens (all-MiniLM-L6-v2: 256, ``[CLS]`` and ``[SEP]``
included) and silently drops the rest. SAC puts the summary BEFORE the chunk, so an EMBED string over the limit loses
the end of its chunk. :func:`fit_summaries` trims, per node, the summary that node carries to the longest prefix
ending at a word boundary (trailing ``,;:-(`` and spaces dropped, as
:func:`~llama_index_sac.summarizers.base.cut_at_word_boundary` does) with which the node's whole EMBED string
(summary, separators, other embedded metadata, chunk) fits, measured with the model's own tokenizer. The trimmed
summary is what the node's metadata holds, so it is what is embedded, stored and cached: a function of the node's
text, its document's summary and the budget, nothing else. When no word of the summary fits, the node keeps an empty
summary that is not embedded. A chunk that exceeds the limit even without its summary cannot be fitted without
cutting the chunk: its summary is left whole and the node is counted in :attr:`FitReport.over`.

The model is the one the transformation is given, else the one set on LlamaIndex's ``Settings``
(:func:`settings_embed_model`); with neither (and no explicit limit) nothing is measured, and
:func:`warn_unfitted` says so once.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.settings import Settings

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.embeddings.limits import (
    EmbedLimitWarning,
    check_text_limit,
    embedding_max_tokens,
    embedding_token_counter,
)

__all__ = ["EmbedBudget", "FitReport", "character_budget", "fit_embed_strings", "fit_summaries", "model_budget",
           "settings_embed_model", "summary_prefixes", "warn_unfitted"]

logger = logging.getLogger(__name__)

_TRAILING = " \t\n,;:-("


@dataclass(frozen=True)
class EmbedBudget:
    """An input limit and how to measure a text against it.

    Attributes:
        limit: the largest size allowed, in the unit of ``measure`` (tokens of the model, or characters).
        measure: the size of an EMBED string (special tokens included for a tokenizer).
        label: the limit in messages (``"the input limit of 256 tokens of sentence-transformers/all-MiniLM-L6-v2"``).
    """

    limit: int
    measure: Callable[[str], int]
    label: str


@dataclass(frozen=True)
class FitReport:
    """What :func:`fit_summaries` did to one batch of nodes.

    Attributes:
        nodes: nodes measured (each once, plus the trials of the trimmed ones).
        trimmed: nodes whose summary was trimmed to fit.
        over: nodes whose chunk exceeds the limit without any summary (left as they were).
        largest_over: ``(node id, size)`` of the largest of those, or None.
    """

    nodes: int = 0
    trimmed: int = 0
    over: int = 0
    largest_over: tuple[str, int] | None = None


def summary_prefixes(summary: str) -> list[str]:
    """The candidate trimmed summaries of ``summary``, shortest first: every prefix that ends where a word ends
    (before a space or a line break, trailing ``,;:-(`` and spaces removed), without repeats or empty ones, then
    ``summary`` itself. Linear in ``len(summary)`` per prefix."""
    out: list[str] = []
    for index, char in enumerate(summary):
        if char in " \n\t":
            prefix = summary[:index].rstrip(_TRAILING)
            if prefix and (not out or prefix != out[-1]) and prefix != summary:
                out.append(prefix)
    out.append(summary)
    return out


def _measure_with(node: BaseNode, key: str, value: str | None, budget: EmbedBudget) -> int:
    """Size of ``node``'s EMBED string with ``metadata[key]`` set to ``value`` (``None``: the key not embedded)."""
    old_value, old_excluded = node.metadata[key], node.excluded_embed_metadata_keys
    try:
        if value is None:
            node.excluded_embed_metadata_keys = [*old_excluded, key]
        else:
            node.metadata[key] = value
        return budget.measure(node.get_content(metadata_mode=MetadataMode.EMBED))
    finally:
        node.metadata[key] = old_value
        node.excluded_embed_metadata_keys = old_excluded


def fit_summaries(nodes: Sequence[BaseNode], summary_key: str, budget: EmbedBudget, *,
                  flag_key: str = "summary_trimmed") -> FitReport:
    """Trim, in place, the summary of every node whose EMBED string exceeds ``budget`` (module docstring).

    Args:
        nodes: the nodes as they will be embedded; those without a (non-empty, embedded) ``metadata[summary_key]``
            are only measured.
        summary_key: the metadata key of the summary.
        budget: the limit and how to measure.
        flag_key: metadata key set to True on every node whose summary was trimmed (excluded from EMBED and LLM).

    Returns:
        A :class:`FitReport` (counts; the caller reports them).
    """
    trimmed = over = 0
    largest: tuple[str, int] | None = None
    for node in nodes:
        size = budget.measure(node.get_content(metadata_mode=MetadataMode.EMBED))
        if size <= budget.limit:
            continue
        summary = node.metadata.get(summary_key)
        embedded = isinstance(summary, str) and summary and summary_key not in node.excluded_embed_metadata_keys
        alone = _measure_with(node, summary_key, None, budget) if embedded else size
        if alone > budget.limit:
            over += 1
            if largest is None or alone > largest[1]:
                largest = (node.node_id, alone)
            continue
        assert isinstance(summary, str)
        candidates = summary_prefixes(summary)
        low, high = -1, len(candidates) - 1  # candidates[high] (the whole summary) does not fit; -1: none
        while high - low > 1:  # the longest candidate that fits (sizes grow with the prefix)
            middle = (low + high) // 2
            if _measure_with(node, summary_key, candidates[middle], budget) <= budget.limit:
                low = middle
            else:
                high = middle
        node.metadata[summary_key] = candidates[low] if low >= 0 else ""
        if low < 0:
            node.excluded_embed_metadata_keys = sorted({*node.excluded_embed_metadata_keys, summary_key})
        node.metadata[flag_key] = True
        node.excluded_embed_metadata_keys = sorted({*node.excluded_embed_metadata_keys, flag_key})
        node.excluded_llm_metadata_keys = sorted({*node.excluded_llm_metadata_keys, flag_key})
        trimmed += 1
    return FitReport(nodes=len(nodes), trimmed=trimmed, over=over, largest_over=largest)


def character_budget(limit: int, length_function: Callable[[str], int] | None) -> EmbedBudget:
    """``limit`` in the unit of ``length_function`` (None: characters)."""
    unit = "characters" if length_function is None else "units of embed_length_function"
    return EmbedBudget(limit, length_function or len, f"embed_limit={limit} {unit}")


def model_budget(model: BaseEmbedding) -> EmbedBudget | None:
    """``model``'s input limit, measured with its own tokenizer (its ``text_instruction`` included), or None (logged)
    when the model exposes no limit or no tokenizer."""
    limit = embedding_max_tokens(model)
    count = embedding_token_counter(model) if limit is not None else None
    if limit is None or count is None:
        logger.info("EMBED strings not measured: %s exposes no %s", model.model_name,
                    "tokenizer" if limit else "input limit")
        return None
    instruction = getattr(model, "text_instruction", None) or ""
    measure = (lambda text: count(instruction + text)) if instruction else count
    return EmbedBudget(limit, measure, f"the input limit of {limit} tokens of {model.model_name}")


def settings_embed_model() -> BaseEmbedding | None:
    """The embedding model set with ``Settings.embed_model = ...``, or None when none was set.

    Reads the value behind LlamaIndex's ``Settings.embed_model`` property (``Settings._embed_model`` of
    llama-index-core): the property itself would build LlamaIndex's default model (OpenAI: an API key and a network
    call) when none was set. ``tests/augmentation/test_embed_fit.py`` checks this against the pinned core."""
    model = getattr(Settings, "_embed_model", None)
    return model if isinstance(model, BaseEmbedding) else None


def warn_unfitted() -> None:
    """The :class:`EmbedLimitWarning` that EMBED strings are not fitted to any model's input limit."""
    warnings.warn(
        "SummaryAugmentationTransformation: EMBED strings (summary + chunk) are not fitted to an embedding model's "
        "input limit, and a model silently drops what exceeds it: pass embed_model= (or embed_limit=) or set "
        "Settings.embed_model",
        EmbedLimitWarning, stacklevel=caller_stacklevel(),
    )


def fit_embed_strings(nodes: Sequence[BaseNode], summary_key: str, budget: EmbedBudget | None,
                      policy: str) -> FitReport:
    """Apply ``policy`` (``on_embed_overflow``) to the EMBED strings of ``nodes`` (the chunks about to be embedded).

    ``"trim"``: :func:`fit_summaries`, the trimmed count logged, and ONE :class:`EmbedLimitWarning` with the counts
    when some chunks exceed the limit on their own. ``"warn"`` / ``"raise"``: nothing trimmed, one warning or
    ``ValueError`` (:func:`~llama_index_sac.embeddings.limits.check_text_limit`). Nothing with ``budget=None``.

    Raises:
        ValueError: ``policy="raise"`` and some EMBED string exceeds the limit.
    """
    if budget is None or not nodes:
        return FitReport(nodes=len(nodes) if budget is not None else 0)
    if policy == "trim":
        report = fit_summaries(nodes, summary_key, budget)
        if report.trimmed:
            logger.info("summary trimmed on %d of %d nodes to fit %s", report.trimmed, report.nodes, budget.label)
        if report.largest_over is not None:
            node_id, size = report.largest_over
            warnings.warn(
                f"{report.over} of {report.nodes} augmented nodes exceed {budget.label} even without their summary "
                f"(largest: node {node_id!r}, {size}): the embedding model will cut the end of those chunks; lower "
                "the parser's chunk size", EmbedLimitWarning, stacklevel=caller_stacklevel())
        return report
    measure = budget.measure

    def describe(index: int, size: int) -> str:
        node = nodes[index]
        body = measure(node.get_content(metadata_mode=MetadataMode.NONE))
        alone = ", the summary alone leaves no room for the chunk" if size - body >= budget.limit else ""
        return f"node {node.node_id!r}, {size}, of which the chunk body is {body}{alone}"

    over = check_text_limit(
        [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes], budget.limit, measure,
        what="augmented nodes", limit_label=budget.label, describe=describe, on_overflow=policy,  # type: ignore[arg-type]
        advice="the embedding model will truncate them: on_embed_overflow='trim' trims the summary to fit, or "
        "lower the chunk size or the summarizer's max_chars. Chunk bodies are never cut here.",
    )
    return FitReport(nodes=len(nodes), over=len(over))
