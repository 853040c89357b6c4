"""SentencePiece's Unigram tokenizer (Kudo, 2018): :class:`Unigram`, the ids of ``sentencepiece``.

A unigram model gives every piece of its vocabulary a score, its log-probability, and takes
the pieces of a text to be independent: the probability of a split is the product of its
pieces' probabilities, so its score is the *sum* of their scores. Where BPE replays merges,
Unigram looks at every way to cut the text into pieces of the vocabulary and keeps the best
one. There are exponentially many, but the best split of the first ``i`` characters is the
best split of some shorter start plus one last piece: one pass left to right keeps, for each
position, the best score of a split that ends there and where its last piece starts (the
Viterbi algorithm), and the split is read back from the end::

    tok = Unigram.from_file("spiece.model")       # a SentencePiece model: T5's, Marian's, yours
    tok.tokenize("Hello world")     # e.g. ['▁Hello', '▁world']: '▁' marks a space
    tok.encode("Hello world")       # their ids, as sentencepiece's encode gives them
    tok.decode(tok.encode("Hello world"))    # 'Hello world'

Before it is cut, the text is normalised as the model file says (``Normalizer``: ``nmt_nfkc``
is Unicode NFKC plus a few rules, read from the file's precompiled character map), runs of
spaces shrink to one, a space is put in front (``"world"`` is ``▁world`` as in ``"hello
world"``) and each space is written ``▁``. A character that no piece holds is the unknown
piece (consecutive ones together), with the score of the worst piece less 10; with
``byte_fallback`` it is written as its UTF-8 bytes instead, the pieces ``<0xE2>``... that such
models have, and nothing is unknown.

The rules are those of ``sentencepiece`` 0.2.3 (``unigram_model.cc``'s ``EncodeOptimized``),
tested equal to ``sentencepiece`` and to ``transformers``' ``MarianTokenizer``: scores and their
sums are float32; where two splits score the same, the one whose last piece starts first
(the longer last piece) wins; ``unused`` pieces are never used; a ``user_defined`` piece is
never normalised and scores 0.1 per UTF-8 byte less 0.1 (measured on ``sentencepiece`` 0.2.3:
the 0.2.1 source reads ``bytes * max_score - 0.1``, with ``max_score`` about 1e-38).

Training: use the ``sentencepiece`` package (``SentencePieceTrainer.train(...,
model_type="unigram")``): the course reads its ``.model`` files, it does not train Unigram
models (which start from a large vocabulary and prune it by likelihood, with EM).

Refused, each error naming the argument or file: a model that is not unigram (BPE, word, char),
a file that is missing, empty, truncated or garbled, or holds no pieces; pieces that are not
``(piece, score[, type])`` with a non-empty str (no NUL) and a finite score, a repeated piece,
none to cut a text into, no unknown piece or two, byte pieces without ``byte_fallback`` (or
not all 256 with it), ``treat_whitespace_as_suffix`` and a denormaliser (not supported);
``decode`` refuses what is not one sequence of int ids in range (a str, one int, a 2-D array).
"""

from __future__ import annotations

import math
import os

from ..common.arguments import check_flag
from .checks import check_text, ids_to_tokens
from .sentencepiece_model import (
    PIECE_TYPES,
    SPACE,
    Charsmap,
    Normalizer,
    f32,
    read_sentencepiece_model,
    write_sentencepiece_model,
)

__all__ = ["Unigram"]

_FLT_MAX = 3.4028234663852886e38  # the largest float32: the worst score of a model without normal pieces
_UNK_PENALTY = 10.0
_DEFAULTS = {"byte_fallback": False, "precompiled_charsmap": b"", "normalizer_name": "identity",
             "add_dummy_prefix": True, "remove_extra_whitespaces": True, "escape_whitespaces": True,
             "unk_surface": " \u2047 ", "bos_piece": "<s>", "eos_piece": "</s>", "pad_piece": "<pad>"}


def _byte_piece(byte) -> str:
    return f"<0x{byte:02X}>"


def _check_pieces(pieces, where) -> list:
    """``[(piece, float32 score, type)]`` from ``pieces``; errors name ``where[i]``."""
    if pieces is None or isinstance(pieces, (str, bytes, bytearray, dict)) or not hasattr(pieces, "__iter__"):
        hint = "; load a file with Unigram.from_file(path)" if isinstance(pieces, str) else ""
        raise TypeError(f"{where} must be a list of (piece, score) or (piece, score, type) tuples, "
                        f"got {type(pieces).__name__}{hint}")
    out, seen = [], {}
    for i, entry in enumerate(pieces):
        if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
            raise TypeError(f"{where}[{i}] must be a (piece, score) or (piece, score, type) tuple, "
                            f"got {entry!r:.60}")
        piece, score, kind = (*entry, "normal")[:3]
        if not isinstance(piece, str) or not piece or "\0" in piece:
            raise ValueError(f"{where}[{i}]: the piece must be a non-empty str without NUL, "
                             f"got {piece!r:.40}")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(f32(score)):
            raise ValueError(f"{where}[{i}] ({piece!r}): the score must be a finite number "
                             f"(a float32), got {score!r:.40}")
        if kind not in PIECE_TYPES.values():
            raise ValueError(f"{where}[{i}] ({piece!r}): the type must be one of "
                             f"{sorted(PIECE_TYPES.values())}, got {kind!r:.40}")
        if piece in seen:
            raise ValueError(f"{where}[{i}] = {piece!r} repeats {where}[{seen[piece]}]")
        seen[piece] = i
        out.append((piece, f32(score), kind))
    return out


def _check_special_pieces(pieces, byte_fallback, where) -> int:
    """The id of the one unknown piece; ``ValueError`` for none or two, or bytes without their option."""
    unknown = [i for i, (_, _, kind) in enumerate(pieces) if kind == "unknown"]
    if len(unknown) != 1:
        found = f"{len(unknown)}: {[pieces[i][0] for i in unknown][:3]}" if unknown else "none"
        raise ValueError(f"{where} must hold exactly one piece of type 'unknown' (<unk>), found {found}")
    if not any(kind in ("normal", "user_defined", "unused") for _, _, kind in pieces):
        raise ValueError(f"{where} holds no piece to cut a text into (only unknown, control, byte pieces)")
    names = {_byte_piece(b) for b in range(256)}
    for i, (piece, _, kind) in enumerate(pieces):
        if kind == "byte" and piece not in names:
            raise ValueError(f"{where}[{i}] = {piece!r} is a byte piece; expected <0x00> to <0xFF>")
        if kind == "byte" and not byte_fallback:
            raise ValueError(f"{where}[{i}] = {piece!r} is a byte piece but byte_fallback is False")
    if byte_fallback:
        have = {piece for piece, _, kind in pieces if kind == "byte"}
        if len(have) != 256:
            missing = sorted(names - have)
            raise ValueError(f"byte_fallback needs the 256 byte pieces; {where} lacks {len(missing)}, "
                             f"e.g. {missing[:3]}")
    return unknown[0]


def _check_options(options, where) -> dict:
    """The options, checked: flags are bools, pieces and names str, the character map a blob."""
    for name in ("byte_fallback", "add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"):
        check_flag(name, options[name])
    for name in ("normalizer_name", "unk_surface", "bos_piece", "eos_piece", "pad_piece"):
        if not isinstance(options[name], str):
            raise TypeError(f"{name} must be a str, got {type(options[name]).__name__} {options[name]!r:.40}")
    blob = options["precompiled_charsmap"]
    if not isinstance(blob, (bytes, bytearray)):
        raise TypeError(f"precompiled_charsmap must be bytes (b'' for none), got {type(blob).__name__}")
    charsmap = Charsmap(bytes(blob), f"{where}: precompiled_charsmap") if blob else None
    return dict(options, precompiled_charsmap=bytes(blob), charsmap=charsmap)


class Unigram:
    """SentencePiece's unigram tokenizer: normalise, then the best split under the pieces' scores.

    Args:
        pieces: ``(piece, score)`` or ``(piece, score, type)`` tuples in id order, as a ``.vocab``
            file lists them; type one of ``"normal"`` (the default), ``"unknown"`` (exactly one:
            ``<unk>``), ``"control"`` (``<s>``, ``</s>``: never in a split, decoded as nothing),
            ``"user_defined"`` (never normalised), ``"unused"`` (never used), ``"byte"``
            (``<0x00>`` to ``<0xFF>``, with ``byte_fallback``).
        byte_fallback: write unknown characters as their UTF-8 byte pieces.
        precompiled_charsmap: SentencePiece's normalisation blob (from a model file); ``b""``
            keeps characters as they are (``identity``).
        normalizer_name: its name (``"nmt_nfkc"``, ``"identity"``...), kept for :meth:`save`.
        add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces: the whitespace rules of
            the normaliser (module docstring).
        unk_surface: what :meth:`decode` writes for the unknown piece (``" ⁇ "``).
        bos_piece, eos_piece, pad_piece: the control pieces that :meth:`encode` adds on request.

    Raises:
        TypeError: ``pieces`` not a list of tuples, a flag that is not a bool, a str option that is not.
        ValueError: as the module docstring lists.
    """

    def __init__(self, pieces, *, byte_fallback=False, precompiled_charsmap=b"", normalizer_name="identity",
                 add_dummy_prefix=True, remove_extra_whitespaces=True, escape_whitespaces=True,
                 unk_surface=" \u2047 ", bos_piece="<s>", eos_piece="</s>", pad_piece="<pad>"):
        options = {"byte_fallback": byte_fallback, "precompiled_charsmap": precompiled_charsmap,
                   "normalizer_name": normalizer_name, "add_dummy_prefix": add_dummy_prefix,
                   "remove_extra_whitespaces": remove_extra_whitespaces,
                   "escape_whitespaces": escape_whitespaces, "unk_surface": unk_surface,
                   "bos_piece": bos_piece, "eos_piece": eos_piece, "pad_piece": pad_piece}
        self._load(pieces, "pieces", options)

    def _load(self, pieces, where, options) -> None:
        options = _check_options(options, where)
        pieces = _check_pieces(pieces, where)
        unk_id = _check_special_pieces(pieces, options["byte_fallback"], where)
        normal = [score for _, score, kind in pieces if kind == "normal"]
        lattice = {piece: i for i, (piece, _, kind) in enumerate(pieces)
                   if kind in ("normal", "user_defined")}  # unused pieces are never used
        user_defined = [piece for piece, _, kind in pieces if kind == "user_defined"]
        # everything is checked: now assign
        self.pieces = tuple(pieces)
        self._tokens = [piece for piece, _, _ in pieces]
        self._ids = {piece: i for i, piece in enumerate(self._tokens)}
        self._lattice = lattice
        self._prefixes = {piece[:end] for piece in lattice for end in range(1, len(piece) + 1)}
        self._scores = [score if kind != "user_defined" else f32(0.1 * len(piece.encode()) - 0.1)
                        for piece, score, kind in pieces]
        self.unk_id = unk_id
        self._unk_score = f32(min(normal, default=_FLT_MAX) - _UNK_PENALTY)
        for name in ("byte_fallback", "normalizer_name", "add_dummy_prefix", "remove_extra_whitespaces",
                     "escape_whitespaces", "unk_surface", "bos_piece", "eos_piece", "pad_piece",
                     "precompiled_charsmap"):
            setattr(self, name, options[name])
        self.normalizer = Normalizer(
            options["charsmap"], add_dummy_prefix=options["add_dummy_prefix"],
            remove_extra_whitespaces=options["remove_extra_whitespaces"],
            escape_whitespaces=options["escape_whitespaces"], user_defined=user_defined)

    @classmethod
    def from_file(cls, model_file) -> "Unigram":
        """Load a SentencePiece ``.model`` file (checked whole before anything is kept).

        Raises:
            FileNotFoundError: no such file.
            ValueError: naming the file: not a unigram model (``bpe``, ``word``, ``char``), empty,
                truncated or garbled, pieces as the constructor refuses them, options not supported.
        """
        model = read_sentencepiece_model(model_file)
        path = os.fspath(model_file)
        if model["model_type"] != "unigram":
            raise ValueError(f"{path} is a {model['model_type']} model (trainer_spec.model_type): "
                             "Unigram reads unigram models only")
        trainer, spec = model["trainer_spec"], model["normalizer_spec"]
        if trainer["treat_whitespace_as_suffix"]:
            raise ValueError(f"{path}: treat_whitespace_as_suffix is not supported (spaces after words)")
        if model["denormalizer_charsmap"]:
            raise ValueError(f"{path}: a denormalizer_spec (a rewrite of decoded text) is not supported")
        options = {name: trainer[name] for name in ("byte_fallback", "unk_surface", "bos_piece",
                                                    "eos_piece", "pad_piece")}
        options.update({name: spec[name] for name in ("precompiled_charsmap", "add_dummy_prefix",
                                                      "remove_extra_whitespaces", "escape_whitespaces")})
        options["normalizer_name"] = spec["name"]
        self = cls.__new__(cls)
        self._load(model["pieces"], f"{path}: pieces", options)
        return self

    def save(self, model_file) -> None:
        """Write a ``.model`` file that ``sentencepiece`` and :meth:`from_file` load (atomically).

        It holds what encoding and decoding use (pieces, normaliser, byte fallback, the special
        pieces); the training options of a file read by :meth:`from_file` are not kept.
        """
        trainer = {"model_type": "unigram", "vocab_size": self.vocab_size,
                   "byte_fallback": self.byte_fallback}
        for name in ("unk_surface", "bos_piece", "eos_piece", "pad_piece"):
            if getattr(self, name) != _DEFAULTS[name]:
                trainer[name] = getattr(self, name)
        spec = {name: getattr(self, name) for name in ("precompiled_charsmap", "add_dummy_prefix",
                                                       "remove_extra_whitespaces", "escape_whitespaces")}
        spec["name"] = self.normalizer_name
        write_sentencepiece_model(model_file, self.pieces, trainer, spec)

    @property
    def vocab_size(self) -> int:
        """The number of pieces, special pieces included."""
        return len(self._tokens)

    def get_vocab(self) -> dict:
        """A copy of the vocabulary: dict piece -> id."""
        return dict(self._ids)

    def _special_id(self, piece):
        """The id of ``piece`` if it is a control piece, else ``None`` (as ``bos_id()`` gives -1)."""
        index = self._ids.get(piece)
        return index if index is not None and self.pieces[index][2] == "control" else None

    @property
    def bos_id(self):
        """The id of ``bos_piece`` (``<s>``), or ``None`` if the model has no such control piece."""
        return self._special_id(self.bos_piece)

    @property
    def eos_id(self):
        """The id of ``eos_piece`` (``</s>``), or ``None``."""
        return self._special_id(self.eos_piece)

    @property
    def pad_id(self):
        """The id of ``pad_piece`` (``<pad>``), or ``None`` (SentencePiece trains none by default)."""
        return self._special_id(self.pad_piece)

    def normalize(self, text) -> str:
        """``text`` as the lattice sees it: normalised, ``▁`` for each space (as ``sentencepiece``'s)."""
        check_text(text)
        try:
            return self.normalizer.normalize(text)
        except UnicodeEncodeError as error:
            raise ValueError(f"text holds {text[error.start]!r} at {error.start}, a lone surrogate: "
                             "not a character, it has no UTF-8") from None

    def best_path(self, normalized) -> list:
        """The Viterbi best split of a normalised text: ``[(piece, id), ...]``, unknowns one by one.

        ``best[end]`` holds the best score of a split of ``normalized[:end]``, where its last
        piece starts and that piece's id. Going left to right over starts, every piece found at a
        start offers ``best[start] + score`` to the position where it ends; it wins only with a
        strictly greater score (float32), so among equal scores the first offer, the one that
        starts first, stays. A character with no one-character piece offers the unknown piece.
        """
        size = len(normalized)
        score, start_of, id_of = [0.0] * (size + 1), [-1] * (size + 1), [-1] * (size + 1)
        for start in range(size):
            here, single = score[start], False
            for end in range(start + 1, size + 1):
                if normalized[start:end] not in self._prefixes:  # no piece goes on: a trie's dead end
                    break
                index = self._lattice.get(normalized[start:end])
                if index is None:
                    continue
                candidate = f32(self._scores[index] + here)  # float32 sums, as SentencePiece's
                if start_of[end] == -1 or candidate > score[end]:
                    score[end], start_of[end], id_of[end] = candidate, start, index
                single = single or end == start + 1
            if not single:
                candidate = f32(self._unk_score + here)
                if start_of[start + 1] == -1 or candidate > score[start + 1]:
                    score[start + 1], start_of[start + 1], id_of[start + 1] = candidate, start, self.unk_id
        path, end = [], size
        while end > 0:
            path.append((normalized[start_of[end]:end], id_of[end]))
            end = start_of[end]
        return path[::-1]

    def _encode(self, text) -> list:
        """``[(piece, id)]`` of ``text``: unknown runs merged, or written as byte pieces."""
        out, previous_unknown = [], False
        for piece, index in self.best_path(self.normalize(text)):
            unknown = index == self.unk_id
            if unknown and self.byte_fallback:
                out.extend((_byte_piece(b), self._ids[_byte_piece(b)]) for b in piece.encode("utf-8"))
            elif unknown and previous_unknown:
                out[-1] = (out[-1][0] + piece, index)
            else:
                out.append((piece, index))
            previous_unknown = unknown
        return out

    def tokenize(self, text) -> list:
        """The pieces (str) of ``text``; an unknown run is its own text, as ``sentencepiece`` writes it."""
        return [piece for piece, _ in self._encode(text)]

    def encode(self, text, add_bos=False, add_eos=False) -> list:
        """The ids of ``text``, as ``sentencepiece``'s ``encode(text)`` gives them.

        Args:
            text: a str.
            add_bos, add_eos: put ``bos_id`` first, ``eos_id`` last (``ValueError`` if the model has none).
        """
        add_bos, add_eos = check_flag("add_bos", add_bos), check_flag("add_eos", add_eos)
        for wanted, name in ((add_bos, "bos"), (add_eos, "eos")):
            if wanted and getattr(self, f"{name}_id") is None:
                raise ValueError(f"add_{name}=True but the model has no control piece "
                                 f"{getattr(self, name + '_piece')!r}")
        ids = [index for _, index in self._encode(text)]
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def decode(self, ids) -> str:
        """The text of ids, as ``sentencepiece``'s ``decode(ids)`` writes it.

        ``▁`` becomes a space (the one in front of the text is dropped), control pieces vanish,
        the unknown piece is ``unk_surface``, runs of byte pieces are decoded as UTF-8 (each
        byte that is not part of a character: U+FFFD).

        Raises:
            TypeError: ``ids`` is a str or one int, or holds a non-int.
            ValueError: an id outside ``0 .. vocab_size - 1``, a 2-D array.
        """
        tokens = ids_to_tokens(ids, self._tokens)
        return self._decode(tokens, [self._ids[token] for token in tokens])

    def detokenize(self, tokens) -> str:
        """The text of pieces (what :meth:`tokenize` returns), as ``sentencepiece``'s ``decode_pieces``.

        A piece outside the vocabulary (an unknown run) is written as it is:
        ``detokenize(tokenize(text)) == normalize(text)`` with the spaces put back.
        """
        if isinstance(tokens, (str, bytes, bytearray)) or not hasattr(tokens, "__iter__"):
            raise TypeError(f"tokens must be a list of str (pieces), got {type(tokens).__name__}")
        tokens = list(tokens)
        for i, token in enumerate(tokens):
            if not isinstance(token, str):
                raise TypeError(f"tokens[{i}] must be a str, got {type(token).__name__} {token!r:.40}")
        return self._decode(tokens, [self._ids.get(token, self.unk_id) for token in tokens])

    def _surface(self, piece, index, at_start) -> tuple:
        """``(text, dropped a leading ▁)`` of one piece that is not a byte (``DecodeSentencePiece``)."""
        kind = self.pieces[index][2]
        if kind == "control":
            return "", False
        if kind == "unknown":
            return (self.unk_surface if piece == self._tokens[index] else piece), False
        dropped = False
        if at_start and (self.add_dummy_prefix or self.remove_extra_whitespaces) and piece.startswith(SPACE):
            piece, dropped = piece[1:], not self.remove_extra_whitespaces
        return piece.replace(SPACE, " "), dropped

    def _decode(self, tokens, ids) -> str:
        """The text of pieces and their ids (``SentencePieceProcessor::Decode``)."""
        parts, run, written, dropped = [], bytearray(), False, False
        for token, index in zip(tokens, ids):
            if self.pieces[index][2] == "byte":  # bytes wait for the next piece that is not one
                run.append(int(token[3:5], 16))
                continue
            parts.append(_decode_bytes(run))
            run.clear()
            written = written or bool(parts[-1])
            text, dropped = self._surface(token, index, at_start=not (written or dropped))
            parts.append(text)
            written = written or bool(text)
        parts.append(_decode_bytes(run))
        return "".join(parts)

    def convert_ids_to_tokens(self, ids) -> list:
        """The pieces of ids, checked as :meth:`decode` checks them."""
        return ids_to_tokens(ids, self._tokens)


def _decode_bytes(data) -> str:
    """UTF-8 bytes as text, as SentencePiece decodes byte pieces: each bad byte is one U+FFFD."""
    out, pos = [], 0
    while pos < len(data):
        lead = data[pos]
        length = 1 if lead < 0x80 else 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else \
            4 if 0xF0 <= lead < 0xF8 else 0
        try:
            char = bytes(data[pos:pos + length]).decode("utf-8") if length else ""
        except UnicodeDecodeError:
            char = ""
        if len(char) == 1:
            out.append(char)
            pos += length
        else:
            out.append("\ufffd")
            pos += 1
    return "".join(out)

