"""Ingestion: :class:`SACIngestionPipeline`, which never records a document whose summary failed as done."""

from llama_index_sac.ingestion.pipeline import (
    SACIngestionPipeline,
    SettingsChangedWarning,
    SummaryFailureWarning,
    failed_documents,
)

__all__ = [
    "SACIngestionPipeline",
    "SettingsChangedWarning",
    "SummaryFailureWarning",
    "failed_documents",
]
