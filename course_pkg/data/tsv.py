"""Sentence pairs from tab-separated files, and the course's small English-French sample."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from ..common.arguments import check_count

SAMPLE_TSV = Path(__file__).resolve().parent.parent / "sample_data" / "eng-fra-sample.tsv"
"""English<TAB>French<TAB>attribution sample (20 pairs) written for the course."""

EVERYDAY_TSV = {split: SAMPLE_TSV.parent / f"eng-fra-everyday-{split}.tsv"
                for split in ("train", "valid", "test")}
"""The paths of the course's everyday English-French sentences, ``{"train": path, ...}``.

Written for the course sentence by sentence and released CC0 (each line's third column says so);
split once, by sentence, and shipped split: no sentence of one split occurs in another. Read one
with :func:`load_tsv_pairs`, or all three with :func:`course_pkg.data.make_everyday_corpus`.
"""


def load_tsv_pairs(path, src_col=0, tgt_col=1, max_pairs=None) -> list:
    """Read sentence pairs from a tab-separated file.

    The public parallel corpora of Tatoeba / ManyThings come as
    ``English<TAB>French<TAB>attribution`` lines: ``src_col=0, tgt_col=1``
    reads English -> French, ``src_col=1, tgt_col=0`` French -> English.
    Blank lines are skipped; texts are stripped of surrounding whitespace and
    Unicode-normalised (NFC: ``"e\\u0301"``, as macOS writes accents, reads as ``"é"``).

    Args:
        path: the file (UTF-8, with or without a byte-order mark).
        src_col, tgt_col: column indices (from 0) of the source and target texts.
        max_pairs: stop after this many pairs (``None``: read everything).

    Returns:
        list of ``(source_text, target_text)`` pairs, in file order.

    Raises:
        ValueError: a line has too few columns, an empty text or bytes that
            are not UTF-8 (the message names the file and the line number).
    """
    for name, value in (("src_col", src_col), ("tgt_col", tgt_col)):
        check_count(name, value, 0)
    if max_pairs is not None:
        max_pairs = check_count("max_pairs", max_pairs, 1)
    need = max(src_col, tgt_col) + 1
    try:
        return _read_pairs(path, src_col, tgt_col, max_pairs, need)
    except UnicodeDecodeError:  # text mode decodes by blocks: find the bad byte's line
        raise _undecodable(path) from None


def _read_pairs(path, src_col, tgt_col, max_pairs, need) -> list:
    pairs = []
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) < need:
                raise ValueError(
                    f"{path}:{lineno}: expected at least {need} tab-separated columns "
                    f"(src_col={src_col}, tgt_col={tgt_col}), found {len(cols)}: {line[:80]!r}"
                )
            src = unicodedata.normalize("NFC", cols[src_col].strip())
            tgt = unicodedata.normalize("NFC", cols[tgt_col].strip())
            if not src or not tgt:
                which = "source" if not src else "target"
                raise ValueError(f"{path}:{lineno}: empty {which} text in {line[:80]!r}")
            pairs.append((src, tgt))
            if max_pairs is not None and len(pairs) >= max_pairs:
                break
    return pairs


def _undecodable(path) -> ValueError:
    """The ``ValueError`` naming the line and column of the first byte of ``path`` that is not UTF-8.

    Lines are counted as text mode counts them: LF, CR LF and a lone CR end one.
    """
    data = Path(path).read_bytes()
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        before = data[:err.start].decode("utf-8-sig")  # all valid up to the bad byte
        lines = before.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return ValueError(f"{path}:{len(lines)}: not UTF-8 text: byte 0x{data[err.start]:02x} at column "
                          f"{len(lines[-1]) + 1} (save the file as UTF-8)")
    return ValueError(f"{path}: not UTF-8 text (save the file as UTF-8)")  # pragma: no cover
