"""Subword vocabulary files: GPT-2's ``vocab.json`` and ``merges.txt``, BERT's ``vocab.txt``.

* ``vocab.json``: one JSON object mapping each token to its id, the ids ``0 .. n-1``
  (``{"!": 0, "\\"": 1, ...}``).
* ``merges.txt``: a first line ``#version: 0.2`` (optional when read), then one merge per
  line, highest priority first: the two parts separated by one space (``Ġ t``).
* ``vocab.txt``: one token per line; a token's id is its line number minus one.

Readers check everything and name the file and line of the first damage (``ValueError``); a
missing file raises ``FileNotFoundError`` naming it. Writers replace a file atomically
(:func:`course_pkg.common.files.atomic_open`): a reader finds the old file or the new one.
"""

from __future__ import annotations

import json
import os

from ..common.files import atomic_open

__all__ = ["MERGES_HEADER", "check_merges", "check_vocab", "read_merges", "read_text", "read_vocab_json",
           "read_vocab_txt", "write_merges", "write_vocab_json", "write_vocab_txt"]

MERGES_HEADER = "#version: 0.2"
"""The first line of GPT-2's ``merges.txt`` (and of the files ``tokenizers`` writes)."""


def read_bytes(path, what, argument=None) -> bytes:
    """The bytes of file ``path``: ``TypeError`` naming ``argument`` (or "the ``what`` path") for a
    path that is not a str or ``os.PathLike``, ``FileNotFoundError`` / ``IsADirectoryError`` naming it
    and ``what`` it is."""
    if not isinstance(path, (str, os.PathLike)):
        name = argument or f"the {what} path"
        raise TypeError(f"{name} must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what} not found: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{what} {path} is a folder, expected a file")
    with open(path, "rb") as file:
        return file.read()


def read_text(path, what) -> str:
    """The UTF-8 text of ``path``; ``FileNotFoundError`` or ``ValueError`` naming it and ``what`` it is."""
    data = read_bytes(path, what)
    path = os.fspath(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: the {what} is not UTF-8 text "
                         f"(byte {data[err.start]:#04x})") from None


def _check_ids(path, vocab) -> None:
    """Raise ``ValueError`` naming ``path`` unless the ids of ``vocab`` are ``0 .. len(vocab) - 1``."""
    for token, index in vocab.items():
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"{path}: the id of {token!r} must be an int, got {index!r:.60}")
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        seen = set()
        repeated = next((i for i in ids if i in seen or seen.add(i)), None)
        if repeated is not None:
            tokens = [t for t, i in vocab.items() if i == repeated]
            raise ValueError(f"{path}: id {repeated} is given to several tokens {tokens[:3]!r}; "
                             f"the ids must be 0 .. {len(ids) - 1}, each once")
        missing = next(i for i in range(len(ids)) if i not in vocab.values())
        raise ValueError(f"{path}: the ids must be 0 .. {len(ids) - 1}, each once; {missing} is missing "
                         f"(the largest is {ids[-1]})")


def check_vocab(vocab, where="vocab") -> dict:
    """Return ``vocab`` as a new dict; ``ValueError`` naming ``where`` unless it maps str tokens
    to the ids ``0 .. n-1`` (``TypeError`` unless it is a dict)."""
    if not isinstance(vocab, dict):
        raise TypeError(f"{where} must be a dict mapping tokens to ids, got {type(vocab).__name__}")
    if not vocab:
        raise ValueError(f"{where} is empty")
    bad = [t for t in vocab if not isinstance(t, str) or not t]
    if bad:
        raise ValueError(f"{where}: every token must be a non-empty str, got {type(bad[0]).__name__} "
                         f"{bad[0]!r:.40}")
    _check_ids(where, vocab)
    return dict(vocab)


def _missing_part(pair, vocab):
    """``"first part 'a'"`` (or second part, result) for the first of a merge's tokens not in ``vocab``."""
    for what, token in (("first part", pair[0]), ("second part", pair[1]), ("result", pair[0] + pair[1])):
        if token not in vocab:
            return f"{what} {token!r}"
    return None


def check_merges(merges, vocab, where="merges") -> list:
    """Return ``merges`` as a list of ``(left, right)`` str pairs; ``ValueError`` naming
    ``where[i]`` for a merge that is not two strings, repeats an earlier one, or has a part or
    result outside ``vocab``."""
    if merges is None or isinstance(merges, (str, bytes, bytearray, dict)) or not hasattr(merges, "__iter__"):
        raise TypeError(f"{where} must be a list of (left, right) pairs (merges.txt's, highest priority "
                        f"first; [] for none), got {type(merges).__name__}")
    out, seen = [], {}
    for i, merge in enumerate(merges):
        if isinstance(merge, str) and merge.count(" ") == 1:
            merge = tuple(merge.split(" "))  # the "a b" form of merges.txt lines
        if (not isinstance(merge, (tuple, list)) or len(merge) != 2
                or not all(isinstance(p, str) and p for p in merge)):
            raise ValueError(f"{where}[{i}] must be a pair of two non-empty strings, got {merge!r:.60}")
        pair = (merge[0], merge[1])
        if pair in seen:
            raise ValueError(f"{where}[{i}] = {pair!r} repeats {where}[{seen[pair]}]")
        seen[pair] = i
        missing = _missing_part(pair, vocab)
        if missing:
            raise ValueError(f"{where}[{i}] = {pair!r} has a {missing} that is not in the vocabulary")
        out.append(pair)
    return out


def read_vocab_json(path) -> dict:
    """Read GPT-2's ``vocab.json``: a JSON object mapping tokens to the ids ``0 .. n-1``.

    Args:
        path: the file.

    Returns:
        dict mapping each token (str) to its id (int).

    Raises:
        FileNotFoundError: there is no such file (the message names it).
        ValueError: the file is not UTF-8, not JSON (the message names the line), not an object,
            or its ids are not ints ``0 .. n-1`` given once each.
    """
    text = read_text(path, "vocabulary file")
    try:
        vocab = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{os.fspath(path)}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno}); "
                         "expected a vocab.json object {token: id}") from None
    except RecursionError:
        raise ValueError(f"{os.fspath(path)}: nested too deeply to be a vocab.json object") from None
    if not isinstance(vocab, dict) or not vocab:
        raise ValueError(f"{os.fspath(path)}: expected a non-empty JSON object {{token: id}}, "
                         f"got {type(vocab).__name__} {str(vocab)[:40]!r}")
    _check_ids(os.fspath(path), vocab)
    return vocab


def read_merges(path, vocab=None) -> list:
    """Read GPT-2's ``merges.txt``: an optional ``#version`` line, then one merge ``a b`` per line.

    Args:
        path: the file.
        vocab: the vocabulary (dict token -> id) the merges belong to; when given, each
            merge's two parts and its result ``a + b`` must be in it.

    Returns:
        list of ``(a, b)`` pairs, highest priority (earliest learnt) first.

    Raises:
        FileNotFoundError: there is no such file.
        ValueError: a line without exactly two tokens separated by one space, a merge given
            twice, or (with ``vocab``) a part or result missing from the vocabulary; the
            message names the file and the line.
    """
    text = read_text(path, "merges file")
    path = os.fspath(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    merges, seen = [], {}
    for lineno, line in enumerate(lines, start=1):
        line = line[:-1] if line.endswith("\r") else line
        if lineno == 1 and line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{path}:{lineno}: a merge is two tokens separated by one space, "
                             f"got {line[:80]!r}")
        pair = (parts[0], parts[1])
        if pair in seen:
            raise ValueError(f"{path}:{lineno}: the merge {line!r} repeats line {seen[pair]}")
        seen[pair] = lineno
        missing = _missing_part(pair, vocab) if vocab is not None else None
        if missing:
            raise ValueError(f"{path}:{lineno}: the merge {line!r} has a {missing} "
                             "that is not in the vocabulary")
        merges.append(pair)
    return merges


def read_vocab_txt(path) -> list:
    """Read BERT's ``vocab.txt``: one token per line, the id of a token is its line number minus one.

    Args:
        path: the file.

    Returns:
        list of tokens, in id order.

    Raises:
        FileNotFoundError: there is no such file.
        ValueError: the file is empty, has an empty line or a token given twice (the message
            names the file and the line).
    """
    text = read_text(path, "vocabulary file")
    path = os.fspath(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: the vocabulary is empty; expected one token per line")
    first_line = {}
    tokens = []
    for lineno, line in enumerate(lines, start=1):
        token = line[:-1] if line.endswith("\r") else line
        if not token.strip():
            raise ValueError(f"{path}:{lineno}: empty token; expected one token per line")
        if token in first_line:
            raise ValueError(f"{path}:{lineno}: the token {token!r} repeats line {first_line[token]}")
        first_line[token] = lineno
        tokens.append(token)
    return tokens


def write_vocab_json(path, vocab) -> None:
    """Write ``vocab`` (dict token -> id, ids ``0 .. n-1``) as ``vocab.json``, atomically."""
    _check_ids(f"the vocabulary for {os.fspath(path)}", dict(vocab))
    with atomic_open(path, "w", encoding="utf-8") as file:
        json.dump(dict(sorted(vocab.items(), key=lambda item: item[1])), file, ensure_ascii=False)


def write_merges(path, merges) -> None:
    """Write ``merges`` (pairs of tokens, highest priority first) as ``merges.txt``, atomically."""
    lines = [MERGES_HEADER]
    for a, b in merges:
        if " " in a or " " in b or "\n" in a + b:
            raise ValueError(f"a merge part cannot hold a space or newline, got {(a, b)!r}")
        lines.append(f"{a} {b}")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write("\n".join(lines) + "\n")


def write_vocab_txt(path, tokens) -> None:
    """Write ``tokens`` (in id order) as ``vocab.txt``, one per line, atomically."""
    tokens = list(tokens)
    if len(set(tokens)) != len(tokens) or any("\n" in t or not t.strip() for t in tokens):
        raise ValueError("vocab.txt tokens must be unique, non-blank and without newlines")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write("".join(token + "\n" for token in tokens))
