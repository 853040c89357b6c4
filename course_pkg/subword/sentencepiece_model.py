"""SentencePiece's ``.model`` file, read and written without ``sentencepiece``, and its normaliser.

A ``.model`` file is one protocol-buffer message, ``ModelProto``: the pieces (each a string, a
score, its log-probability in a unigram model, and a type), the ``TrainerSpec`` it was trained
with and the ``NormalizerSpec`` that says how a text is normalised before it is cut. The
protocol-buffer wire format is a run of fields, each a key (the field's number and how its value
is written: a variable-length integer, 4 or 8 bytes, or a length and that many bytes) then its
value; a message inside a message is such a run of bytes. The reader here keeps the fields that
encoding and decoding use and skips the others, as every protocol-buffer reader does.

The normaliser (:class:`Normalizer`) follows SentencePiece's ``normalizer.cc``: the text's UTF-8
bytes are rewritten by the model's *precompiled character map*, a double-array trie of byte
strings and what each becomes, longest match first (:class:`Charsmap`; ``nmt_nfkc``'s is Unicode
NFKC plus a few rules: tabs, newlines and other spaces, zero-width ones too, become a space, most
control characters vanish); then runs of spaces shrink to one and the ends are trimmed
(``remove_extra_whitespaces``), a space is put in front (``add_dummy_prefix``) and every space is
written ``▁`` (U+2581, ``escape_whitespaces``). The map is read as it is, not rebuilt from this
Python's ``unicodedata``: the two could differ where their Unicode versions do.
"""

from __future__ import annotations

import math
import os
import struct

from ..common.files import atomic_open
from .vocab_files import read_bytes

__all__ = ["PIECE_TYPES", "SPACE", "Charsmap", "Normalizer", "f32", "read_sentencepiece_model",
           "write_sentencepiece_model"]

SPACE = "\u2581"
"""SentencePiece's whitespace marker ``▁`` (U+2581 LOWER ONE EIGHTH BLOCK)."""

PIECE_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}
"""The piece types of ``ModelProto.SentencePiece.Type``, by their number in the file."""

_MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_WIRE = {"enum": _VARINT, "bool": _VARINT, "int32": _VARINT, "float": _FIXED32, "str": _BYTES,
         "bytes": _BYTES}

# field number -> (name, kind, default): the fields read, with the defaults of sentencepiece_model.proto
_PIECE_FIELDS = {1: ("piece", "str", ""), 2: ("score", "float", 0.0), 3: ("type", "enum", 1)}
_TRAINER_FIELDS = {
    3: ("model_type", "enum", 1), 4: ("vocab_size", "int32", 8000),
    24: ("treat_whitespace_as_suffix", "bool", False), 35: ("byte_fallback", "bool", False),
    44: ("unk_surface", "str", " \u2047 "),
    45: ("unk_piece", "str", "<unk>"), 46: ("bos_piece", "str", "<s>"), 47: ("eos_piece", "str", "</s>"),
    48: ("pad_piece", "str", "<pad>")}
_NORMALIZER_FIELDS = {
    1: ("name", "str", ""), 2: ("precompiled_charsmap", "bytes", b""), 3: ("add_dummy_prefix", "bool", True),
    4: ("remove_extra_whitespaces", "bool", True), 5: ("escape_whitespaces", "bool", True)}


# ------------------------------------------------------------------ the wire format
def _varint(data, pos, where) -> tuple:
    """``(value, next position)`` of the variable-length integer at ``data[pos]``: 7 bits a byte."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError(f"{where}: the file ends inside a number (truncated?)")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise ValueError(f"{where}: a number longer than 10 bytes (garbled)")


def _fields(data, where):
    """``(number, wire type, value)`` of each field of one message: an int, or the bytes written."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos, where)
        number, wire = key >> 3, key & 7
        if number == 0 or wire not in (_VARINT, _FIXED64, _BYTES, _FIXED32):
            raise ValueError(f"{where}: byte {pos - 1} starts no protocol-buffer field "
                             f"(field {number}, wire type {wire}): garbled, or not a model file")
        if wire == _VARINT:
            value, pos = _varint(data, pos, where)
        else:
            if wire == _BYTES:
                size, pos = _varint(data, pos, where)
            else:
                size = 8 if wire == _FIXED64 else 4
            if pos + size > len(data):
                raise ValueError(f"{where}: field {number} needs {size} bytes, {len(data) - pos} are "
                                 "left (truncated?)")
            value, pos = data[pos:pos + size], pos + size
        yield number, wire, value


def _value(value, kind, where):
    if kind == "float":
        return struct.unpack("<f", value)[0]
    if kind in ("int32", "enum"):
        value &= 0xFFFFFFFF  # a negative int32 is written as 10 bytes of two's complement
        return value - (1 << 32) if value >= 1 << 31 else value
    if kind == "bool":
        return value != 0
    if kind == "str":
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{where} is not UTF-8 text: {value[:20]!r}") from None
    return value


def _message(data, fields, where) -> dict:
    """The fields of ``fields`` in one message, by name; absent ones get their default."""
    found = {}
    for number, wire, value in _fields(data, where):
        if number in fields:
            name, kind, _ = fields[number]
            if wire != _WIRE[kind]:
                raise ValueError(f"{where}.{name} is written with wire type {wire}, expected "
                                 f"{_WIRE[kind]} (a {kind}): garbled, or not a SentencePiece model")
            found[name] = _value(value, kind, f"{where}.{name}")  # the last one wins, as in protobuf
    return {name: found.get(name, default) for name, _, default in fields.values()}


def read_sentencepiece_model(model_file) -> dict:
    """Read a SentencePiece ``.model`` file (a serialized ``ModelProto``) of any model type.

    Returns:
        dict with ``pieces`` (list of ``(piece, score, type)``, type a name of ``PIECE_TYPES``:
        ``"normal"``, ``"unknown"``...), ``model_type`` (``"unigram"``, ``"bpe"``, ``"word"``,
        ``"char"``), ``trainer_spec`` and ``normalizer_spec`` (dicts of the fields read, defaults
        filled in) and ``denormalizer_charsmap`` (bytes, empty unless the model rewrites decoded
        text).

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file: empty, truncated or garbled (not a protocol buffer, a
            ``.vocab`` or JSON file; no ``trainer_spec`` or ``normalizer_spec``, which
            ``sentencepiece`` writes after the pieces), no pieces, a type out of range.
    """
    data = read_bytes(model_file, "SentencePiece model", "model_file")
    path = os.fspath(model_file)
    if not data:
        raise ValueError(f"{path} is empty: expected a SentencePiece .model file")
    text_like = not any(byte < 9 for byte in data[:200])  # a model file has many small bytes
    hint = " (a text file: the .vocab or a JSON file? pass the .model file)" if text_like else ""
    pieces, parts, seen = [], {2: b"", 3: b"", 5: b""}, set()
    try:
        for number, wire, value in _fields(data, path):
            if number == 1 and wire == _BYTES:
                pieces.append(_message(value, _PIECE_FIELDS, f"{path}: pieces[{len(pieces)}]"))
            elif number in parts and wire == _BYTES:
                parts[number] += value  # a repeated message field is merged, as protobuf does
                seen.add(number)
            elif number in (1, 2, 3, 5):
                raise ValueError(f"{path}: field {number} of ModelProto has wire type {wire}, expected 2")
        trainer = _message(parts[2], _TRAINER_FIELDS, f"{path}: trainer_spec")
        normalizer = _message(parts[3], _NORMALIZER_FIELDS, f"{path}: normalizer_spec")
        denormalizer = _message(parts[5], _NORMALIZER_FIELDS, f"{path}: denormalizer_spec")
    except ValueError as error:
        raise ValueError(f"{error}{hint}") from None
    if not pieces:
        raise ValueError(f"{path} holds no pieces: not a SentencePiece model{hint}")
    for number, name in ((2, "trainer_spec"), (3, "normalizer_spec")):
        if number not in seen:
            raise ValueError(f"{path} has {len(pieces)} pieces but no {name}: truncated? (sentencepiece "
                             "writes it after the pieces)")
    for i, piece in enumerate(pieces):
        if piece["type"] not in PIECE_TYPES:
            raise ValueError(f"{path}: pieces[{i}] ({piece['piece']!r}) has type {piece['type']}, "
                             f"expected one of {sorted(PIECE_TYPES)}")
    if trainer["model_type"] not in _MODEL_TYPES:
        raise ValueError(f"{path}: trainer_spec.model_type = {trainer['model_type']}, expected 1 to 4")
    return {"pieces": [(p["piece"], p["score"], PIECE_TYPES[p["type"]]) for p in pieces],
            "model_type": _MODEL_TYPES[trainer["model_type"]], "trainer_spec": trainer,
            "normalizer_spec": normalizer, "denormalizer_charsmap": denormalizer["precompiled_charsmap"]}


def _write_varint(value) -> bytes:
    value &= (1 << 64) - 1  # a negative int32 as 64-bit two's complement, as protobuf writes it
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _write_message(values, fields) -> bytes:
    out = bytearray()
    for number, (name, kind, _) in fields.items():
        if name not in values:
            continue
        value = values[name]
        out += _write_varint(number << 3 | _WIRE[kind])
        if kind == "float":
            out += struct.pack("<f", value)
        elif kind in ("str", "bytes"):
            raw = value.encode("utf-8") if kind == "str" else bytes(value)
            out += _write_varint(len(raw)) + raw
        else:
            out += _write_varint(int(value))
    return bytes(out)


def write_sentencepiece_model(model_file, pieces, trainer_spec, normalizer_spec) -> None:
    """Write a ``.model`` file that ``sentencepiece`` loads (atomically).

    Args:
        model_file: the path.
        pieces: ``(piece, score, type)`` triples in id order, type a name of ``PIECE_TYPES``.
        trainer_spec, normalizer_spec: dicts of the fields to write (names as
            :func:`read_sentencepiece_model` returns them; others are left at their defaults).
    """
    numbers = {name: number for number, name in PIECE_TYPES.items()}
    for i, (piece, _, kind) in enumerate(pieces):
        if kind not in numbers:
            raise ValueError(f"pieces[{i}] ({piece!r}): the type must be one of {sorted(numbers)}, "
                             f"got {kind!r}")
    models = {name: number for number, name in _MODEL_TYPES.items()}
    trainer = dict(trainer_spec)
    trainer["model_type"] = models[trainer.get("model_type", "unigram")]
    blob = bytearray()
    for piece, score, kind in pieces:
        message = _write_message({"piece": piece, "score": score, "type": numbers[kind]}, _PIECE_FIELDS)
        blob += _write_varint(1 << 3 | _BYTES) + _write_varint(len(message)) + message
    for number, values, fields in ((2, trainer, _TRAINER_FIELDS), (3, normalizer_spec, _NORMALIZER_FIELDS)):
        message = _write_message(values, fields)
        blob += _write_varint(number << 3 | _BYTES) + _write_varint(len(message)) + message
    with atomic_open(model_file, "wb") as file:
        file.write(bytes(blob))


# ------------------------------------------------------------------ the normaliser
class Charsmap:
    """SentencePiece's precompiled character map, read as ``normalizer.cc`` reads it.

    The blob is the size of a trie (4 bytes, little-endian), the trie (a ``darts-clone``
    double array of 4-byte units whose keys are UTF-8 byte strings and whose values are offsets),
    then the replacement strings, each ending in a zero byte, that the offsets point to.

    Raises:
        ValueError: naming ``where``: a blob too short, a trie size that does not fit, replacement
        strings that are not zero-terminated UTF-8.
    """

    def __init__(self, blob, where="precompiled_charsmap"):
        if not isinstance(blob, (bytes, bytearray)):
            raise TypeError(f"{where} must be bytes, got {type(blob).__name__}")
        size = int.from_bytes(blob[:4], "little") if len(blob) > 4 else 0
        if not 1024 <= size < len(blob) - 4 or size % 1024:
            raise ValueError(f"{where} is broken: a trie of {size} bytes in a blob of {len(blob)} "
                             "(expected a multiple of 1024 that fits)")
        strings = bytes(blob[4 + size:])
        if not strings.endswith(b"\0"):
            raise ValueError(f"{where} is broken: the replacement strings do not end with a zero byte")
        try:
            strings.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{where} is broken: its replacement strings are not UTF-8 "
                             f"(byte {error.start})") from None
        self._units = struct.unpack(f"<{size // 4}I", bytes(blob[4:4 + size]))
        self._strings = strings

    def match(self, data, pos):
        """``(length, replacement)``: the longest key at ``data[pos:]`` (bytes) and what it becomes, or None.

        The double array: the children of a unit are found at ``index ^ offset ^ byte``, where a
        unit whose label is that byte lives; a unit with a leaf flag ends a key, its value in the
        unit found at ``index ^ offset``.
        """
        units, found = self._units, None
        index = self._offset(units[0])
        for end in range(pos, len(data)):
            index ^= data[end]
            if index >= len(units) or units[index] & 0x800000FF != data[end]:  # the unit's label
                break
            unit = units[index]
            index ^= self._offset(unit)
            if unit >> 8 & 1 and index < len(units):  # has a leaf: a key ends here
                found = (end + 1 - pos, units[index] & 0x7FFFFFFF)
        if found is None or found[1] >= len(self._strings):
            return None
        length, start = found
        return length, self._strings[start:self._strings.index(b"\0", start)]

    @staticmethod
    def _offset(unit) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def _char_length(lead) -> int:
    """The length of the UTF-8 character that starts with the byte ``lead`` (SentencePiece's OneCharLen)."""
    return (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)[lead >> 4]


class Normalizer:
    """SentencePiece's normaliser: the character map, then the whitespace rules.

    Args:
        charsmap: a :class:`Charsmap`, or ``None`` (``identity``: characters kept).
        add_dummy_prefix: put a space in front of the text (``"world"`` -> ``"▁world"``, as inside
            ``"hello world"``).
        remove_extra_whitespaces: drop leading and trailing spaces, shrink runs to one.
        escape_whitespaces: write each space as ``▁``.
        user_defined: pieces kept as they are, never normalised (found longest first).
    """

    def __init__(self, charsmap=None, *, add_dummy_prefix=True, remove_extra_whitespaces=True,
                 escape_whitespaces=True, user_defined=()):
        self.charsmap = charsmap
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.space = SPACE.encode() if escape_whitespaces else b" "
        self._user_defined = sorted({p.encode() for p in user_defined}, key=len, reverse=True)

    def _prefix(self, data, pos) -> tuple:
        """``(normalized bytes, bytes read)`` for the text at ``data[pos:]``."""
        for symbol in self._user_defined:
            if data.startswith(symbol, pos):
                return symbol, len(symbol)
        if self.charsmap is not None:
            found = self.charsmap.match(data, pos)
            if found is not None:
                return found[1], found[0]
        length = _char_length(data[pos])
        return data[pos:pos + length], length

    def normalize(self, text) -> str:
        """``text`` normalised as SentencePiece's ``Normalizer::Normalize`` writes it."""
        data, pos = text.encode("utf-8"), 0
        if self.remove_extra_whitespaces:  # skip the leading spaces
            while pos < len(data) and self._prefix(data, pos)[0] == b" ":
                pos += self._prefix(data, pos)[1]
        if pos == len(data):
            return ""
        out = bytearray(self.space if self.add_dummy_prefix else b"")
        previous_space = self.remove_extra_whitespaces
        while pos < len(data):
            piece, length = self._prefix(data, pos)
            if previous_space:
                piece = piece.lstrip(b" ")
            if piece:
                out += piece.replace(b" ", self.space)
                previous_space = piece.endswith(b" ")
            pos += length
            if not self.remove_extra_whitespaces:
                previous_space = False
        if self.remove_extra_whitespaces:  # drop the trailing spaces
            while out.endswith(self.space):
                del out[-len(self.space):]
        return out.decode("utf-8")


_FLOAT32 = struct.Struct("<f")


def f32(x) -> float:
    """``x`` rounded to the nearest float32, as SentencePiece's scores and sums are."""
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)
