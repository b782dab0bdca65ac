"""The summary step's instrumentation events, seen by a handler on LlamaIndex's root dispatcher."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers.base import BaseEventHandler
from llama_index.core.instrumentation.events.base import BaseEvent
from llama_index.core.schema import Document

from llama_index_sac import LLMSummarizer, RecursiveCharacterNodeParser, SummaryAugmentationTransformation
from llama_index_sac.augmentation.events import (
    SummaryCacheHitEvent,
    SummaryEndEvent,
    SummaryFailureEvent,
    SummaryStartEvent,
)
from tests._summary_fakes import RecordingLLM

FAST = {"retry_initial_delay": 0.0, "retry_max_delay": 0.0, "max_retries": 0}


class _Collect(BaseEventHandler):
    seen: list[BaseEvent] = []

    @classmethod
    def class_name(cls) -> str:
        return "_Collect"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if event.class_name().startswith("Summary"):
            self.seen.append(event)


@pytest.fixture
def events() -> Iterator[list[BaseEvent]]:
    handler = _Collect(seen=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        yield handler.seen
    finally:
        root.event_handlers.remove(handler)


def _nodes(transformation: SummaryAugmentationTransformation, docs: list[Document]) -> None:
    transformation(RecursiveCharacterNodeParser(chunk_size=200, chunk_overlap=0)(docs))


def test_start_end_then_cache_hit_per_document(events: list[BaseEvent], tmp_path: Path) -> None:
    docs = [Document(text="Alpha Corp and Beta LLC agree. " * 5, id_="a"),
            Document(text="Gamma Inc leases the mill. " * 5, id_="b")]
    summarizer = LLMSummarizer(llm=RecordingLLM(responder=lambda p: "A short summary."), **FAST)  # type: ignore[arg-type]
    _nodes(SummaryAugmentationTransformation(summarizer=summarizer, cache_dir=str(tmp_path)), docs)
    kinds = sorted((type(e).__name__, e.doc_id) for e in events)  # type: ignore[attr-defined]
    assert kinds == [("SummaryEndEvent", "a"), ("SummaryEndEvent", "b"),
                     ("SummaryStartEvent", "a"), ("SummaryStartEvent", "b")]
    end = next(e for e in events if isinstance(e, SummaryEndEvent))
    assert end.summary_chars == len("A short summary.") and end.summarizer == "LLMSummarizer"
    events.clear()
    _nodes(SummaryAugmentationTransformation(summarizer=summarizer, cache_dir=str(tmp_path)), docs)  # a second run
    assert sorted((type(e).__name__, e.doc_id) for e in events) == [  # type: ignore[attr-defined]
        ("SummaryCacheHitEvent", "a"), ("SummaryCacheHitEvent", "b")]
    assert all(isinstance(e, SummaryCacheHitEvent) for e in events)


def test_failure_event_names_the_document_and_the_error(events: list[BaseEvent]) -> None:
    llm = RecordingLLM(script=[ValueError("model exploded")])
    summarizer = LLMSummarizer(llm=llm, **FAST)  # type: ignore[arg-type]
    transformation = SummaryAugmentationTransformation(summarizer=summarizer, on_error="skip")
    _nodes(transformation, [Document(text="Delta Ltd sells grain. " * 5, id_="d")])
    assert [type(e) for e in events] == [SummaryStartEvent, SummaryFailureEvent]
    failure = events[1]
    assert isinstance(failure, SummaryFailureEvent)
    assert failure.doc_id == "d" and "model exploded" in failure.error
