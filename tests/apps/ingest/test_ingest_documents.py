"""``llama-sac ingest`` on real contract folders: PDF (built by headless Chromium's print-to-PDF) and DOCX (built by
python-docx) read page by page with exact offsets, and the inputs that must be reported and skipped, never read
silently or hung on: no text layer, encryption, damage, a ZIP bomb, too many pages or bytes, a FIFO, a device, a
link leaving the folder, a deleted link target, a vanished file, a name that is not UTF-8.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core.schema import Document, MetadataMode
from typer.testing import CliRunner

from llama_index_sac import RecursiveCharacterNodeParser
from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest import readers
from llama_index_sac.apps.ingest.files import read_file
from llama_index_sac.apps.ingest.pages import PAGE_TABLE_KEY, PageNumbers, page_label, pages_of
from llama_index_sac.apps.ingest.readers import Unreadable, join_pages
from llama_index_sac.apps.ingest.run import IngestSettings, ingest, query
from tests.conftest import FakeEmbedding, fake_searcher

pypdf = pytest.importorskip("pypdf", reason="the 'documents' extra is not installed (pip install -e '.[documents]')")
docx = pytest.importorskip("docx", reason="the 'documents' extra is not installed (pip install -e '.[documents]')")
chromadb = pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed (scripts/setup.sh "
                               "installs it)")
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

#: The text of each page of the Chromium PDF: long enough that 120-character chunks cross page boundaries.
PAGES = [
    "Master Services Agreement between Acme Logistics Corp. and Dunmore Software Ltd. The parties agree to the "
    "services described in Schedule A. Alpha clause: payment is due within thirty days of each invoice.",
    "Beta clause: each party shall indemnify the other against third-party claims arising from its negligence. "
    "Liability is capped at the fees paid in the twelve months before the claim.",
    "Gamma clause: this Agreement is governed by the laws of the State of Delaware. Either party may terminate it "
    "on ninety days written notice.",
]


def settings(**kw: Any) -> IngestSettings:
    return IngestSettings(show_progress=False, **kw)


# -- building real files ----------------------------------------------------------------------------------------------
def chromium_pdf(html: str, out: Path) -> Path:
    """``html`` printed to ``out`` by headless Chromium (skips the test when Chromium is not installed)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Chromium is not installed (scripts/setup.sh installs it): the PDFs are printed by it")
    source = out.with_suffix(".html")
    source.write_text(html, encoding="utf-8")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={out.parent / 'chromium-profile'}", "--no-pdf-header-footer",
                    f"--print-to-pdf={out}", source.as_uri()], check=True, capture_output=True, timeout=120)
    source.unlink()
    assert out.is_file()
    return out


@pytest.fixture(scope="module")
def contract_pdf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A three-page PDF: page i holds exactly ``PAGES[i]`` (CSS page breaks)."""
    body = "".join(f'<div style="page-break-after: always"><p>{text}</p></div>' for text in PAGES[:-1])
    body += f"<div><p>{PAGES[-1]}</p></div>"
    html = f'<html><body style="font: 12pt serif">{body}</body></html>'
    return chromium_pdf(html, tmp_path_factory.mktemp("pdf") / "contract.pdf").read_bytes()


def pdf_with(pages: int, text_page: bool = True) -> bytes:
    """A PDF of ``pages`` blank pages, the first with one line of text when ``text_page`` (pypdf's writer)."""
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(612, 792)
    if text_page:
        from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

        stream = DecodedStreamObject()
        stream.set_data(b"BT /F1 12 Tf 72 720 Td (Termination on notice.) Tj ET")
        font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"):
                                 NameObject("/Type1"), NameObject("/BaseFont"): NameObject("/Helvetica")})
        page = writer.pages[0]
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def encrypted(pdf: bytes, user_password: str, owner_password: str = "owner", algorithm: str = "AES-128") -> bytes:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_bytes(build: Any) -> bytes:
    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def three_page_docx(document: Any) -> None:
    document.add_paragraph("Clause 1. Alpha: payment within thirty days.")
    document.add_paragraph("Clause 2. Delivery at the buyer's site.")
    document.add_page_break()
    document.add_paragraph("Clause 3. Beta: indemnity for negligence.")
    document.add_page_break()
    document.add_paragraph("Clause 4. Gamma: Delaware law governs.")


def chunks(document: Document, size: int) -> list[Any]:
    nodes = RecursiveCharacterNodeParser(chunk_size=size)([document])
    return list(PageNumbers()(nodes))


# -- pages ---------------------------------------------------------------------------------------------------------
def test_pages_of_and_labels_by_hand() -> None:
    starts = [0, 10, 10, 25]  # page 3 is empty: it begins where page 4 does
    assert pages_of(starts, 0, 10) == (1, 1)
    assert pages_of(starts, 9, 11) == (1, 3)  # characters 9 (page 1) and 10 (page 3: page 2 holds nothing)
    assert pages_of(starts, 10, 25) == (3, 3) and pages_of(starts, 24, 26) == (3, 4)
    assert pages_of(starts, 30, 30) == (4, 4)  # an empty span lies on the page of its start
    assert page_label(4, 4) == "p. 4" and page_label(4, 5) == "pp. 4-5"
    assert join_pages(["ab", "", "cd"]) == ("ab\n\ncd", [0, 4, 4])
    assert join_pages(["", "ab"]) == ("ab", [0, 0])


@given(st.lists(st.text(alphabet="ab \n", max_size=12), min_size=1, max_size=8), st.data())
def test_join_pages_and_pages_of_match_brute_force(pages: list[str], data: st.DataObject) -> None:
    text, starts = join_pages(pages)
    assert len(starts) == len(pages) and starts[0] == 0 and starts == sorted(starts)
    owner = [0] * len(text)  # by brute force: the page each character was written from (0: a separator)
    for number, (page, begin) in enumerate(zip(pages, starts, strict=True), 1):
        assert text[begin: begin + len(page)] == page  # each page's text sits at its start
        owner[begin: begin + len(page)] = [number] * len(page)
    if not text:
        return
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    first, last = pages_of(starts, start, end)
    on = [n for n in owner[start:end] if n]
    if on:  # a span of page text lies on the pages it was written from (a separator belongs to the page before)
        assert first <= on[0] and last == on[-1] and (owner[start] == 0 or first == on[0])


def test_chromium_pdf_pages_and_exact_offsets(contract_pdf: bytes, tmp_path: Path) -> None:
    path = tmp_path / "contract.pdf"
    path.write_bytes(contract_pdf)
    document = read_file(path)
    texts = [page.extract_text() for page in pypdf.PdfReader(path).pages]
    assert [" ".join(text.split()) for text in texts] == PAGES  # each page holds its text (lines wrapped)
    assert all("\n" in text for text in texts)  # wrapped by Chromium: lines joined again in the document's text
    assert document.text == "\n\n".join(PAGES)  # each page one paragraph (each ends a sentence: a blank line)
    starts = [0, len(PAGES[0]) + 2, len(PAGES[0]) + len(PAGES[1]) + 4]
    assert document.metadata[PAGE_TABLE_KEY] == starts
    assert PAGE_TABLE_KEY not in document.get_metadata_str(MetadataMode.EMBED)
    assert document.metadata["file_type"] == "application/pdf" and document.metadata["file_size"] == len(contract_pdf)
    nodes = chunks(document, 450)  # pages 1 and 2 fit in one chunk
    extents = [(s, s + len(text)) for s, text in zip(starts, PAGES, strict=True)]  # each page's own characters
    crossing = 0
    for node in nodes:
        start, end = node.start_char_idx, node.end_char_idx
        assert document.text[start:end] == node.text
        on = [page for page, (a, b) in enumerate(extents, 1) if a < end and start < b]
        assert (node.metadata["page_start"], node.metadata["page_end"]) == (on[0], on[-1])
        crossing += on[0] != on[-1]
        assert PAGE_TABLE_KEY not in node.metadata and PAGE_TABLE_KEY not in node.source_node.metadata
        assert {"page_start", "page_end"} <= set(node.excluded_embed_metadata_keys)
        assert "page_start" not in node.get_content(MetadataMode.EMBED)
    assert crossing >= 1  # some chunk lies on two pages
    alpha = next(n for n in nodes if "Alpha clause" in n.text)
    gamma = next(n for n in nodes if "Gamma clause" in n.text)
    assert alpha.metadata["page_start"] == 1 and gamma.metadata["page_end"] == 3
    assert document.metadata[PAGE_TABLE_KEY] == starts  # the document itself is untouched (its hash stays)


def test_docx_explicit_breaks_rendered_breaks_and_no_breaks(tmp_path: Path) -> None:
    path = tmp_path / "c.docx"
    path.write_bytes(docx_bytes(three_page_docx))
    document = read_file(path)
    paragraphs = ["Clause 1. Alpha: payment within thirty days.", "Clause 2. Delivery at the buyer's site.",
                  "Clause 3. Beta: indemnity for negligence.", "Clause 4. Gamma: Delaware law governs."]
    assert document.text == "\n\n".join(paragraphs)
    assert document.metadata[PAGE_TABLE_KEY] == [0, document.text.index("Clause 3"), document.text.index("Clause 4")]
    for node in chunks(document, 50):
        assert document.text[node.start_char_idx: node.end_char_idx] == node.text
        expected = {"Clause 1": 1, "Clause 2": 1, "Clause 3": 2, "Clause 4": 3}[node.text[:8]]
        assert (node.metadata["page_start"], node.metadata["page_end"]) == (expected, expected)

    def rendered(document: Any) -> None:  # Word's own marks win over the explicit breaks
        three_page_docx(document)
        run = document.paragraphs[1].runs[0]._r
        mark = docx.oxml.OxmlElement("w:lastRenderedPageBreak")
        run.insert(0, mark)  # Word laid "Clause 2" out on a new page

    path.write_bytes(docx_bytes(rendered))
    document = read_file(path)
    assert document.metadata[PAGE_TABLE_KEY] == [0, document.text.index("Clause 2")]

    def sections(document: Any) -> None:
        from docx.enum.section import WD_SECTION

        document.add_paragraph("One.")
        document.add_section(WD_SECTION.CONTINUOUS)
        document.add_paragraph("Two.")
        document.add_section(WD_SECTION.NEW_PAGE)
        document.add_paragraph("Three.")
        document.paragraphs[-1].paragraph_format.page_break_before = True  # a second break: page 3 is empty

    path.write_bytes(docx_bytes(sections))
    document = read_file(path)
    assert document.text == "One.\n\nTwo.\n\nThree."
    assert document.metadata[PAGE_TABLE_KEY] == [0, 12, 12]

    path.write_bytes(docx_bytes(three_page_docx))
    assert unreadable(path, max_pages=2) == "3 pages, over the limit of 2 (--max-pages)"
    path.write_bytes(docx_bytes(lambda d: d.add_paragraph("One page, no break.")))
    document = read_file(path)
    assert document.text == "One page, no break." and PAGE_TABLE_KEY not in document.metadata  # pages unknown
    assert "page_start" not in chunks(document, 50)[0].metadata


# -- bad input, one file at a time --------------------------------------------------------------------------------
def unreadable(path: Path, **kw: Any) -> str:
    with pytest.raises(Unreadable) as caught:
        read_file(path, **kw)
    return str(caught.value)


def test_bad_pdfs_are_named(contract_pdf: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "plain.pdf").write_bytes(contract_pdf)
    path = tmp_path / "x.pdf"
    path.write_bytes(encrypted(contract_pdf, "secret"))
    assert unreadable(path) == "an encrypted PDF that needs a password (decrypt it first)"
    path.write_bytes(encrypted(contract_pdf, ""))  # only an owner password: opens like any PDF
    assert read_file(path).text == read_file(tmp_path / "plain.pdf").text
    path.write_bytes(b"%PDF-1.7\n" + os.urandom(2000))
    with caplog.at_level("DEBUG", logger="pypdf"):
        assert unreadable(path).startswith("not a readable PDF (")
    assert not caplog.records  # the one line says it; pypdf's own log lines ("EOF marker not found") do not
    path.write_bytes(pdf_with(3, text_page=False))
    assert unreadable(path) == ("no text on any of its 3 page(s): a scanned PDF without a text layer? (run OCR on it "
                                "first)")
    path.write_bytes(pdf_with(31))
    assert read_file(path).text == "Termination on notice."
    assert unreadable(path, max_pages=30) == "31 pages, over the limit of 30 (--max-pages)"


def test_docx_zip_bombs_and_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = docx_bytes(three_page_docx)
    buffer = io.BytesIO(good)
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/zeros.bin", b"\0" * 3_000_000)  # packs to a few kB
    path = tmp_path / "bomb.docx"
    path.write_bytes(buffer.getvalue())
    assert path.stat().st_size < 100_000
    message = unreadable(path, max_file_bytes=1_000_000)
    assert message.startswith("unpacks to ") and message.endswith("over the limit of 1,000,000 (--max-file-bytes; "
                                                                   "a ZIP bomb?)")
    assert read_file(path).text.startswith("Clause 1.")  # within the default limit: read

    # a member that unpacks to more than its header declares: cut at the declared size, then a CRC failure
    lying = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(lying))) as archive:
        info = archive.getinfo("word/media/zeros.bin")
    central = lying.rfind(b"word/media/zeros.bin") - 46  # the name follows the 46-byte central directory entry
    for at in (info.header_offset + 22, central + 24):  # uncompressed size: local header, central directory
        lying[at: at + 4] = (1000).to_bytes(4, "little")
    path.write_bytes(bytes(lying))
    assert unreadable(path).startswith("not a readable DOCX (damaged ZIP: BadZipFile: Bad CRC-32")

    monkeypatch.setattr(readers, "MAX_ZIP_MEMBERS", 5)
    path.write_bytes(good)
    count = len(zipfile.ZipFile(io.BytesIO(good)).infolist())
    assert unreadable(path) == f"a ZIP of {count:,} members, over the limit of 5 (a ZIP bomb?)"
    monkeypatch.undo()
    path.write_bytes(good[: len(good) // 2])
    assert unreadable(path) == "not a DOCX (not a ZIP archive)"
    path.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty ZIP
    assert unreadable(path).startswith("not a readable DOCX (KeyError: ")


def test_permission_only_aes256_pdf_is_read(contract_pdf: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """A signed contract's usual protection: AES-256 with an empty user password (only an owner password, which
    restricts printing or editing). pypdf needs ``cryptography`` for AES, which the ``documents`` extra brings
    (``pypdf[crypto]``): without it this raises pypdf's ``DependencyError``."""
    (tmp_path / "plain.pdf").write_bytes(contract_pdf)
    locked = encrypted(contract_pdf, "", owner_password="owner-only", algorithm="AES-256")
    assert pypdf.PdfReader(io.BytesIO(locked)).is_encrypted
    (tmp_path / "signed.pdf").write_bytes(locked)
    document = read_file(tmp_path / "signed.pdf")
    plain = read_file(tmp_path / "plain.pdf")
    assert document.text == plain.text and "Gamma clause" in document.text
    assert document.metadata[PAGE_TABLE_KEY] == plain.metadata[PAGE_TABLE_KEY]
    (tmp_path / "signed.pdf").write_bytes(encrypted(contract_pdf, "secret", algorithm="AES-256"))
    assert unreadable(tmp_path / "signed.pdf") == "an encrypted PDF that needs a password (decrypt it first)"
    from pypdf import _encryption
    from pypdf._crypt_providers import _fallback

    monkeypatch.setattr(_encryption, "aes_cbc_decrypt", _fallback.aes_cbc_decrypt)  # as without cryptography
    (tmp_path / "signed.pdf").write_bytes(locked)
    assert unreadable(tmp_path / "signed.pdf") == (
        "an encrypted PDF that needs the cryptography package to be read (cryptography>=3.1 is required for AES "
        "algorithm; the documents extra of llama-index-sac brings it)")


def test_fifo_devices_sizes_names_and_suffixes(tmp_path: Path, alarm: None) -> None:
    fifo = tmp_path / "p.txt"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading without O_NONBLOCK would block for ever
    assert unreadable(fifo) == "a FIFO (named pipe), not a regular file (not read)"
    zero = tmp_path / "z.txt"
    zero.symlink_to("/dev/zero")
    assert unreadable(zero) == "a character device, not a regular file (not read)"
    assert unreadable(Path("/dev/null")) == "a character device, not a regular file (not read)"
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 2_000_001)
    too_big = "2,000,001 bytes, over the limit of 2,000,000 (--max-file-bytes)"
    assert unreadable(big, max_file_bytes=2_000_000) == too_big
    if Path("/proc/self/status").is_file():  # a regular file of size 0 that reads as more: cut at the limit, refused
        with pytest.raises(Unreadable, match=r"^grew past the limit of 10 bytes \(--max-file-bytes\) while it"):
            readers.read_limited(Path("/proc/self/status"), 10)
    plain = tmp_path / "README"
    plain.write_text("no suffix", encoding="utf-8")
    assert unreadable(plain) == "not a file type llama-sac ingest reads (.txt, .md, .pdf, .docx)"
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/a\xff.txt"))
    odd.write_text("text", encoding="utf-8")
    assert unreadable(odd) == "its name is not valid UTF-8 (rename the file to ingest it)"


# -- whole runs into a real Chroma store --------------------------------------------------------------------------
def chroma_rows(store: Path) -> dict[str, dict[str, Any]]:
    client = chromadb.PersistentClient(path=str(store), settings=chromadb.Settings(anonymized_telemetry=False))
    try:
        got = client.get_collection("llama-sac").get(include=["metadatas"])
    finally:
        client.close()
    return dict(zip(got["ids"], got["metadatas"], strict=True))


def test_folder_of_good_and_bad_files_into_chroma(contract_pdf: bytes, tmp_path: Path, alarm: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    docs, outside, store = tmp_path / "docs", tmp_path / "outside", tmp_path / "store"
    docs.mkdir()
    outside.mkdir()
    (docs / "contract.pdf").write_bytes(contract_pdf)
    (docs / "terms.docx").write_bytes(docx_bytes(three_page_docx))
    (docs / "note.txt").write_text("Plain note: the notice period is ninety days.", encoding="utf-8")
    (docs / "keep.txt").write_text("Kept note: unchanged in the second run.", encoding="utf-8")
    (docs / "linked.txt").symlink_to(docs / "note.txt")  # a link inside the folder: read
    (docs / "locked.pdf").write_bytes(encrypted(contract_pdf, "secret"))
    (docs / "scan.pdf").write_bytes(pdf_with(2, text_page=False))
    (docs / "damaged.pdf").write_bytes(b"%PDF-1.4\n1 0 obj <<>> garbage")
    (docs / "long.pdf").write_bytes(pdf_with(40))
    os.mkfifo(docs / "p.txt")
    (docs / "z.txt").symlink_to("/dev/zero")
    (outside / "secret.txt").write_text("not part of the folder", encoding="utf-8")
    (docs / "escape.txt").symlink_to(outside / "secret.txt")
    (docs / "big.txt").write_bytes(b"x " * 600_000)
    Path(os.fsdecode(bytes(docs) + b"/bad\xffname.txt")).write_text("name not UTF-8", encoding="utf-8")
    lines: list[str] = []
    report = ingest([docs], f"chroma:{store}", settings(max_pages=30, max_file_bytes=1_000_000),
                    embed_model=FakeEmbedding(), log=lines.append)

    why = {Path(name).name: text for name, text in report.skipped.items()}
    assert why == {
        "locked.pdf": "an encrypted PDF that needs a password (decrypt it first)",
        "scan.pdf": "no text on any of its 2 page(s): a scanned PDF without a text layer? (run OCR on it first)",
        "damaged.pdf": why["damaged.pdf"], "long.pdf": "40 pages, over the limit of 30 (--max-pages)",
        "p.txt": "a FIFO (named pipe), not a regular file (not read)",
        "z.txt": f"a link to /dev/zero, outside {docs}: not followed (name the file itself to ingest it)",
        "escape.txt": f"a link to {outside / 'secret.txt'}, outside {docs}: not followed (name the file itself to "
                      "ingest it)",
        "big.txt": "1,200,000 bytes, over the limit of 1,000,000 (--max-file-bytes)",
        "bad\\xffname.txt": "its name is not valid UTF-8 (rename the file to ingest it)",
    }
    assert why["damaged.pdf"].startswith("not a readable PDF (")
    assert sorted(lines) == sorted(f"skipped {name}: {text}" for name, text in report.skipped.items())
    assert ", 9 unreadable file(s) skipped;" in report.line()
    assert report.new == 5
    table = chroma_rows(store)
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for metadata in table.values():
        by_doc.setdefault(Path(metadata["ref_doc_id"]).name, []).append(metadata)
        assert PAGE_TABLE_KEY not in json.dumps(metadata)  # the page table is not stored with every chunk
    assert sorted(by_doc) == ["contract.pdf", "keep.txt", "linked.txt", "note.txt", "terms.docx"]
    assert all(1 <= m["page_start"] <= m["page_end"] <= 3 for m in by_doc["contract.pdf"] + by_doc["terms.docx"])
    assert all("page_start" not in m for m in by_doc["note.txt"])

    alone = tmp_path / "alone"  # a link named on the command line is followed, wherever it leads
    named = ingest([docs / "escape.txt"], f"chroma:{alone}", settings(), embed_model=FakeEmbedding())
    assert named.new == 1 and not named.skipped

    hits = query("Which law governs? Delaware", f"chroma:{store}", k=10, embed_model=FakeEmbedding())
    paged = [h for h in hits if h.doc_id.endswith(".pdf")]
    assert paged and all(h.pages is not None for h in paged)
    from llama_index_sac.apps.ingest import commands

    with monkeypatch.context() as patch:  # the command's output, with the real hits (FakeEmbedding is not loadable)
        patch.setattr(commands, "Searcher", fake_searcher(hits))
        result = CliRunner().invoke(app, ["query", "Delaware", "--vector-store", f"chroma:{store}"])
    assert result.exit_code == 0
    for hit in paged:
        first, last = hit.pages  # type: ignore[misc]
        where = f"p. {first}" if first == last else f"pp. {first}-{last}"
        assert f"  {hit.doc_id}, {where}  characters {hit.start}-{hit.end}\n" in result.output

    again = ingest([docs], f"chroma:{store}", settings(max_pages=30, max_file_bytes=1_000_000),
                   embed_model=FakeEmbedding())
    assert (again.unchanged, again.new, again.changed, again.chunks_written) == (5, 0, 0, 0)  # stable page tables

    # second run: a stored PDF becomes damaged (its rows stay), a link target is deleted and a file vanishes
    # between listing and reading (their rows go), the rest unchanged
    rows_before = Counter(m["ref_doc_id"] for m in table.values())
    (docs / "contract.pdf").write_bytes(b"%PDF-1.4\ntruncated")
    (docs / "note.txt").unlink()  # linked.txt is now a broken link
    from llama_index_sac.apps.ingest import identity as identity_module

    real_find = identity_module.find_files

    def find_then_delete(*args: Any, **kwargs: Any) -> Any:
        found = real_find(*args, **kwargs)
        (docs / "terms.docx").unlink()  # vanishes after it was listed
        return found

    monkeypatch.setattr(identity_module, "find_files", find_then_delete)
    report = ingest([docs], f"chroma:{store}", settings(max_pages=30, max_file_bytes=1_000_000),
                    embed_model=FakeEmbedding())
    why = {Path(name).name: text for name, text in report.skipped.items()}
    assert why["linked.txt"] == f"a link to {docs / 'note.txt'}, which does not exist"
    assert why["terms.docx"] == "vanished during the run (no such file)"
    assert why["contract.pdf"].startswith("not a readable PDF (")
    # removed: note.txt (deleted), linked.txt (its target deleted), terms.docx (vanished); keep.txt unchanged
    assert (report.removed, report.new, report.unchanged) == (3, 0, 1)
    after = Counter(m["ref_doc_id"] for m in chroma_rows(store).values())
    kept = ["docs/contract.pdf", "docs/keep.txt"]  # the damaged PDF keeps its rows: nothing is lost
    assert after == {doc_id: rows_before[doc_id] for doc_id in kept}


@pytest.mark.parametrize("kind", ["chroma", "qdrant"])
def test_moved_page_break_is_a_change(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed")
    docs, spec = tmp_path / "docs", f"{kind}:{tmp_path / 'store'}"
    docs.mkdir()
    path = docs / "terms.docx"
    path.write_bytes(docx_bytes(three_page_docx))
    ingest([docs], spec, settings(parser={"kind": "recursive", "chunk_size": 50}), embed_model=FakeEmbedding())

    def moved(document: Any) -> None:  # the same text, the first break one paragraph earlier
        document.add_paragraph("Clause 1. Alpha: payment within thirty days.")
        document.add_page_break()
        document.add_paragraph("Clause 2. Delivery at the buyer's site.")
        document.add_paragraph("Clause 3. Beta: indemnity for negligence.")
        document.add_page_break()
        document.add_paragraph("Clause 4. Gamma: Delaware law governs.")

    before = read_file(path)
    path.write_bytes(docx_bytes(moved))
    assert read_file(path).text == before.text
    report = ingest([docs], spec, settings(parser={"kind": "recursive", "chunk_size": 50}), embed_model=FakeEmbedding())
    assert (report.changed, report.unchanged) == (1, 0)  # the page table is part of the document's hash
    hits = query("clause", spec, k=10, embed_model=FakeEmbedding())
    assert sorted((h.text[:8], h.pages) for h in hits) == [("Clause 1", (1, 1)), ("Clause 2", (2, 2)),
                                                           ("Clause 3", (2, 2)), ("Clause 4", (3, 3))]


def test_cli_names_what_a_path_is(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", "/dev/null", "--vector-store", f"chroma:{tmp_path / 's'}",
                                      "--no-progress"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == ("error: nothing could be read (the store was not touched): /dev/null: a "
                                     "character device, not a regular file (not read)")
    assert not (tmp_path / "s").exists()
