"""The summary gives way, never the chunk: EMBED strings fitted to the embedding model's input limit, and the
identity metadata folded into the default summary."""

from __future__ import annotations

import warnings
from typing import Any

import llama_index.core.settings as llama_settings
import pytest
from llama_index.core import Settings
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import Document, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_sac import (
    EmbedLimitWarning,
    ExtractiveSummarizer,
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
)
from llama_index_sac.augmentation.fit import EmbedBudget, fit_summaries, settings_embed_model, summary_prefixes
from llama_index_sac.summarizers import BaseSummarizer, SummaryResult
from tests.conftest import FakeEmbedding


class WordTokenizer:
    """Counts like a BERT tokenizer would for plain words: one token per whitespace word, plus [CLS] and [SEP]."""

    def __call__(self, text: str, add_special_tokens: bool = True, truncation: bool = False) -> dict[str, Any]:
        return {"input_ids": [0] * (len(text.split()) + 2)}


class _Model:
    tokenizer = WordTokenizer()


class LimitedEmbedding(FakeEmbedding):
    """A model that reads at most ``max_length`` tokens and exposes its tokenizer (as HuggingFaceEmbedding does)."""

    max_length: int = 12
    _model: Any = PrivateAttr(default_factory=_Model)

    @classmethod
    def class_name(cls) -> str:
        return "LimitedEmbedding"


class Fixed(BaseSummarizer):
    summary: str = "Lease between Acme Corp. and Beta LLC, dated May 1, 2020."

    def _summarize(self, text: str, metadata: dict[str, str]) -> SummaryResult:
        return SummaryResult(summary=self.summary, strategy="extractive")


def split(doc_id: str, pieces: list[str], metadata: dict[str, Any] | None = None) -> tuple[Document, list[TextNode]]:
    """A document of ``pieces`` joined by blank lines, and one node per piece at its exact offsets."""
    starts = [sum(len(p) + 2 for p in pieces[:i]) for i in range(len(pieces))]
    return (Document(text="\n\n".join(pieces), id_=doc_id, metadata=metadata or {}),
            [node(doc_id, i, piece, start) for i, (piece, start) in enumerate(zip(pieces, starts))])


def node(doc_id: str, i: int, text: str, start: int) -> TextNode:
    out = TextNode(text=text, id_=f"{doc_id}#{i}", start_char_idx=start, end_char_idx=start + len(text))
    out.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
    return out


def test_summary_prefixes_end_at_word_boundaries_without_trailing_punctuation() -> None:
    assert summary_prefixes("Lease between Acme Corp., and Beta LLC.") == [
        "Lease", "Lease between", "Lease between Acme", "Lease between Acme Corp.",
        "Lease between Acme Corp., and", "Lease between Acme Corp., and Beta",
        "Lease between Acme Corp., and Beta LLC."]
    assert summary_prefixes("Single") == ["Single"]
    assert summary_prefixes("A - B") == ["A", "A - B"]  # "A -" loses its dash: the same as "A", kept once


def test_fit_summaries_keeps_the_longest_prefix_that_fits_in_characters() -> None:
    chunk = node("d", 0, "x" * 50, 0)
    chunk.metadata["document_summary"] = "Alpha beta gamma delta"
    # EMBED = "document_summary: " (18) + summary + "\n\n" (2) + 50 characters: 70 + len(summary)
    report = fit_summaries([chunk], "document_summary", EmbedBudget(81, len, "81 characters"))
    assert chunk.metadata["document_summary"] == "Alpha beta"  # 10 <= 11 < 16 ("Alpha beta gamma")
    assert chunk.metadata["summary_trimmed"] is True and len(chunk.get_content(MetadataMode.EMBED)) == 80
    assert "summary_trimmed" in chunk.excluded_embed_metadata_keys
    assert (report.nodes, report.trimmed, report.over) == (1, 1, 0)
    tight = node("d", 1, "y" * 50, 50)
    tight.metadata["document_summary"] = "Alpha beta"
    fit_summaries([tight], "document_summary", EmbedBudget(74, len, "74"))  # not one word fits: 70 + 5 > 74
    assert tight.metadata["document_summary"] == ""
    assert tight.get_content(MetadataMode.EMBED) == "y" * 50  # the summary is no longer embedded, the chunk whole


def test_the_transformation_trims_per_chunk_with_the_models_tokenizer() -> None:
    # chunks of 2, 5 and 9 words; the summary has 11 words; the model reads 12 tokens with [CLS] and [SEP]
    doc, nodes = split("lease.txt", ["one two", "three four five six seven",
                                     "eight nine ten eleven twelve thirteen fourteen fifteen sixteen"])
    transform = SummaryAugmentationTransformation(summarizer=Fixed(), embed_model=LimitedEmbedding())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every chunk fits alone: no warning
        out = transform(nodes, documents=[doc])
    # tokens = 2 + "document_summary:" (1) + summary words + chunk words <= 12: summary words <= 9 - chunk words
    assert [n.metadata["document_summary"] for n in out] == [
        "Lease between Acme Corp. and Beta LLC",  # 7 words (of 11), the comma after "LLC" dropped
        "Lease between Acme Corp.",                     # 4 words
        "",                                              # 0 words: 2 + 9 = 11 tokens, the summary would add 2
    ]
    assert [n.metadata.get("summary_trimmed") for n in out] == [True, True, True]
    bodies = [n.get_content(MetadataMode.NONE) for n in out]
    assert bodies == [n.text for n in nodes] and out[2].get_content(MetadataMode.EMBED) == bodies[2]
    fit = transform.last_embed_fit
    assert (fit.nodes, fit.trimmed, fit.over) == (3, 3, 0)
    assert transform.to_dict()["embed_model"] == {"class_name": "LimitedEmbedding", "model_name": "unknown",
                                                  "max_tokens": 12, "text_instruction": None}
    again = SummaryAugmentationTransformation(summarizer=Fixed(), embed_model=LimitedEmbedding())(out, documents=[doc])
    assert [n.metadata["document_summary"] for n in again] == [n.metadata["document_summary"] for n in out]


def test_a_chunk_too_long_alone_keeps_its_summary_and_is_counted_once() -> None:
    doc, nodes = split("d.txt", ["a b c d e f g h i j k l m n", "short one"])
    transform = SummaryAugmentationTransformation(summarizer=Fixed(), embed_model=LimitedEmbedding())
    with pytest.warns(EmbedLimitWarning, match=r"1 of 2 augmented nodes exceed the input limit of 12 tokens .* "
                                               r"even without their summary \(largest: node .*, 16\)") as record:
        out = transform(nodes, documents=[doc])
    assert len(record) == 1 and out[0].metadata["document_summary"] == Fixed().summary  # left whole, not trimmed
    assert "summary_trimmed" not in out[0].metadata and out[1].metadata["summary_trimmed"] is True
    warn = SummaryAugmentationTransformation(summarizer=Fixed(), embed_model=LimitedEmbedding(),
                                             on_embed_overflow="warn")
    with pytest.warns(EmbedLimitWarning, match="2 of 2 augmented nodes exceed the input limit of 12 tokens"):
        untouched = warn(split("d.txt", ["a b c d e f g h i j k l m n", "short one"])[1], documents=[doc])
    assert {n.metadata["document_summary"] for n in untouched} == {Fixed().summary}


def test_without_a_model_or_limit_nothing_is_measured_and_one_warning_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Settings, "_embed_model", None)  # no Settings.embed_model either
    monkeypatch.setattr(llama_settings, "resolve_embed_model", _no_default_model)  # never LlamaIndex's default
    doc = Document(text="word " * 400, id_="d")
    transform = SummaryAugmentationTransformation(summarizer=Fixed())
    with pytest.warns(EmbedLimitWarning, match=r"EMBED strings \(summary \+ chunk\) are not fitted to an embedding "
                                               r"model's input limit.*set Settings.embed_model") as record:
        out = transform(RecursiveCharacterNodeParser(chunk_size=500)([doc]), documents=[doc])
    assert len(record) == 1 and record[0].filename == __file__  # at the user's line
    assert {n.metadata["document_summary"] for n in out} == {Fixed().summary}
    assert transform.last_embed_fit.nodes == 0 and transform.to_dict()["embed_model"] is None
    assert "settings_embed_model" not in transform.to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per transformation
        transform(RecursiveCharacterNodeParser(chunk_size=500)([doc]), documents=[doc])
        # summaries not embedded, or a limit given: nothing to say
        SummaryAugmentationTransformation(summarizer=Fixed(), embed_summary=False)(
            RecursiveCharacterNodeParser(chunk_size=500)([doc]), documents=[doc])
        SummaryAugmentationTransformation(summarizer=Fixed(), embed_limit=10_000)(
            RecursiveCharacterNodeParser(chunk_size=500)([doc]), documents=[doc])


def _no_default_model(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("LlamaIndex's default embedding model was built")


def test_settings_embed_model_is_read_without_building_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Against the pinned llama-index-core: the value behind the ``Settings.embed_model`` property."""
    monkeypatch.setattr(Settings, "_embed_model", None)
    monkeypatch.setattr(llama_settings, "resolve_embed_model", _no_default_model)
    assert settings_embed_model() is None
    monkeypatch.undo()
    monkeypatch.setattr(Settings, "_embed_model", None)
    model = LimitedEmbedding()
    Settings.embed_model = model
    assert settings_embed_model() is model


def test_a_transformation_without_embed_model_fits_to_settings_embed_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Settings, "_embed_model", None)
    Settings.embed_model = LimitedEmbedding()
    pieces = ["one two", "three four five six seven",
              "eight nine ten eleven twelve thirteen fourteen fifteen sixteen"]
    transform = SummaryAugmentationTransformation(summarizer=Fixed())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fitted: no warning
        out = transform(split("lease.txt", pieces)[1], documents=[split("lease.txt", pieces)[0]])
    # the same trimming as with embed_model=LimitedEmbedding() (test above, worked out there)
    assert [n.metadata["document_summary"] for n in out] == [
        "Lease between Acme Corp. and Beta LLC", "Lease between Acme Corp.", ""]
    assert transform.last_embed_fit.trimmed == 3
    # the model fitted to is part of the settings LlamaIndex's ingestion cache hashes
    assert transform.to_dict()["settings_embed_model"] == {"class_name": "LimitedEmbedding", "model_name": "unknown",
                                                           "max_tokens": 12, "text_instruction": None}
    assert "settings_embed_model" not in SummaryAugmentationTransformation(
        summarizer=Fixed(), embed_model=LimitedEmbedding()).to_dict()




def test_the_default_summary_folds_in_the_file_name_and_title() -> None:
    text = "NON-DISCLOSURE AGREEMENT\n\nThis Agreement is made between Kestrel Analytics, Inc. and Marlow Ltd."
    summarizer = ExtractiveSummarizer()
    assert summarizer.metadata_keys == ["file_name", "title"] and summarizer.identity()["metadata_keys"] == [
        "file_name", "title"]
    named = summarizer.summarize(text, {"file_name": "NDA_Kestrel%20v2.txt", "title": "Kestrel NDA", "x": "y"})
    assert named.summary.startswith("NDA Kestrel v2; Kestrel NDA. Non-Disclosure Agreement between Kestrel")
    assert summarizer.summarize(text).summary.startswith("Non-Disclosure Agreement between Kestrel")  # no metadata
    content_only = ExtractiveSummarizer(metadata_keys=[])
    assert content_only.summarize(text, {"file_name": "NDA_Kestrel.txt"}).summary == summarizer.summarize(text).summary
