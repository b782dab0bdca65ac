"""Document summarizers for Summary-Augmented Chunking: the interface, an offline extractive fingerprint, LLM
summaries with LlamaIndex prompts, and a persistent summary cache."""

from llama_index_sac.summarizers.base import BaseSummarizer, SummarizationError, SummaryResult
from llama_index_sac.summarizers.cache import SummaryCache, summary_cache_key
from llama_index_sac.summarizers.extractive import ExtractiveSummarizer
from llama_index_sac.summarizers.llm import LLMSummarizer, LLMUnavailableError, is_transient_error
from llama_index_sac.summarizers.prompts import (
    COMMERCIAL_CONTRACT_SUMMARY_PROMPT,
    GENERIC_SUMMARY_PROMPT,
    MAP_SUMMARY_PROMPT,
    MERGER_AGREEMENT_SUMMARY_PROMPT,
    NDA_SUMMARY_PROMPT,
    PRIVACY_POLICY_SUMMARY_PROMPT,
    REDUCE_SUMMARY_PROMPT,
    SHORTEN_PROMPT,
)
from llama_index_sac.summarizers.terms import TermStatistics

__all__ = [
    "COMMERCIAL_CONTRACT_SUMMARY_PROMPT",
    "GENERIC_SUMMARY_PROMPT",
    "MAP_SUMMARY_PROMPT",
    "MERGER_AGREEMENT_SUMMARY_PROMPT",
    "NDA_SUMMARY_PROMPT",
    "PRIVACY_POLICY_SUMMARY_PROMPT",
    "REDUCE_SUMMARY_PROMPT",
    "SHORTEN_PROMPT",
    "BaseSummarizer",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "LLMUnavailableError",
    "SummarizationError",
    "SummaryCache",
    "SummaryResult",
    "TermStatistics",
    "is_transient_error",
    "summary_cache_key",
]
