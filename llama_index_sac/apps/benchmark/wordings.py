"""The same benchmark questions written the ways people write them: rule-based rewrites of the template.

LegalBench-RAG (and the built-in contracts) write every query as a leading clause that names the document, then the
question: ``"Consider the Non-Disclosure Agreement between CEII and NDA; Does the document ...?"``. People name
the document anywhere, or not at all. :func:`reword` rewrites a template query into one of :data:`WORDINGS`:

* ``template``: the query as the benchmark writes it.
* ``trailing``: the question, then the document: ``"Does the agreement ..., in the Non-Disclosure Agreement between
  CEII and NDA?"``.
* ``merged``: the document named inside the question, in place of its reference to "the document" / "this
  contract" / "this agreement": ``"Does the Non-Disclosure Agreement between CEII and NDA ...?"``; a question
  without such a reference gets the document after it: ``"What is the Type of Consideration in the Acquisition
  Agreement between BridgeBio Pharma, Inc. and Eidos Therapeutics, Inc."``.
* ``short``: a short possessive name first: ``"Under CEII's NDA, does the agreement ...?"``, ``"Under BridgeBio
  Pharma's merger agreement, what is ..."``, ``"Under Fiverr's privacy policy, who can ...?"``.
* ``none``: no document named: ``"Does the agreement ...?"``.

The natural forms (all but ``template``) write the document's name as a person would: quotes around party names
and the labels ``Parent``/``Target`` before them dropped (``"Fiverr"'s`` gives ``Fiverr's``); a reference to "the
document" becomes "the agreement" and "this contract" "the contract". The rules read the template's two shapes of a
document name, ``[the] TYPE between A and B [for PURPOSE]`` and ``[the] OWNER's TYPE``; :func:`short_name` derives
the short form (the first party or owner without its legal suffix, at most three words, possessive, and the type's
head: "NDA", "privacy policy", "merger agreement" or the word before "Agreement").

Standard library only; every rule is one bounded regular expression or a linear pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args

from llama_index_sac.apps.benchmark.datasets.base import RetrievalBenchmark

__all__ = ["WORDINGS", "TemplateQuery", "Wording", "WordingError", "natural_name", "parse_template", "reword",
           "reworded_benchmark", "short_name", "wording_of"]

Wording = Literal["template", "trailing", "merged", "short", "none"]
#: The forms :func:`reword` writes, in the order of a results table.
WORDINGS: tuple[Wording, ...] = get_args(Wording)
#: Joins a query id (and a dataset) to its wording in a reworded benchmark: ``"cuad-12@trailing"``,
#: ``"cuad/trailing"``.
ID_SEPARATOR = "@"
DATASET_SEPARATOR = "/"
# "Consider X; Q": the document name at most 400 characters without a semicolon or line break
_TEMPLATE_RE = re.compile(r"\s*Consider\s+([^;\n]{1,400});[ \t]*(\S.*)", re.DOTALL)
# the question's reference to the document, and what the natural forms write for it
_REFERENCE_RE = re.compile(r"\b(?:the|this)\s+(document|contract|agreement)\b", re.IGNORECASE)
_REFERENCE_NOUN = {"document": "agreement", "contract": "contract", "agreement": "agreement"}
# quotes around a name ("Fiverr", 'Honey Hole'), and the Parent/Target labels before them
_DOUBLE_QUOTED_RE = re.compile(r'(?:\b(?:Parent|Target)\s+)?"([^"\n]{1,200})"')
_SINGLE_QUOTED_RE = re.compile(r"(?:\b(?:Parent|Target)\s+)?(?<![\w'])'([^'\n]{1,200})'(?![\w])")
_BETWEEN_RE = re.compile(r"(?:the\s+)?(.{1,200}?)\s+between\s+(.{1,200}?)\s+and\s+.{1,400}", re.IGNORECASE)
_OWNER_RE = re.compile(r"(?:the\s+)?(.{1,200}?)'s?\s+(\S.{0,200})", re.IGNORECASE)
_LEGAL_SUFFIX_RE = re.compile(
    r"(?:[\s,]+(?:inc|incorporated|llc|l\.l\.c|ltd|limited|corp|corporation|co|plc|se|sa|s\.a|ag|gmbh|n\.v|nv"
    r"|l\.p|lp|fsb)\.?)+$", re.IGNORECASE)


class WordingError(ValueError):
    """A query that is not in the template (``"Consider DOCUMENT; QUESTION"``), or an unknown wording."""


@dataclass(frozen=True)
class TemplateQuery:
    """A template query's two parts: the document's name as written (``"the Non-Disclosure Agreement between CEII
    and NDA"``) and the question (``"Does the document ...?"``)."""

    document: str
    question: str


def parse_template(query: str) -> TemplateQuery:
    """The document name and the question of a template query (``"Consider DOCUMENT; QUESTION"``).

    Raises:
        TypeError: ``query`` is not a str.
        WordingError: ``query`` is not in the template."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    match = _TEMPLATE_RE.fullmatch(query)
    if match is None or not match.group(1).strip():
        raise WordingError(f"not a template query ('Consider DOCUMENT; QUESTION'): {query[:120]!r}")
    return TemplateQuery(match.group(1).strip(), match.group(2).strip())


def natural_name(document: str) -> str:
    """``document`` as a person writes it: the quotes around names and the ``Parent``/``Target`` labels before them
    dropped, blanks collapsed (``'the Merger Agreement between Parent "A, Inc." and Target "B"'`` gives ``"the Merger
    Agreement between A, Inc. and B"``)."""
    text = _DOUBLE_QUOTED_RE.sub(r"\1", document)
    text = _SINGLE_QUOTED_RE.sub(r"\1", text)
    return " ".join(text.split())


def _short_owner(name: str) -> str:
    """A party's short name: no leading "The", cut at the first comma, colon or parenthesis, no legal suffix, at most
    three words."""
    name = re.sub(r"^the\s+", "", name.strip(), flags=re.IGNORECASE)
    name = _LEGAL_SUFFIX_RE.sub("", name)
    name = re.split(r"[,:(]", name, maxsplit=1)[0].strip()
    words = name.split()
    return " ".join(words[:3]) if words else name


def _short_type(kind: str) -> str:
    """The head of a document type: "NDA", "privacy policy", "merger agreement", or the word before the last
    "Agreement" with it ("license agreement"), else the type's last word, lower-cased."""
    low = kind.lower()
    if "non-disclosure" in low or "confidentiality" in low or re.search(r"\bnda\b", low):
        return "NDA"
    if "privacy policy" in low:
        return "privacy policy"
    if "merger" in low or "acquisition" in low:
        return "merger agreement"
    words = low.split()
    if "agreement" in words:
        at = len(words) - 1 - words[::-1].index("agreement")
        before = words[at - 1] if at > 0 and words[at - 1] not in ("and", "of", "to", "the") else ""
        return f"{before} agreement".strip()
    return words[-1] if words else "document"


def _possessive(owner: str) -> str:
    return f"{owner}'" if owner.endswith(("s", "S")) else f"{owner}'s"


def short_name(document: str) -> str:
    """The short possessive name of a template's document name: ``"the Non-Disclosure Agreement between CEII and
    NDA"`` gives ``"CEII's NDA"``, ``'"Fiverr"\\'s privacy policy'`` ``"Fiverr's privacy policy"``, ``"the Service
    Agreement between BicycleTX Ltd and Nigel Crockett for ..."`` ``"BicycleTX's service agreement"``. A name in
    neither shape gives itself (natural)."""
    name = natural_name(document)
    match = _BETWEEN_RE.fullmatch(name)
    if match is not None:
        owner, kind = match.group(2), match.group(1)
    else:
        owned = _OWNER_RE.fullmatch(name)
        if owned is None:
            return name
        owner, kind = owned.group(1), owned.group(2)
    short = _short_owner(owner)
    return f"{_possessive(short)} {_short_type(kind)}" if short else name


def _ending(question: str) -> tuple[str, str]:
    """The question without its final ``?``/``.`` (and blanks), and that ending ("" when none)."""
    body = question.rstrip()
    end = body[-1] if body and body[-1] in "?." else ""
    return body[: len(body) - len(end)].rstrip(), end


def _plain_reference(question: str) -> str:
    """``question`` with its first reference to the document written plainly ("the document" -> "the agreement",
    "this contract" -> "the contract")."""
    return _REFERENCE_RE.sub(lambda m: "the " + _REFERENCE_NOUN[m.group(1).lower()], question, count=1)


def _lower_first(text: str) -> str:
    """``text`` with its first letter lower-cased, unless its first word is "I" or an acronym."""
    first = text.split(maxsplit=1)[0] if text.strip() else ""
    if not first or first == "I" or (len(first) > 1 and first[:2].isupper()):
        return text
    return text[0].lower() + text[1:]


def reword(query: str, wording: str) -> str:
    """``query`` (a template query) written in ``wording`` (module docstring).

    Raises:
        TypeError: ``query`` is not a str.
        WordingError: ``query`` is not in the template, or ``wording`` is not one of :data:`WORDINGS`."""
    if wording not in WORDINGS:
        raise WordingError(f"unknown wording {wording!r}: expected one of {', '.join(WORDINGS)}")
    if wording == "template":
        parse_template(query)  # the same error for every wording
        return query
    parts = parse_template(query)
    document, question = natural_name(parts.document), parts.question
    if wording == "merged":
        if _REFERENCE_RE.search(question):
            return _REFERENCE_RE.sub(lambda _m: document, question, count=1)
        body, end = _ending(question)
        return f"{body} in {document}{end}"
    plain = _plain_reference(question)
    if wording == "none":
        return plain
    if wording == "trailing":
        body, _ = _ending(plain)
        return f"{body}, in {document}?"
    return f"Under {short_name(parts.document)}, {_lower_first(plain)}"  # short


def reworded_benchmark(benchmark: RetrievalBenchmark, wordings: Sequence[str]) -> RetrievalBenchmark:
    """``benchmark`` with every query once per wording: query ids ``"<id>@<wording>"``, datasets
    ``"<dataset>/<wording>"`` (so a run's per-dataset tables are per dataset and wording, and its overall mean the
    mean over the wordings), the same gold spans and documents.

    Raises:
        WordingError: no wording, a repeated or unknown one, or a query not in the template (the first is named)."""
    if isinstance(wordings, str) or not wordings:
        raise WordingError("wordings must be a non-empty list of wordings")
    unknown = [w for w in wordings if w not in WORDINGS]
    if unknown:
        raise WordingError(f"unknown wording {unknown[0]!r}: expected one of {', '.join(WORDINGS)}")
    if len(set(wordings)) != len(wordings):
        raise WordingError(f"a wording is repeated in {', '.join(wordings)}")
    queries = [replace(query, query_id=f"{query.query_id}{ID_SEPARATOR}{wording}", query=reword(query.query, wording),
                       dataset=f"{query.dataset}{DATASET_SEPARATOR}{wording}")
               for wording in wordings for query in benchmark.queries]
    return RetrievalBenchmark(name=benchmark.name, documents=benchmark.documents, queries=queries,
                              doc_datasets=dict(benchmark.doc_datasets),
                              description=f"{benchmark.description} (wordings: {', '.join(wordings)})")


def wording_of(dataset: str) -> tuple[str, str | None]:
    """``(dataset, wording)`` of a reworded benchmark's dataset name (``"cuad/trailing"``); ``(dataset, None)`` for
    a plain one."""
    base, sep, wording = dataset.rpartition(DATASET_SEPARATOR)
    return (base, wording) if sep and wording in WORDINGS else (dataset, None)

