"""Safe access to a LegalBench-RAG corpus: a ``corpus/`` folder or a ``corpus.tar.xz`` archive.

Nothing outside the corpus is ever opened:

* A corpus path (a benchmark's ``file_path``, or a file found by listing) is a normalized relative POSIX path such as
  ``"cuad/x.txt"``: valid Unicode, no NUL character, not absolute, no ``.`` or ``..`` component, no ``//`` or
  trailing ``/`` (:func:`corpus_path_problem`).
* Folder corpus: the path is resolved (symbolic links followed) and must stay inside ``corpus/`` (resolved too);
  links that stay inside are followed, links that leave are an error, so are symlink loops. Listing (``scope="all"``)
  walks the dataset folders the same way, each folder once.
* Archive corpus: files are read from the archive's members, never extracted, and the whole archive is rejected if
  one member has an absolute name, a ``..`` component, a name that is not valid UTF-8, is a symbolic or hard link or
  a device/FIFO, declares more than :data:`MAX_MEMBER_BYTES` (256 MiB), or if two file members name the same path;
  a truncated, corrupt or non-tar file is one error naming the archive and what is wrong (``tarfile.ReadError``,
  ``lzma.LZMAError``, ``EOFError``... never leak). Expansion is bounded in total, not only per member: the archive
  is refused as soon as its members (headers, data and padding, whether read or skipped: skipping decompresses too)
  reach past :data:`MAX_TOTAL_BYTES` (1 GiB) of decompressed tar stream. After the tar end marker the compressed
  stream is read on to its end, so that its integrity check (xz CRC) is verified even when the damage lies after the
  last member, but at most :data:`MAX_TAIL_BYTES` (1 MiB: tar pads its end to a record) of it: more is refused
  without decompressing it.
"""

from __future__ import annotations

import lzma
import os
import tarfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "MAX_MEMBER_BYTES",
    "MAX_TAIL_BYTES",
    "MAX_TOTAL_BYTES",
    "LegalBenchRAGError",
    "LegalBenchRAGLayout",
    "corpus_path_problem",
    "short_repr",
    "valid_unicode",
]

_MAX_REPORTED = 25
#: Largest archive member accepted, in bytes (its header's size): a larger one is refused (decompression bomb).
MAX_MEMBER_BYTES = 256 * 1024 * 1024
#: Largest decompressed tar stream accepted, in bytes, all members together (LegalBench-RAG's corpus is about 80 MB).
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
#: Most decompressed bytes accepted after the tar end marker (tar pads the archive to a record of 10 KiB by default).
MAX_TAIL_BYTES = 1024 * 1024


class LegalBenchRAGError(ValueError):
    """Invalid LegalBench-RAG input: missing files, unknown dataset, malformed benchmark, span/answer mismatch, a
    ``file_path`` outside the corpus, an unreadable or unsafe corpus archive.

    Attributes:
        problems: every problem found, one line each (the message shows the first 25).
    """

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        head = self.problems[:_MAX_REPORTED]
        more = len(self.problems) - len(head)
        text = head[0] if len(self.problems) == 1 else f"{len(self.problems)} problems:\n  " + "\n  ".join(head)
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(text)


def short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters (error messages quote hostile input)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def valid_unicode(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (it cannot be encoded, written or used as a file name)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def corpus_path_problem(path: str) -> str | None:
    """Why ``path`` is not an acceptable corpus-relative path (``None`` when it is; see the module docstring)."""
    if not path:
        return "empty path"
    if not valid_unicode(path):
        return "not valid Unicode (lone surrogate)"
    if "\x00" in path:
        return "contains a NUL character"
    if path.startswith("/"):
        return "absolute path (must be relative to corpus/)"
    if ".." in PurePosixPath(path).parts:
        return "climbs out of corpus/ with a '..' component"
    if path == "." or PurePosixPath(path).as_posix() != path:
        return "not a normalized relative path (no '.' component, '//' or trailing '/')"
    return None


def _is(path: Path, kind: str) -> bool:
    """``path.is_dir()`` / ``path.is_file()``, False instead of an error for a name too long, a NUL byte..."""
    try:
        return path.is_dir() if kind == "dir" else path.is_file()
    except (OSError, ValueError):
        return False


def _archive_error(archive: Path, exc: BaseException) -> LegalBenchRAGError:
    if isinstance(exc, EOFError):
        what = "truncated: the compressed data ends before the end-of-stream marker"
    elif isinstance(exc, lzma.LZMAError):
        what = f"corrupt xz data ({exc})"
    elif isinstance(exc, tarfile.ReadError) and "unexpected end of data" in str(exc):
        what = "truncated: a member's data ends early"
    elif isinstance(exc, tarfile.TarError):
        what = f"not a readable tar archive ({type(exc).__name__}: {exc})"
    else:
        what = f"cannot be read ({type(exc).__name__}: {exc})"
    return LegalBenchRAGError([f"{archive}: corpus archive {what}"])


def _member_problem(member: tarfile.TarInfo) -> str | None:
    name = member.name
    if not valid_unicode(name):
        return "has a name that is not valid UTF-8"
    if name.startswith("/"):
        return "has an absolute name"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the archive with a '..' component"
    if member.issym() or member.islnk():
        kind = "symbolic" if member.issym() else "hard"
        return f"is a {kind} link to {short_repr(member.linkname)} (links are not accepted in a corpus archive)"
    if not (member.isfile() or member.isdir()):
        return "is a device or FIFO, not a file"
    if member.size > MAX_MEMBER_BYTES:
        return f"declares {member.size:,} bytes, more than the {MAX_MEMBER_BYTES:,} accepted for one document"
    return None


def _archive_rel(member: tarfile.TarInfo) -> str | None:
    """``"cuad/x.txt"`` for the member ``corpus/cuad/x.txt`` (or ``./corpus/...``); None outside ``corpus/``."""
    parts = PurePosixPath(member.name).parts
    if parts and parts[0] == ".":
        parts = parts[1:]
    if len(parts) < 2 or parts[0] != "corpus":
        return None
    return PurePosixPath(*parts[1:]).as_posix()


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LegalBenchRAGError([f"{where}: not valid UTF-8 ({err})"]) from None


@dataclass(frozen=True)
class LegalBenchRAGLayout:
    """Where the corpus and the benchmark files of a data directory are, and safe reads from the corpus.

    Attributes:
        data_dir: the data directory.
        corpus_dir: its ``corpus/`` folder (preferred when both exist), or None.
        corpus_archive: its ``corpus.tar.xz``, or None.
        benchmarks_dir: the folder of the ``<dataset>.json`` benchmark files.
    """

    data_dir: Path
    corpus_dir: Path | None
    corpus_archive: Path | None
    benchmarks_dir: Path

    @classmethod
    def find(cls, data_dir: str | Path, benchmarks_dir: str | Path | None = None) -> LegalBenchRAGLayout:
        """Locate the corpus and benchmark files.

        Raises:
            LegalBenchRAGError: naming what is missing.
        """
        root = Path(os.path.expanduser(data_dir))  # unlike Path.expanduser, never raises
        if not _is(root, "dir"):
            raise LegalBenchRAGError([f"data directory not found: {root}"])
        corpus_dir = root / "corpus" if _is(root / "corpus", "dir") else None
        archive = root / "corpus.tar.xz" if _is(root / "corpus.tar.xz", "file") else None
        if corpus_dir is None and archive is None:
            raise LegalBenchRAGError([f"{root}: neither a corpus/ folder nor corpus.tar.xz found"])
        if benchmarks_dir is not None:
            bench = Path(os.path.expanduser(benchmarks_dir))
            if not bench.is_absolute() and not _is(bench, "dir"):
                bench = root / bench
            candidates = [bench]
        else:
            candidates = [root / "benchmarks", root / "benchmarks_mini"]
        for bench in candidates:
            if _is(bench, "dir") and any(bench.glob("*.json")):
                return cls(root, corpus_dir, archive, bench)
        names = " or ".join(str(c) for c in candidates)
        raise LegalBenchRAGError([f"no benchmark files (*.json) found in {names}"])

    def available_datasets(self) -> list[str]:
        """Stems of the benchmark files, sorted."""
        return sorted(p.stem for p in self.benchmarks_dir.glob("*.json"))

    # -- folder corpus ----------------------------------------------------------------------------------------
    def _resolve(self, rel: str) -> tuple[Path | None, str | None]:
        """``(resolved path, None)``, or ``(None, why)`` when ``rel`` is unsafe (folder corpus only)."""
        assert self.corpus_dir is not None
        problem = corpus_path_problem(rel)
        if problem is not None:
            return None, problem
        try:
            base = self.corpus_dir.resolve()
            resolved = (self.corpus_dir / rel).resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop (Python < 3.13)
            return None, f"cannot be resolved ({exc})"
        if not resolved.is_relative_to(base):
            return None, f"resolves outside corpus/ through a symbolic link (to {resolved})"
        try:
            resolved.stat()
        except FileNotFoundError:
            pass  # an unknown document, reported as such by the loader
        except OSError as exc:  # a name too long, no permission...
            return None, f"cannot be accessed ({exc.strerror or exc})"
        return resolved, None

    def _walk(self, dataset: str, problems: list[str]) -> list[str]:
        assert self.corpus_dir is not None
        top, why = self._resolve(dataset)
        if top is None:
            problems.append(f"{self.corpus_dir / dataset}: {why}")
            return []
        out: list[str] = []
        seen: set[Path] = set()
        stack = [dataset]
        while stack:
            rel = stack.pop()
            folder, why = self._resolve(rel)
            if folder is None or folder in seen or not _is(folder, "dir"):
                if why is not None:
                    problems.append(f"{self.corpus_dir / rel}: {why}")
                continue
            seen.add(folder)
            try:
                names = sorted(os.listdir(folder))
            except OSError as exc:
                problems.append(f"{self.corpus_dir / rel}: cannot be listed ({exc})")
                continue
            for name in names:
                child = f"{rel}/{name}"
                is_dir = _is(self.corpus_dir / child, "dir")  # a stat (links followed), nothing is opened
                if not is_dir and not name.endswith(".txt"):
                    continue
                path, why = self._resolve(child)
                if path is None:
                    problems.append(f"{self.corpus_dir / child}: {why}")
                elif is_dir:
                    stack.append(child)
                elif _is(path, "file"):
                    out.append(child)
        return out

    # -- archive corpus ---------------------------------------------------------------------------------------
    def _scan_archive(self, read: set[str]) -> tuple[list[str], dict[str, str]]:
        """Every file of the archive's ``corpus/`` (checked: see the module docstring) and the texts of ``read``."""
        archive = self.corpus_archive
        assert archive is not None
        files: list[str] = []
        texts: dict[str, str] = {}
        seen: set[str] = set()
        try:
            with tarfile.open(archive, "r:*") as tar:
                for member in tar:
                    problem = _member_problem(member)
                    if problem is not None:
                        raise LegalBenchRAGError([f"{archive}: unsafe member {short_repr(member.name)}: {problem}"])
                    if member.offset_data + member.size > MAX_TOTAL_BYTES:
                        raise LegalBenchRAGError([f"{archive}: its members expand to more than {MAX_TOTAL_BYTES:,} "
                                                  f"bytes in all (at {short_repr(member.name)}): refused as a "
                                                  "decompression bomb"])
                    rel = _archive_rel(member)
                    if rel is None or not member.isfile():
                        continue
                    if rel in seen:
                        raise LegalBenchRAGError([f"{archive}: member {short_repr(member.name)} appears twice"])
                    seen.add(rel)
                    files.append(rel)
                    if rel in read:
                        handle = tar.extractfile(member)
                        assert handle is not None  # a regular file member
                        texts[rel] = _decode(handle.read(), f"{archive}:{member.name}")
                # read the compressed stream to its end: its integrity check (xz CRC) comes after the last member;
                # but no more than the padding of a tar archive
                tail = 0
                while tar.fileobj is not None and (chunk := tar.fileobj.read(1 << 16)):
                    tail += len(chunk)
                    if tail > MAX_TAIL_BYTES:
                        raise LegalBenchRAGError([f"{archive}: more than {MAX_TAIL_BYTES:,} bytes follow the end of "
                                                  "the tar archive: refused (appended data or padding)"])
        except (tarfile.TarError, lzma.LZMAError, EOFError, zlib.error, OSError) as exc:
            raise _archive_error(archive, exc) from None
        return files, texts

    # -- public reads -----------------------------------------------------------------------------------------
    def unsafe_paths(self, paths: Iterable[str]) -> dict[str, str]:
        """``path -> why`` for every path that must not be read (see :func:`corpus_path_problem`; for a folder
        corpus, also paths that resolve outside ``corpus/`` through symbolic links)."""
        out: dict[str, str] = {}
        for rel in paths:
            why = self._resolve(rel)[1] if self.corpus_dir is not None else corpus_path_problem(rel)
            if why is not None:
                out[rel] = why
        return out

    def corpus_files(self, datasets: Iterable[str]) -> list[str]:
        """Corpus-relative paths (``"cuad/x.txt"``) of every ``.txt`` document of ``datasets``.

        Raises:
            LegalBenchRAGError: an unsafe entry (link leaving ``corpus/``, unsafe archive member) or an unreadable
                archive, naming it.
        """
        wanted = set(datasets)
        if self.corpus_dir is not None:
            problems: list[str] = []
            out = [rel for dataset in sorted(wanted) for rel in self._walk(dataset, problems)]
            if problems:
                raise LegalBenchRAGError(problems)
        else:
            files, _ = self._scan_archive(set())
            out = [rel for rel in files if rel.endswith(".txt") and PurePosixPath(rel).parts[0] in wanted]
        return sorted(out)

    def read_documents(self, paths: Iterable[str]) -> dict[str, str]:
        """Texts of the given corpus-relative paths (UTF-8, no newline translation); missing ones are left out.

        Raises:
            LegalBenchRAGError: a path that is unsafe (:meth:`unsafe_paths`), a file that is not UTF-8 or cannot be
                read, an unreadable or unsafe archive.
        """
        wanted = set(paths)
        unsafe = self.unsafe_paths(wanted)
        if unsafe:
            raise LegalBenchRAGError([f"corpus path {short_repr(rel)}: {why}" for rel, why in unsafe.items()])
        if self.corpus_dir is None:
            return dict(sorted(self._scan_archive(wanted)[1].items()))
        texts: dict[str, str] = {}
        for rel in sorted(wanted):
            resolved, _ = self._resolve(rel)
            if resolved is None or not _is(resolved, "file"):
                continue
            try:
                data = resolved.read_bytes()
            except OSError as exc:
                raise LegalBenchRAGError([f"{self.corpus_dir / rel}: cannot be read ({exc})"]) from None
            texts[rel] = _decode(data, str(self.corpus_dir / rel))
        return texts
