"""Download with a checksum check and an atomic rename: a file is either complete and verified under its
final name, or absent. Temporary files live next to the destination and are removed on any failure."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from ragmeter.errors import RagmeterError

CHUNK = 1 << 16


class DownloadError(RagmeterError):
    """A download failed (network, HTTP status, truncation or checksum); nothing was left behind."""


@contextlib.contextmanager
def _progress(total: int | None, label: str, enabled: bool) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr when it is a terminal; yields an `advance(n)` callable."""
    if not enabled or not sys.stderr.isatty():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _temp_beside(dest: Path) -> tuple[IO[bytes], Path]:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    return os.fdopen(fd, "wb"), Path(name)


def _fetch(url: str, out: IO[bytes], *, timeout: float, progress: bool, label: str) -> int:
    """Stream `url` into `out`; return the byte count. Raises DownloadError on any failure."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            expected = int(length) if length and length.isdigit() else None
            got = 0
            with _progress(expected, label, progress) as advance:
                while True:
                    block = resp.read(CHUNK)
                    if not block:
                        break
                    out.write(block)
                    got += len(block)
                    advance(len(block))
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except http.client.IncompleteRead as exc:
        raise DownloadError(
            f"{url}: truncated download ({len(exc.partial)} bytes, connection closed)"
        ) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{url}: {reason}") from None
    if expected is not None and got != expected:
        raise DownloadError(f"{url}: truncated download ({got} of {expected} bytes)")
    return got


def sha256_file(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _verify(tmp: Path, *, url: str, sha256: str, size: int | None) -> None:
    got_size = tmp.stat().st_size
    if size is not None and got_size != size:
        raise DownloadError(f"{url}: truncated or wrong file ({got_size} bytes, expected {size})")
    digest = sha256_file(tmp)
    if digest != sha256:
        raise DownloadError(f"{url}: checksum mismatch (sha256 {digest}, expected {sha256})")


def _check_scheme(url: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise DownloadError(f"{url}: only http:// and https:// URLs are downloaded")


def download_file(
    url: str,
    dest: Path,
    *,
    sha256: str,
    size: int | None = None,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """Download `url` to `dest`, verifying size and sha256; the file appears only once verified."""
    _check_scheme(url)
    out, tmp = _temp_beside(dest)
    try:
        with out:
            _fetch(url, out, timeout=timeout, progress=progress, label=dest.name)
        _verify(tmp, url=url, sha256=sha256, size=size)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def download_zip_members(
    url: str,
    members: dict[str, tuple[Path, str, int | None]],
    *,
    timeout: float = 60.0,
    progress: bool = True,
) -> None:
    """Download a zip once and extract `members` ({member: (dest, sha256, size)}), each verified and
    renamed into place. The zip itself is a temporary file, removed whatever happens."""
    _check_scheme(url)
    first_dest = next(iter(members.values()))[0]
    out, zip_tmp = _temp_beside(first_dest.parent / ".download.zip")
    try:
        with out:
            _fetch(url, out, timeout=timeout, progress=progress, label=url.rsplit("/", 1)[-1])
        try:
            archive = zipfile.ZipFile(zip_tmp)
        except zipfile.BadZipFile:
            raise DownloadError(f"{url}: not a zip file (truncated download?)") from None
        with archive:
            names = set(archive.namelist())
            for member, (dest, sha, size) in members.items():
                if member not in names:
                    raise DownloadError(f"{url}: the archive has no member {member!r}")
                mout, mtmp = _temp_beside(dest)
                try:
                    try:
                        with mout, archive.open(member) as src:
                            shutil.copyfileobj(src, mout, CHUNK)
                    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                        raise DownloadError(f"{url}: member {member!r} is corrupt ({exc})") from None
                    _verify(mtmp, url=f"{url}!{member}", sha256=sha, size=size)
                    os.replace(mtmp, dest)
                finally:
                    mtmp.unlink(missing_ok=True)
    finally:
        zip_tmp.unlink(missing_ok=True)
