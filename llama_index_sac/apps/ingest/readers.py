"""Reading one input file of ``llama-sac ingest`` safely: regular files only, within limits; PDF and DOCX page by page.

* :func:`read_limited`: the bytes of a regular file, at most ``max_file_bytes`` of them. The file is opened with
  ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO, a device (``/dev/zero``), a socket or
  a link to one is refused without blocking or reading it, and what is checked is what is read.
* :func:`pdf_pages`: the text of each page of a PDF (``pypdf``), physical page order; an encrypted file is opened
  only when its user password is empty; a file of more than ``max_pages`` pages is refused before any page is read.
* :func:`docx_text`: the text of a DOCX's body (``python-docx``) and where its pages begin, when the file says so
  (:mod:`~llama_index_sac.apps.ingest.docx_pages`). Before anything is parsed, the ZIP's end record must declare at
  most :data:`MAX_ZIP_MEMBERS` members and the central directory at most ``max_file_bytes`` unpacked bytes in all;
  every member is then unpacked once as a stream that stops at that total (a member that unpacks to more than it
  declares fails its CRC check).
* :func:`join_pages`: page texts into one text and its page table (pages joined by a blank line).

Every refusal is an :class:`Unreadable` whose message says what is wrong with the file; ``forget`` marks those after
which the document's rows, if any, are deleted (the file is gone, or is a link the run does not follow).
"""

from __future__ import annotations

import io
import logging
import os
import re
import stat
import struct
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llama_index_sac.apps._input import file_kind

__all__ = ["MAX_ZIP_MEMBERS", "Unreadable", "docx_text", "join_pages", "pdf_pages", "read_limited", "shown"]

#: The most members a DOCX may have (its XML parts, plus one per embedded image or object).
MAX_ZIP_MEMBERS = 10_000
_PAGE_SEPARATOR = "\n\n"
_STREAM_CHUNK = 1 << 20


class Unreadable(Exception):
    """A file that is not ingested: the message says why. ``forget``: the document's rows are deleted too."""

    def __init__(self, message: str, *, forget: bool = False) -> None:
        super().__init__(message)
        self.forget = forget


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` printable on one line: bytes that are not UTF-8 as ``\\xff``, control characters escaped."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _no_address(message: str) -> str:
    """``message`` without Python object addresses (``'<_io.BytesIO object at 0x7f...>'`` becomes ``the file``)."""
    return re.sub(r"'?<[\w.]+ object at 0x[0-9a-fA-F]+>'?", "the file", message)


def read_limited(path: Path, max_bytes: int) -> bytes:
    """The content of the regular file ``path`` (following links), at most ``max_bytes`` bytes.

    Raises:
        Unreadable: not a regular file (FIFO, device, socket, folder; never read), larger than ``max_bytes`` (by its
            size, or grown past it while read), changed while read (its size or modification time, on the open
            descriptor), a broken link or a file that vanished (``forget=True``), or an ``OSError`` (e.g. permission
            denied).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            raise Unreadable(f"a link to {shown(os.readlink(path))}, which does not exist", forget=True) from None
        raise Unreadable("vanished during the run (no such file)", forget=True) from None
    except OSError as exc:
        raise Unreadable(f"cannot be opened ({type(exc).__name__}: {exc.strerror or exc})") from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{file_kind(info.st_mode)}, not a regular file (not read)")
        if info.st_size > max_bytes:
            raise Unreadable(f"{info.st_size:,} bytes, over the limit of {max_bytes:,} (--max-file-bytes)")
        data = bytearray()
        try:
            while len(data) <= max_bytes and (block := handle.read(min(_STREAM_CHUNK, max_bytes + 1 - len(data)))):
                data += block
            after = os.fstat(fd)
        except OSError as exc:
            raise Unreadable(f"cannot be read ({type(exc).__name__}: {exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise Unreadable(f"grew past the limit of {max_bytes:,} bytes (--max-file-bytes) while it was read")
    if (after.st_size, after.st_mtime_ns) != (info.st_size, info.st_mtime_ns):
        raise Unreadable("changed while it was read (being written?): not ingested this run (the next run reads it)")
    return bytes(data)


def join_pages(pages: Sequence[str]) -> tuple[str, list[int]]:
    """One text from page texts (pages with text joined by a blank line) and the offset where each page begins
    (a page without text begins where the next text does)."""
    parts: list[str] = []
    starts: list[int] = []
    length = 0
    for page in pages:
        begin = length + (len(_PAGE_SEPARATOR) if length else 0)
        starts.append(begin)
        if page:
            if length:
                parts.append(_PAGE_SEPARATOR)
            parts.append(page)
            length = begin + len(page)
    return "".join(parts), starts


def pdf_pages(data: bytes, max_pages: int) -> list[str]:
    """The text of each page of the PDF ``data`` (``pypdf``'s ``extract_text``), first page first.

    Raises:
        Unreadable: not a readable PDF, encrypted with a password, AES-encrypted while ``cryptography`` is missing,
            more than ``max_pages`` pages, or no text on any page (a scanned document without a text layer).
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    try:
        with _quiet("pypdf"):
            return _pdf_pages(PdfReader, data, max_pages)
    except Unreadable:
        raise
    except FileNotDecryptedError:
        raise Unreadable("an encrypted PDF that needs a password (decrypt it first)") from None
    except DependencyError as exc:  # AES without the cryptography package
        raise Unreadable(f"an encrypted PDF that needs the cryptography package to be read ({exc}; the documents "
                         "extra of llama-index-sac brings it)") from None
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, struct.error,
            RecursionError, NotImplementedError, OSError) as exc:  # what pypdf raises on damaged files
        raise Unreadable(f"not a readable PDF ({type(exc).__name__}: {_no_address(str(exc))})") from None


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """No log records of ``logger`` and no warnings in the block: what is wrong with a file is its one line."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


def _pdf_pages(reader_class: Any, data: bytes, max_pages: int) -> list[str]:
    """:func:`pdf_pages` with ``reader_class`` (pypdf's ``PdfReader``); pypdf's own errors pass through."""
    reader = reader_class(io.BytesIO(data), strict=False)
    if reader.is_encrypted and not reader.decrypt(""):
        raise Unreadable("an encrypted PDF that needs a password (decrypt it first)")
    count = len(reader.pages)
    if count > max_pages:
        raise Unreadable(f"{count:,} pages, over the limit of {max_pages:,} (--max-pages)")
    texts = [page.extract_text() or "" for page in reader.pages]
    if not any(text.strip() for text in texts):
        raise Unreadable(f"no text on any of its {count:,} page(s): a scanned PDF without a text layer? "
                         "(run OCR on it first)")
    return texts


def _declared_members(data: bytes) -> int:
    """The member count that the ZIP's end-of-central-directory record declares (read before any parsing).

    Raises:
        Unreadable: no end record (not a ZIP), or a ZIP64 archive (more than 65,535 members or 4 GiB).
    """
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if at < 0 or len(data) - at < 22:
        raise Unreadable("not a DOCX (not a ZIP archive)")
    count = struct.unpack_from("<H", data, at + 10)[0]
    if count == 0xFFFF or data.rfind(b"PK\x06\x07", max(0, at - 20), at) >= 0:
        raise Unreadable("a ZIP64 archive: no DOCX is that large")
    return int(count)


def check_zip(data: bytes, max_unpacked: int) -> None:
    """Refuse a ZIP bomb before it is parsed: at most :data:`MAX_ZIP_MEMBERS` members, at most ``max_unpacked``
    bytes unpacked in all, by the declared sizes and by unpacking each member as a stream (which stops at the cap).

    Raises:
        Unreadable: the archive breaks a limit, or is damaged (bad CRC, bad header).
    """
    members = _declared_members(data)
    if members > MAX_ZIP_MEMBERS:
        raise Unreadable(f"a ZIP of {members:,} members, over the limit of {MAX_ZIP_MEMBERS:,} (a ZIP bomb?)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_ZIP_MEMBERS:
                raise Unreadable(f"a ZIP of {len(infos):,} members, over the limit of {MAX_ZIP_MEMBERS:,} (a ZIP "
                                 "bomb?)")
            declared = sum(info.file_size for info in infos)
            if declared > max_unpacked:
                raise Unreadable(f"unpacks to {declared:,} bytes, over the limit of {max_unpacked:,} "
                                 "(--max-file-bytes; a ZIP bomb?)")
            total = 0
            for info in infos:
                with archive.open(info) as member:
                    while block := member.read(_STREAM_CHUNK):
                        total += len(block)
                        if total > max_unpacked:
                            raise Unreadable(f"unpacks to more than {max_unpacked:,} bytes (--max-file-bytes; "
                                             "a ZIP bomb?)")
    except Unreadable:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, OSError, EOFError,
            RuntimeError, struct.error) as exc:
        raise Unreadable(f"not a readable DOCX (damaged ZIP: {type(exc).__name__}: {exc})") from None


def docx_text(data: bytes, max_unpacked: int, max_pages: int) -> tuple[str, list[int] | None]:
    """The text of the DOCX ``data`` and its page table (``None`` when the file marks no page break), after
    :func:`check_zip`.

    Raises:
        Unreadable: a ZIP bomb, not a DOCX, damaged, or more than ``max_pages`` pages.
    """
    from docx import Document as open_docx
    from docx.opc.exceptions import PackageNotFoundError

    from llama_index_sac.apps.ingest.docx_pages import DocxContentError, body_text

    check_zip(data, max_unpacked)
    try:
        document = open_docx(io.BytesIO(data))
        text, starts = body_text(document.element.body)
    except PackageNotFoundError:
        raise Unreadable("not a DOCX (no Word document inside the ZIP)") from None
    except DocxContentError as exc:
        raise Unreadable(f"a damaged DOCX: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - lxml's XMLSyntaxError, a missing part...: the file is damaged
        message = str(exc)
        if "macroEnabled" in message:  # python-docx: "file '<_io.BytesIO ...>' is not a Word file, content type..."
            raise Unreadable("a macro-enabled Word document (.docm; content type application/vnd.ms-word.document."
                             "macroEnabled.main+xml): not read (save it as a .docx without macros)") from None
        raise Unreadable(f"not a readable DOCX ({type(exc).__name__}: {_no_address(message)})") from None
    if starts is not None and len(starts) > max_pages:
        raise Unreadable(f"{len(starts):,} pages, over the limit of {max_pages:,} (--max-pages)")
    return text, starts
