"""Distinctive names of a document: the capitalised words it uses that few legal documents contain.

Users name the contract they ask about ("Consider Motorola's Non-Disclosure Agreement; ...", "the NDA between CEII
and ...", "In the Acme MSA, ..."). The names in such a query are capitalised words (parties, products, acronyms)
that the document itself uses, and that most other legal documents do not: "Motorola", "CEII", "Seeed", "HNBA".
Words every contract capitalises ("Agreement", "Confidential Information", "Receiving Party", "Section") carry no
identity, and a fixed 150-character summary has room for a few names only. :func:`distinctive_names` keeps the
first kind from the WHOLE document text:

* **name tokens** (:func:`name_tokens`): ``TOKEN_PATTERN`` words of the original text (at least two characters and
  a letter, inner hyphens kept; an apostrophe ends a word, so a possessive ``Motorola's`` gives ``motorola``) whose
  first character is an upper-case letter, or a digit (``23andMe``, ``3M``); lower-cased; English stop words out;
* **distinctive** ones: contained in fewer than ``max_document_frequency`` of the documents of a reference table of
  document frequencies (:class:`~llama_index_sac.summarizers.terms.TermStatistics`, the shipped ``legal-terms-v1`` by
  default: 712 distinct legal documents). A word the table has never seen counts as the rarest.
* **two-word names** (``pairs=True``): a party named by two common words ("Blue Apron", "Product Development") is
  distinctive only as a pair. Two name tokens that are adjacent in the text (separated by spaces or tabs only, no
  stop word, no punctuation, no line break: :func:`name_pairs`) form the token ``"blue_apron"``. The table holds no
  pair frequencies, so a pair of two words that are each NOT distinctive counts as distinctive when the share of the
  table's documents expected to contain both, were the words independent (``df(a) / N * df(b) / N``), is below
  ``max_document_frequency``. A pair with a distinctive word is left out: that word already names the document.
  Collocations every contract uses ("Confidential Information", "Receiving Party") are frequent word by word and
  stay out.

* **word parts** (:func:`with_word_parts`): a hyphenated word is one token ("AGProjects-NDA", a file name a summary
  carries), while a query says "AGProjects". The parts of a hyphenated word that are distinctive by the same rule
  follow it, so ``agprojects`` matches and ``privacy-policy`` gives nothing more.

Everything here is a function of the text and the (versioned, fingerprinted) table: no model, no batch statistics.
Every function is one linear pass over its input (at most one bounded regular expression).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from llama_index_sac.constants import DEFAULT_MAX_DOCUMENT_FREQUENCY
from llama_index_sac.summarizers.terms import TermStatistics, stop_words

__all__ = ["PAIR_SEPARATOR", "distinctive_names", "name_pairs", "name_tokens",
           "pair_token", "query_tokens", "with_word_parts", "word_tokens"]

# maximal runs of word characters and hyphens (each character is read once: no look-ahead that a long run of
# "1-1-1-..." would make quadratic); the ``TOKEN_PATTERN`` rules are applied to each run in ``_words``
_RUN_RE = re.compile(r"(?<![\w\-])\w[\w\-]*")
# the runs that start with an upper-case or non-ASCII letter or a digit: the candidate names, found by the regular
# expression itself so that the Python loop sees a small share of the words only
_CANDIDATE_RE = re.compile(r"(?<![\w\-])[^\W_a-z][\w\-]*")
# the ASCII word characters that are not letters (and the hyphen): what a word without a letter is made of
_NOT_LETTERS = "0123456789_-"
#: Joins the two words of a two-word name token (``"blue_apron"``); a word token never holds it at its edges.
PAIR_SEPARATOR = "_"
# the most characters between two adjacent words of a pair (spaces or tabs only)
_MAX_PAIR_GAP = 3


def _word(run: str, names_only: bool, stop: frozenset[str]) -> str | None:
    """The token of one regular-expression run, or None (too short, no letter, not a name, a stop word)."""
    token = run.strip("-_")
    if len(token) < 2 or (names_only and not (token[0].isupper() or token[0].isdigit())):
        return None
    if not any(c.isalpha() for c in token):
        return None
    low = token.lower()
    return None if low in stop else low


def _words(text: str, names_only: bool) -> list[str]:
    """``TOKEN_PATTERN`` words of ``text`` (at least two characters, a letter, no edge hyphen), lower-cased, stop
    words out; with ``names_only`` only those starting with an upper-case letter or a digit. Raises ``TypeError``
    when ``text`` is not a str."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    stop = stop_words()
    if not names_only and text.isascii():
        # ASCII: lower-casing changes no character's class and no length, so the runs of the lower-cased text are
        # the lower-cased runs; a run of [a-z0-9_-] holds a letter when something is left without digits, _ and -
        return [token for run in _RUN_RE.findall(text.lower()) if len(token := run.strip("-_")) >= 2
                and token not in stop and token.strip(_NOT_LETTERS)]
    out = []
    for run in (_CANDIDATE_RE if names_only else _RUN_RE).findall(text):
        token = _word(run, names_only, stop)
        if token is not None:
            out.append(token)
    return out


def name_pairs(text: str) -> list[tuple[str, str]]:
    """The adjacent name tokens of ``text``: ``(a, b)`` for each two name tokens (:func:`name_tokens`) separated by
    at most three spaces or tabs and nothing else, in order ("Blue Apron, Inc." gives ``("blue", "apron")`` and
    ``("apron", "inc")``; "the Blue Apron" too, "Blue\\nApron" and "Blue, Apron" do not). One pass.

    Raises:
        TypeError: ``text`` is not a str."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    stop = stop_words()
    out = []
    previous, end = None, -1
    for match in _CANDIDATE_RE.finditer(text):
        token = _word(match.group(), True, stop)
        gap = match.start() - end
        if token is not None and previous is not None and 0 < gap <= _MAX_PAIR_GAP and (
                not text[end:match.start()].strip(" \t")):
            out.append((previous, token))
        previous, end = token, match.end()
    return out


def pair_token(first: str, second: str) -> str:
    """The name token of a two-word name: ``pair_token("blue", "apron") == "blue_apron"``."""
    return f"{first}{PAIR_SEPARATOR}{second}"


def name_tokens(text: str) -> list[str]:
    """The name tokens of ``text`` (module docstring), lower-cased, in order; stop words left out.

    Raises:
        TypeError: ``text`` is not a str."""
    return _words(text, names_only=True)


def word_tokens(text: str) -> list[str]:
    """Every ``TOKEN_PATTERN`` word of ``text``, lower-cased, stop words out (a possessive ``Fiverr's`` gives
    ``fiverr``).

    Raises:
        TypeError: ``text`` is not a str."""
    return _words(text, names_only=False)


def query_tokens(query: str, *, pairs: bool = False) -> list[str]:
    """The words of a query to look up among the documents' names: its name tokens, or every word (lower-cased,
    stop words out) when it capitalises nothing but stop words ("what does the acme nda say about notice?"). With
    ``pairs``, the name tokens are followed by the two-word tokens of :func:`name_pairs` (all of them: a pair no
    document holds matches nothing).

    Raises:
        TypeError: ``query`` is not a str."""
    names = name_tokens(query)
    if not names:
        return word_tokens(query)
    return names + [pair_token(a, b) for a, b in name_pairs(query)] if pairs else names


def distinctive_names(text: str, *, statistics: TermStatistics | None = None,
                      max_document_frequency: float = DEFAULT_MAX_DOCUMENT_FREQUENCY,
                      pairs: bool = False) -> Counter[str]:
    """The distinctive names of a document and how often it uses each (module docstring).

    Args:
        text: the document's whole text (characters).
        statistics: the reference document frequencies (default: the shipped ``legal-terms-v1`` table).
        max_document_frequency: a name is kept when fewer than this share of the table's documents contain it;
            in (0, 1].
        pairs: also the distinctive two-word names (``"blue_apron"``, module docstring).

    Returns:
        ``Counter`` lower-cased name -> occurrences in ``text``.

    Raises:
        TypeError: ``text`` is not a str or ``statistics`` not a ``TermStatistics``.
        ValueError: ``max_document_frequency`` outside (0, 1].
    """
    table, limit = _table_limit(statistics, max_document_frequency)
    found = Counter(name for name in name_tokens(text) if table.df(name) < limit)
    if pairs:  # both words frequent, the pair expected in fewer than `limit` documents: df_a * df_b / N < limit
        expected = limit * table.n_documents
        found.update(pair_token(a, b) for a, b in name_pairs(text)
                     if limit <= table.df(a) and limit <= table.df(b) and table.df(a) * table.df(b) < expected)
    return found


def with_word_parts(tokens: Iterable[str], *, statistics: TermStatistics | None = None,
                    max_document_frequency: float = DEFAULT_MAX_DOCUMENT_FREQUENCY) -> list[str]:
    """``tokens`` (:func:`word_tokens`), each hyphenated one followed by its distinctive parts: ``"agprojects-nda"``
    gives ``["agprojects-nda", "agprojects"]`` (``agprojects`` is rare in the table, ``nda`` is not), while
    ``"privacy-policy"`` stays one token. A part is kept by the names' rule (at least two characters, a letter, not a
    stop word, contained in fewer than ``max_document_frequency`` of the table's documents), so a file name such as
    ``AGProjects-NDA.txt`` in a summary matches a query that says "AGProjects".

    Raises:
        TypeError: ``tokens`` is a str, ``statistics`` is not a ``TermStatistics``.
        ValueError: ``max_document_frequency`` outside (0, 1]."""
    if isinstance(tokens, str):
        raise TypeError("tokens must be a sequence of word tokens (word_tokens(text)), not a str")
    table, limit = _table_limit(statistics, max_document_frequency)
    stop = stop_words()
    out = []
    for token in tokens:
        out.append(token)
        if "-" in token:
            out.extend(part for part in token.split("-") if len(part) >= 2 and part not in stop
                       and any(c.isalpha() for c in part) and table.df(part) < limit)
    return out


def _table_limit(statistics: TermStatistics | None, max_document_frequency: float) -> tuple[TermStatistics, float]:
    """The reference table (the shipped one for None) and the document frequency below which a word is distinctive.
    Raises ``TypeError``/``ValueError`` as :func:`distinctive_names`."""
    if isinstance(max_document_frequency, bool) or not isinstance(max_document_frequency, (int, float)) or not (
            0 < max_document_frequency <= 1):
        raise ValueError(f"max_document_frequency must be in (0, 1], got {max_document_frequency!r}")
    table = TermStatistics.default() if statistics is None else statistics
    if not isinstance(table, TermStatistics):
        raise TypeError(f"statistics must be a TermStatistics, got {type(statistics).__name__}")
    return table, max_document_frequency * table.n_documents
