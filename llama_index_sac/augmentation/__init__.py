"""Summary-Augmented Chunking: :class:`SummaryAugmentationTransformation` and the per-document summary loop."""

from llama_index_sac.augmentation.transformation import (
    BOOKKEEPING_KEYS,
    EmbedLimitWarning,
    SummaryAugmentationTransformation,
    markdown_table_header,
    token_length_function,
)

__all__ = [
    "BOOKKEEPING_KEYS",
    "EmbedLimitWarning",
    "SummaryAugmentationTransformation",
    "markdown_table_header",
    "token_length_function",
]
