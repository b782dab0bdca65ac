"""Instrumentation events of the summary step, sent through LlamaIndex's dispatcher.

Attach any ``BaseEventHandler`` to ``llama_index.core.instrumentation.get_dispatcher()`` (the root dispatcher, as
LlamaIndex's tracing integrations do) and every document the summary step handles shows up: a cache hit, or a start
followed by an end or a failure. Events carry the document id, never the document text.
"""

from __future__ import annotations

from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.base import BaseEvent

__all__ = [
    "SummaryCacheHitEvent",
    "SummaryEndEvent",
    "SummaryFailureEvent",
    "SummaryStartEvent",
    "dispatcher",
]

#: The dispatcher of the summary step (a child of LlamaIndex's root dispatcher: its handlers see these events).
dispatcher = get_dispatcher("llama_index_sac.augmentation")


class _SummaryEvent(BaseEvent):
    doc_id: str = Field(description="The document's id (``ref_doc_id`` of its chunks).")
    summarizer: str = Field(description="``class_name()`` of the summarizer.")


class SummaryStartEvent(_SummaryEvent):
    """A document's summary is about to be written (no cache hit)."""

    @classmethod
    def class_name(cls) -> str:
        return "SummaryStartEvent"


class SummaryEndEvent(_SummaryEvent):
    """A document's summary was written."""

    strategy: str = Field(description="How the summary was made (``SummaryResult.strategy``).")
    summary_chars: int = Field(ge=0, description="Length of the summary in characters.")

    @classmethod
    def class_name(cls) -> str:
        return "SummaryEndEvent"


class SummaryCacheHitEvent(_SummaryEvent):
    """A document's summary came from the summary cache (or the in-memory memo): no summarizer call."""

    @classmethod
    def class_name(cls) -> str:
        return "SummaryCacheHitEvent"


class SummaryFailureEvent(_SummaryEvent):
    """A document's summary failed (after the summarizer's own retries)."""

    error: str = Field(description="``ExceptionType: message`` of the failure.")

    @classmethod
    def class_name(cls) -> str:
        return "SummaryFailureEvent"
