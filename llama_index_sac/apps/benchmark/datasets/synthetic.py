"""The built-in benchmark: a small, deterministic corpus of near-identical contracts, to show DRM.

Documents are non-disclosure agreements (two templates: mutual and one-way) and master services agreements (two
templates) generated from fixed clause wording; only the parameters vary: parties, effective date, governing law and
venue, term, notice period, fees, payment terms and liability cap. Party names appear only in the preamble and in the
signature block, never in the clauses (which say "each Party", "Client", "Service Provider"), exactly as in real
contracts; so the chunk holding, say, the governing-law clause of one NDA is nearly identical to that of every other
NDA of the same template, and a flat index cannot tell them apart: Document-Level Retrieval Mismatch (DRM, Reuter et
al., arXiv 2510.06999, §3). A document-level summary naming the parties is what disambiguates them.

Queries follow LegalBench-RAG's style ("Consider the Mutual Non-Disclosure Agreement between X and Y; what is the
governing law of this contract?"); each has one gold span, the exact clause sentence stating the answer. Offsets are
recorded while the text is assembled (never searched for), and the generator is fully determined by ``seed``.

Datasets (the groups metrics are averaged over): ``"nda"`` and ``"services"``; document ids are
``"<dataset>/<slug>.txt"``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from llama_index_sac.apps.benchmark.datasets.base import BenchmarkQuery, RetrievalBenchmark
from llama_index_sac.evaluation.metrics import LocatedSpan

__all__ = ["synthetic_contracts"]

_PREFIXES = [
    "Acme", "Birchwood", "Calloway", "Dunmore", "Everly", "Fairhaven", "Glenrock", "Halberd", "Ironvale",
    "Juniper", "Kestrel", "Larkspur", "Meridian", "Northwind", "Oakhurst", "Pemberton", "Quillon", "Redfern",
    "Silverline", "Thornbury", "Umberfield", "Valemont", "Westbrook", "Yarrow", "Zephyr", "Ashgrove", "Brightwater",
    "Copperleaf", "Driftwood", "Emberton",
]
_SUFFIXES = [
    "Analytics Inc.", "Biotech LLC", "Capital Partners LP", "Logistics Corp.", "Software Ltd.", "Medical Devices Inc.",
    "Energy Holdings LLC", "Retail Group Inc.", "Consulting GmbH", "Robotics Corp.",
]
_LAWS = [
    ("the State of Delaware", "Wilmington, Delaware"),
    ("the State of New York", "New York County, New York"),
    ("the State of California", "San Francisco, California"),
    ("England and Wales", "London, England"),
    ("the State of Texas", "Austin, Texas"),
    ("the Commonwealth of Massachusetts", "Boston, Massachusetts"),
    ("the State of Illinois", "Chicago, Illinois"),
    ("the Province of Ontario", "Toronto, Ontario"),
]
_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
]
_PURPOSES = [
    "a possible joint development of software products",
    "a potential supply arrangement for laboratory equipment",
    "the evaluation of a possible acquisition or investment",
    "a prospective distribution partnership",
]
_SERVICES = ["cloud hosting and maintenance", "payroll processing", "data analytics", "facilities management"]
_NUMBER_WORDS = {
    1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 10: "ten", 12: "twelve",
    14: "fourteen", 15: "fifteen", 18: "eighteen", 20: "twenty", 24: "twenty-four", 30: "thirty", 36: "thirty-six",
    45: "forty-five", 60: "sixty", 90: "ninety", 120: "one hundred twenty",
}

_NDA_BOILERPLATE = [
    "\"Confidential Information\" means all non-public information, in any form or medium, that a Party discloses "
    "to the other Party in connection with the Purpose, including technical data, trade secrets, know-how, "
    "business plans, customer lists, pricing and financial information, whether or not marked as confidential.",
    "The Receiving Party shall hold the Confidential Information in strict confidence, shall use it solely for the "
    "Purpose, and shall not disclose it to any third party other than its employees and advisers who need to know "
    "it for the Purpose and who are bound by obligations of confidentiality no less protective than these.",
    "The obligations in this Agreement do not apply to information that (a) is or becomes publicly available "
    "through no fault of the Receiving Party, (b) was lawfully known to the Receiving Party before disclosure, "
    "(c) is independently developed without use of the Confidential Information, or (d) is rightfully received "
    "from a third party without a duty of confidentiality.",
    "Upon written request of the Disclosing Party, the Receiving Party shall promptly return or destroy all "
    "Confidential Information in its possession, including all copies, notes and extracts, and shall certify such "
    "return or destruction in writing within ten business days.",
    "Each Party acknowledges that unauthorized disclosure of Confidential Information may cause irreparable harm "
    "for which monetary damages would be an inadequate remedy, and that the Disclosing Party shall be entitled to "
    "seek injunctive relief in addition to any other remedy available at law or in equity.",
    "Nothing in this Agreement grants either Party any licence or other right in the other Party's Confidential "
    "Information, patents, copyrights or trademarks, and neither Party is obliged to enter into any further "
    "agreement or transaction as a result of the discussions contemplated by this Agreement.",
]
_MSA_BOILERPLATE = [
    "Service Provider warrants that the Services will be performed in a professional and workmanlike manner, by "
    "suitably qualified personnel, in accordance with generally recognised industry standards and all applicable "
    "laws and regulations.",
    "All intellectual property rights in deliverables created specifically for Client under a Statement of Work "
    "shall vest in Client upon payment in full, while Service Provider retains all rights in its pre-existing "
    "materials, tools and methodologies, of which it grants Client a non-exclusive licence to the extent needed.",
    "Each party shall keep confidential all non-public information received from the other party under this "
    "Agreement and shall use it only to perform its obligations or exercise its rights under this Agreement.",
    "Neither party shall be liable for any failure or delay in performance caused by events beyond its reasonable "
    "control, including natural disasters, epidemics, acts of government, war, terrorism or failures of public "
    "utilities, provided that it promptly notifies the other party and uses reasonable efforts to resume "
    "performance.",
    "Neither party may assign or transfer this Agreement without the prior written consent of the other party, "
    "except to a successor to all or substantially all of its business, and any attempted assignment in breach of "
    "this clause shall be void.",
    "This Agreement, together with each Statement of Work, constitutes the entire agreement between the parties "
    "and supersedes all prior proposals, negotiations and understandings relating to its subject matter.",
]


@dataclass
class _Builder:
    """Assembles a document and records the exact span of selected sentences while appending them."""

    parts: list[str]
    spans: dict[str, tuple[int, int]]
    length: int = 0

    def add(self, text: str, key: str | None = None) -> None:
        if key is not None:
            self.spans[key] = (self.length, self.length + len(text))
        self.parts.append(text)
        self.length += len(text)

    def clause(self, number: int, heading: str, sentences: list[tuple[str, str | None]]) -> None:
        self.add(f"\n\n{number}. {heading}. ")
        for i, (sentence, key) in enumerate(sentences):
            if i:
                self.add(" ")
            self.add(sentence, key)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _words(n: int) -> str:
    return f"{_NUMBER_WORDS[n]} ({n})" if n in _NUMBER_WORDS else str(n)


def _date(rng: random.Random) -> str:
    return f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}, {rng.randint(2016, 2024)}"


def _signatures(b: _Builder, party_a: str, party_b: str) -> None:
    b.add("\n\nIN WITNESS WHEREOF, the parties have executed this Agreement as of the Effective Date.")
    for party in (party_a, party_b):
        b.add(f"\n\n{party}\nBy: ______________________\nName: Authorized Signatory\nTitle: Director")


def _nda(rng: random.Random, template: int, a: str, b: str) -> tuple[str, str, dict[str, tuple[int, int]], dict]:
    law, venue = rng.choice(_LAWS)
    date, years, survival = _date(rng), rng.choice([1, 2, 3, 5]), rng.choice([2, 3, 5, 7])
    notice = rng.choice([10, 15, 30, 45, 60, 90])
    builder = _Builder([], {})
    mutual = template == 0
    title = "Mutual Non-Disclosure Agreement" if mutual else "Non-Disclosure Agreement"
    builder.add(title.upper())
    if mutual:
        builder.add(
            f"\n\nThis {title} (the \"Agreement\") is entered into as of {date} (the \"Effective Date\") by and "
            f"between {a} and {b} (each a \"Party\" and together the \"Parties\"), who wish to exchange confidential "
            f"information in connection with {rng.choice(_PURPOSES)} (the \"Purpose\")."
        )
    else:
        builder.add(
            f"\n\nThis {title} (the \"Agreement\") is made on {date} (the \"Effective Date\") by {a} (the "
            f"\"Disclosing Party\") in favour of {b} (the \"Receiving Party\"), in connection with "
            f"{rng.choice(_PURPOSES)} (the \"Purpose\")."
        )
    boiler = list(_NDA_BOILERPLATE) if mutual else list(reversed(_NDA_BOILERPLATE))
    n = 1
    for heading, text in zip(["Definitions", "Obligations", "Exclusions"], boiler[:3]):
        builder.clause(n, heading, [(text, None)])
        n += 1
    term_sentence = (
        f"This Agreement shall remain in effect for {_words(years)} year{'s' if years > 1 else ''} from the "
        f"Effective Date, and the obligations of confidentiality shall survive for {_words(survival)} years after "
        "its expiration or termination."
    )
    notice_sentence = (
        f"Either Party may terminate this Agreement at any time upon {_words(notice)} days' prior written notice "
        "to the other Party."
        if mutual
        else f"The Disclosing Party may terminate this Agreement by giving {_words(notice)} days' written notice to "
        "the Receiving Party."
    )
    builder.clause(n, "Term", [(term_sentence, "term")])
    builder.clause(n + 1, "Termination", [(notice_sentence, "notice")])
    n += 2
    for heading, text in zip(["Return of Materials", "Remedies", "No Licence"], boiler[3:]):
        builder.clause(n, heading, [(text, None)])
        n += 1
    law_sentence = (
        f"This Agreement shall be governed by and construed in accordance with the laws of {law}, without regard "
        "to its conflict of laws principles."
    )
    builder.clause(
        n,
        "Governing Law",
        [(law_sentence, "law"), (f"The courts located in {venue} shall have exclusive jurisdiction.", "venue")],
    )
    _signatures(builder, a, b)
    facts = {"title": title, "law": law, "venue": venue, "years": years, "notice": notice, "date": date}
    return "nda", builder.text, builder.spans, facts


def _msa(rng: random.Random, template: int, a: str, b: str) -> tuple[str, str, dict[str, tuple[int, int]], dict]:
    law, venue = rng.choice(_LAWS)
    date = _date(rng)
    fee = rng.choice([4500, 7250, 12000, 18500, 25000, 40000, 62500])
    currency = rng.choice(["US dollars", "euros", "pounds sterling"])
    pay_days = rng.choice([15, 30, 45, 60])
    months, notice = rng.choice([12, 24, 36]), rng.choice([30, 60, 90, 120])
    cap = rng.choice(["the fees paid in the twelve months preceding the claim", "two times the annual fees",
                      "one million US dollars", "the total fees payable under the applicable Statement of Work"])
    title = "Master Services Agreement" if template == 0 else "Professional Services Agreement"
    builder = _Builder([], {})
    builder.add(title.upper())
    builder.add(
        f"\n\nThis {title} (the \"Agreement\") is made as of {date} (the \"Effective Date\") between {a} "
        f"(\"Client\") and {b} (\"Service Provider\") for the provision of {rng.choice(_SERVICES)} services."
    )
    boiler = list(_MSA_BOILERPLATE) if template == 0 else list(reversed(_MSA_BOILERPLATE))
    builder.clause(
        1,
        "Services",
        [("Service Provider shall provide the services described in each Statement of Work agreed in writing by "
          "the parties (the \"Services\"), and each Statement of Work shall form part of this Agreement.", None)],
    )
    fee_sentence = f"Client shall pay Service Provider a monthly fee of {fee:,} {currency} for the Services."
    pay_sentence = (
        f"Service Provider shall invoice monthly in arrears and Client shall pay each undisputed invoice within "
        f"{_words(pay_days)} days of the invoice date."
    )
    builder.clause(2, "Fees and Payment", [(fee_sentence, "fee"), (pay_sentence, "payment")])
    for n, (heading, text) in enumerate(zip(["Warranties", "Intellectual Property", "Confidentiality"], boiler), 3):
        builder.clause(n, heading, [(text, None)])
    term_sentence = (
        f"The initial term of this Agreement is {_words(months)} months from the Effective Date, after which it "
        "renews automatically for successive one-year periods."
    )
    notice_sentence = (
        f"Either party may terminate this Agreement for convenience by giving {_words(notice)} days' written notice "
        "to the other party."
    )
    builder.clause(6, "Term and Termination", [(term_sentence, "term"), (notice_sentence, "notice")])
    cap_sentence = f"Each party's total aggregate liability arising out of this Agreement shall not exceed {cap}."
    builder.clause(7, "Limitation of Liability", [(cap_sentence, "cap")])
    for n, (heading, text) in enumerate(zip(["Force Majeure", "Assignment", "Entire Agreement"], boiler[3:]), 8):
        builder.clause(n, heading, [(text, None)])
    law_sentence = (
        f"This Agreement and any dispute arising from it shall be governed by the laws of {law}, and the parties "
        f"submit to the exclusive jurisdiction of the courts of {venue}."
    )
    builder.clause(11, "Governing Law", [(law_sentence, "law")])
    _signatures(builder, a, b)
    facts = {"title": title, "law": law, "fee": fee, "months": months, "notice": notice, "date": date}
    return "services", builder.text, builder.spans, facts


_QUESTIONS: dict[str, list[tuple[str, str]]] = {
    "nda": [
        ("law", "what is the governing law of this contract?"),
        ("term", "how long does this agreement remain in effect?"),
        ("notice", "how much notice is required to terminate this agreement?"),
        ("venue", "which courts have jurisdiction over disputes?"),
    ],
    "services": [
        ("law", "what is the governing law of this contract?"),
        ("fee", "what fee does the client pay for the services?"),
        ("payment", "within how many days must invoices be paid?"),
        ("notice", "how much notice is required to terminate the agreement for convenience?"),
        ("cap", "what is the cap on each party's liability?"),
    ],
}


def synthetic_contracts(n_documents: int = 24, seed: int = 0) -> RetrievalBenchmark:
    """Generate the built-in benchmark: ``n_documents`` contracts (half NDAs, half services agreements).

    Args:
        n_documents: number of contracts, 2 to 150 (default 24: about 95k characters, 110 queries).
        seed: the generator seed; the same ``(n_documents, seed)`` always gives the same benchmark.

    Returns:
        A :class:`RetrievalBenchmark` with datasets ``"nda"`` and ``"services"``, one gold span per query.

    Raises:
        ValueError: if ``n_documents`` is out of range.
    """
    if not 2 <= n_documents <= 150:  # two party names per contract from 30 x 10 names
        raise ValueError(f"n_documents must be between 2 and 150, got {n_documents}")
    rng = random.Random(seed)
    names = [f"{p} {s}" for p in _PREFIXES for s in _SUFFIXES]
    rng.shuffle(names)
    documents: dict[str, str] = {}
    queries: list[BenchmarkQuery] = []
    makers: list[Callable[..., tuple[str, str, dict[str, tuple[int, int]], dict]]] = [_nda, _msa]
    for i in range(n_documents):
        a, b = names[2 * i], names[2 * i + 1]
        dataset, text, spans, facts = makers[i % 2](rng, (i // 2) % 2, a, b)
        slug = f"{a.split()[0]}_{b.split()[0]}".lower()
        doc_id = f"{dataset}/{facts['title'].lower().replace(' ', '_').replace('-', '_')}_{slug}.txt"
        if doc_id in documents:  # the slug keeps only the names' first words: never overwrite a document
            doc_id = f"{doc_id[:-4]}_{i:03d}.txt"
        documents[doc_id] = text
        kind = facts["title"]
        for key, question in _QUESTIONS[dataset]:
            start, end = spans[key]
            queries.append(
                BenchmarkQuery(
                    query_id=f"{dataset}-{i:03d}-{key}",
                    query=f"Consider the {kind} between {a} and {b}; {question}",
                    gold=(LocatedSpan(doc_id, start, end),),
                    dataset=dataset,
                )
            )
    return RetrievalBenchmark(
        name="synthetic-contracts",
        documents=documents,
        queries=queries,
        doc_datasets={doc_id: doc_id.split("/")[0] for doc_id in documents},
        description=f"built-in synthetic contracts (n_documents={n_documents}, seed={seed})",
    )
