"""A larger public French-English corpus for readers online: Tatoeba's pairs, checked by checksum.

Chapter 7's optional cells for Colab train the chapter's translator on more data than the
everyday sentences. The data is ManyThings.org's selection of English-French sentence pairs from the Tatoeba
project (https://tatoeba.org, CC-BY 2.0 FR; the Anki ``fra.txt`` file of
https://www.manythings.org/anki/, ``English<TAB>French`` lines), in the copy that the book *Dive
into Deep Learning* serves for its own translation chapter, at :data:`URL`. :func:`download`
checks the file against the SHA-1 that that book pins in its code (:data:`SHA1`) before anything
reads it, and refuses a file that differs: every reader who gets it gets the same pairs. Nothing
in the course's tests or CI downloads it: this module is for a reader with a network::

    from course_pkg.data import make_everyday_corpus, tatoeba

    corpus = make_everyday_corpus("fr", "en")
    archive = tatoeba.download()                  # OSError offline; ValueError for another file
    more = tatoeba.load_pairs(archive, exclude=corpus.valid + corpus.test)   # (French, English)

Framework-free: the standard library only.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import tempfile
import unicodedata
import urllib.request
import zipfile
from pathlib import Path

from ..common.files import atomic_open, cache_folder

URL = "https://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip"
"""Dive into Deep Learning's copy of the English-French pairs (a zip with ``fra.txt``)."""

SHA1 = "94646ad1522d915e7b0f9296181140edcf86a4f5"
"""The SHA-1 of the file at :data:`URL`, as Dive into Deep Learning pins it in its code."""

SPACES = {"\u202f": " ", "\xa0": " "}
"""French typography's narrow and no-break spaces (before ``?``, ``!``, ``:``), read as spaces as
in the everyday corpus."""


def sha1_of(path) -> str:
    """The SHA-1 of the file at ``path``, in hex."""
    digest = hashlib.sha1()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(folder=None, url=URL, sha1=SHA1, timeout=60) -> Path:
    """The zip of Tatoeba's pairs on disk, downloaded once and checked against ``sha1``.

    A file already in ``folder`` (default: the package's cache folder,
    :func:`~course_pkg.common.files.cache_folder`; a temporary folder where that cache is
    disabled) with the right checksum is used as it is; one with another checksum is downloaded
    again. The download is written with :func:`~course_pkg.common.files.atomic_open`, which puts
    it in place only once its checksum is right: an interrupted or altered download leaves the
    folder as it was.

    Raises:
        OSError: no network, a server error, a connection lost in the middle (a
            ``ConnectionError``), a folder that cannot be written (``urllib``'s ``URLError`` is
            one): the caller can skip cleanly on it.
        ValueError: the file downloaded has another SHA-1 than ``sha1`` (both named); nothing is kept.
    """
    if folder is None:
        folder = cache_folder() or Path(tempfile.mkdtemp(prefix="course_pkg-"))
    target = Path(folder) / url.rsplit("/", 1)[-1]
    if target.is_file() and sha1_of(target) == sha1:
        return target
    digest = hashlib.sha1()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, atomic_open(target, "wb") as out:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
            if digest.hexdigest() != sha1:  # raised inside the block: atomic_open keeps nothing
                raise ValueError(f"{url} has SHA-1 {digest.hexdigest()}, not the pinned {sha1}: the file "
                                 "changed or the download was altered; nothing was kept")
    except http.client.HTTPException as error:  # e.g. IncompleteRead: not an OSError itself
        raise ConnectionError(f"{url}: the download broke off ({type(error).__name__})") from error
    return target


def normalise(text) -> str:
    """``text`` as the everyday corpus writes it: NFC, typographic spaces as spaces, stripped."""
    text = unicodedata.normalize("NFC", text)
    for space, plain in SPACES.items():
        text = text.replace(space, plain)
    return " ".join(text.split())


def held_out_key(text) -> str:
    """The form in which :func:`load_pairs` compares a sentence with the held-out ones: lower case,
    and every run of characters that are neither letters nor digits (punctuation, apostrophes
    straight or curly, spaces) as one space, so that ``J’ai froid !`` and ``j'ai froid.`` are one
    sentence."""
    return re.sub(r"[\W_]+", " ", normalise(text).lower()).strip()


def load_pairs(archive, exclude=(), max_pairs=None) -> list:
    """Tatoeba's pairs from the zip ``archive``, French -> English: ``[(french, english), ...]``.

    Each line of the zip's ``fra.txt`` is ``English<TAB>French`` (a third column, an attribution,
    is ignored). Texts are :func:`normalise`-d; a pair repeated exactly is kept once. ``exclude``
    holds ``(french, english)`` pairs (for instance the course's validation and test splits): a
    Tatoeba pair whose French or English sentence is one of theirs, up to case, punctuation and
    apostrophes (:func:`held_out_key`), is dropped, so that a score on those splits never rewards
    a sentence seen in training. A paraphrase is another sentence, and stays.

    Raises:
        ValueError: the zip holds no ``fra.txt``, or a line has fewer than two columns (named).
    """
    banned = {held_out_key(text) for pair in exclude for text in pair}
    with zipfile.ZipFile(archive) as zipped:
        names = [name for name in zipped.namelist() if name.rsplit("/", 1)[-1] == "fra.txt"]
        if not names:
            raise ValueError(f"{archive} holds no fra.txt (found: {', '.join(zipped.namelist())})")
        lines = zipped.read(names[0]).decode("utf-8").splitlines()
    pairs, seen = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) < 2:
            raise ValueError(f"{archive}:{names[0]} line {number} has no tab: {line[:80]!r}")
        english, french = normalise(columns[0]), normalise(columns[1])
        if (french, english) in seen or held_out_key(french) in banned or held_out_key(english) in banned:
            continue
        seen.add((french, english))
        pairs.append((french, english))
        if max_pairs is not None and len(pairs) >= max_pairs:
            break
    return pairs
