"""The course's tokenizers for a Hugging Face model directory: :func:`gpt2_tokenizer`, :func:`bert_tokenizer`.

A model directory is what ``huggingface_hub.snapshot_download`` leaves (or what ``transformers``
4's ``save_pretrained`` writes): the weights, ``config.json``, and the tokenizer's files. The
course reads the vocabulary files, never ``tokenizer.json``:

* GPT-2: ``vocab.json`` and ``merges.txt`` (:class:`~course_pkg.subword.ByteLevelBPE`);
* BERT: ``vocab.txt`` (:class:`~course_pkg.subword.WordPiece`).

``tokenizer_config.json``, when present, gives BERT's ``do_lower_case`` and ``strip_accents``
and both models' special tokens (``unk_token``, ``cls_token``..., ``added_tokens_decoder``);
without it the defaults of ``transformers``' ``GPT2Tokenizer`` and ``BertTokenizer`` hold
(BERT lowercases). ``additional_special_tokens`` (transformers 4) and ``extra_special_tokens``
(5; a list, or an object {name: token}) are honoured: found whole in a text, as
``AutoTokenizer`` finds them; one outside the vocabulary is refused (``transformers`` would give
it a new id), and so are the two keys naming different tokens. Settings the course's tokenizers
do not have (GPT-2's ``add_prefix_space: true``, ``add_bos_token: true`` and
``add_eos_token: true``, BERT's ``tokenize_chinese_chars: false``) are refused
(``ValueError`` naming the key), never ignored. BERT's ``add_bos_token``, ``add_eos_token``,
``do_basic_tokenize`` and ``never_split`` are ignored, as ``AutoTokenizer`` (the ``tokenizers``
one) ignores them. Not checked: ``tokenizer_class`` (a directory naming another class gets
that class from ``AutoTokenizer``) and a ``tokenizer.json`` that disagrees with the vocabulary
files::

    from huggingface_hub import snapshot_download

    path = snapshot_download("gpt2", allow_patterns=["vocab.json", "merges.txt"])
    tok = gpt2_tokenizer(path)
    tok.encode("Hello world")             # [15496, 995], as AutoTokenizer.from_pretrained("gpt2")

A missing directory or file raises ``FileNotFoundError`` naming it; a damaged
``tokenizer_config.json`` raises ``ValueError`` naming the file and the key (or the line).
"""

from __future__ import annotations

import json
import os

from .byte_level import ByteLevelBPE
from .vocab_files import read_text, read_vocab_json, read_vocab_txt
from .wordpiece import WordPiece

__all__ = ["bert_tokenizer", "gpt2_tokenizer", "read_tokenizer_config"]

CONFIG_FILE = "tokenizer_config.json"

# transformers' defaults, where tokenizer_config.json does not name a token
_GPT2_SPECIALS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                  "pad_token": None}
_BERT_SPECIALS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                  "mask_token": "[MASK]"}


def _directory(directory) -> str:
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"the model directory must be a str or os.PathLike, got {type(directory).__name__}")
    directory = os.fspath(directory)
    if not os.path.exists(directory):
        raise FileNotFoundError(f"model directory not found: {directory}")
    if not os.path.isdir(directory):
        raise NotADirectoryError(f"{directory} is a file; expected a model directory "
                                 "(what snapshot_download returns)")
    return directory


def _require(directory, name, model, needed) -> str:
    """The path of ``name`` in ``directory``; ``FileNotFoundError`` naming both unless it is there."""
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        only_json = (" (it has tokenizer.json, which the course does not read)"
                     if os.path.isfile(os.path.join(directory, "tokenizer.json")) else "")
        raise FileNotFoundError(f"{directory} has no {name}{only_json}; {model}'s tokenizer reads "
                                f"{' and '.join(needed)}: download them with "
                                f"snapshot_download(repo_id, allow_patterns={list(needed)!r})")
    return path


def read_tokenizer_config(directory) -> dict:
    """The object in ``directory/tokenizer_config.json``, or ``{}`` when there is no such file.

    Raises:
        ValueError: the file is not UTF-8, not JSON (the message names the line) or not an object.
    """
    path = os.path.join(_directory(directory), CONFIG_FILE)
    if not os.path.exists(path):
        return {}
    text = read_text(path, "tokenizer configuration")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno})") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply to be a tokenizer configuration") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object {{setting: value}}, got {type(config).__name__}")
    return config


def _token(config, key, path, default=None):
    """``config[key]`` (``default`` when absent) as a str token, or ``None``; ``transformers`` 4
    may save a token as ``{"content": ...}``."""
    value = config.get(key, default)
    if isinstance(value, dict):
        value = value.get("content")
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"{path}: {key} must be a non-empty str or null, got {config[key]!r:.60}")
    return value


def _special_tokens(config, defaults, vocab, path, vocab_path) -> list:
    """The special tokens that ``config`` names (or ``defaults`` gives), each checked to be in ``vocab``.

    A token the configuration names must be in the vocabulary; a default one is kept only if it is.
    """
    named = []
    for key, default in defaults.items():
        token = _token(config, key, path, default)
        named.append((key, token, key in config))
    added = config.get("added_tokens_decoder", {})
    if not isinstance(added, dict):
        raise ValueError(f"{path}: added_tokens_decoder must be an object {{id: token}}, "
                         f"got {type(added).__name__}")
    for index, entry in added.items():
        key = f"added_tokens_decoder[{index!r}]"
        named.append((key, _token({key: entry}, key, path), True))
    named.extend(_extra_special_tokens(config, path))
    specials = []
    for key, token, given in named:
        if token is None or token in specials:
            continue
        if token not in vocab:
            if given:
                raise ValueError(f"{path}: {key} {token!r} is not in {vocab_path}")
            continue
        specials.append(token)
    return specials


def _extra_special_tokens(config, path) -> list:
    """``(key, token, True)`` for each token of ``additional_special_tokens`` (transformers 4) and
    ``extra_special_tokens`` (5: a list, or an object {name: token}); both found whole in a text."""
    found = {}
    for name in ("additional_special_tokens", "extra_special_tokens"):
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, dict):
            entries = list(value.items())
        elif isinstance(value, list):
            entries = list(enumerate(value))
        else:
            raise ValueError(f"{path}: {name} must be a list of tokens or an object {{name: token}}, "
                             f"got {type(value).__name__} {value!r:.60}")
        found[name] = [(f"{name}[{k!r}]", _token({f"{name}[{k!r}]": e}, f"{name}[{k!r}]", path), True)
                       for k, e in entries]
    if len(found) == 2 and ({t for _, t, _ in found["additional_special_tokens"]}
                            != {t for _, t, _ in found["extra_special_tokens"]}):
        raise ValueError(f"{path}: additional_special_tokens and extra_special_tokens name different "
                         "tokens (transformers 5 reads only the second): keep one of them")
    return [entry for entries in found.values() for entry in entries]


def _bool(config, key, default, path):
    value = config.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{path}: {key} must be true, false or null, got {value!r:.60}")
    return value


def gpt2_tokenizer(directory, *, special_tokens=None) -> ByteLevelBPE:
    """GPT-2's tokenizer from a model directory's ``vocab.json`` and ``merges.txt``.

    Args:
        directory: the model directory (``snapshot_download("gpt2", ...)``'s return value).
        special_tokens: the tokens found whole in a text; default: those that
            ``tokenizer_config.json`` names (``bos_token``, ``eos_token``, ``unk_token``,
            ``pad_token``, ``added_tokens_decoder``), else ``<|endoftext|>``.

    Returns:
        a :class:`~course_pkg.subword.ByteLevelBPE` giving ``AutoTokenizer``'s ids.

    Raises:
        FileNotFoundError: no such directory, or it lacks ``vocab.json`` or ``merges.txt``.
        ValueError: a damaged file (named, with its line), ``add_prefix_space: true``, or a
            special token that the vocabulary lacks.
    """
    directory = _directory(directory)
    needed = ("vocab.json", "merges.txt")
    vocab_file = _require(directory, "vocab.json", "GPT-2", needed)
    merges_file = _require(directory, "merges.txt", "GPT-2", needed)
    config = read_tokenizer_config(directory)
    path = os.path.join(directory, CONFIG_FILE)
    if _bool(config, "add_prefix_space", False, path):
        raise ValueError(f"{path}: add_prefix_space is true; the course's ByteLevelBPE does not add "
                         "a space before the text (GPT-2's own setting is false)")
    for key in ("add_bos_token", "add_eos_token"):
        if _bool(config, key, False, path):
            raise ValueError(f"{path}: {key} is true; the course's ByteLevelBPE adds no token around the "
                             "ids (GPT-2's own setting is false): add it yourself, or set it false")
    if special_tokens is None and config:
        vocab = read_vocab_json(vocab_file)
        special_tokens = _special_tokens(config, _GPT2_SPECIALS, vocab, path, vocab_file)
    return ByteLevelBPE.from_files(vocab_file, merges_file, special_tokens=special_tokens)


def bert_tokenizer(directory, **options) -> WordPiece:
    """BERT's tokenizer from a model directory's ``vocab.txt`` and ``tokenizer_config.json``.

    Args:
        directory: the model directory (``snapshot_download("bert-base-uncased", ...)``'s return value).
        options: :class:`~course_pkg.subword.WordPiece`'s options (``lowercase``,
            ``strip_accents``, ``special_tokens``, ``unk_token``...), overriding what
            ``tokenizer_config.json`` says (``do_lower_case``, ``strip_accents``, the tokens).

    Returns:
        a :class:`~course_pkg.subword.WordPiece` giving ``AutoTokenizer``'s ids.

    Raises:
        FileNotFoundError: no such directory, or it lacks ``vocab.txt``.
        ValueError: a damaged file (named, with its line or key),
            ``tokenizer_config.json`` with ``tokenize_chinese_chars: false``, or a special
            token that the vocabulary lacks.
    """
    directory = _directory(directory)
    vocab_file = _require(directory, "vocab.txt", "BERT", ("vocab.txt", CONFIG_FILE))
    config = read_tokenizer_config(directory)
    path = os.path.join(directory, CONFIG_FILE)
    if _bool(config, "tokenize_chinese_chars", True, path) is False:
        raise ValueError(f"{path}: tokenize_chinese_chars is false; the course's WordPiece always "
                         "splits CJK ideographs (BERT's own setting is true)")
    settings = {"lowercase": _bool(config, "do_lower_case", True, path),
                "strip_accents": _bool(config, "strip_accents", None, path)}
    if settings["lowercase"] is None:
        raise ValueError(f"{path}: do_lower_case must be true or false, got null")
    if config:
        vocab = set(read_vocab_txt(vocab_file))
        settings["special_tokens"] = _special_tokens(config, _BERT_SPECIALS, vocab, path, vocab_file)
        for key in ("unk_token", "cls_token", "sep_token"):
            token = _token(config, key, path, _BERT_SPECIALS[key])
            if token is None:
                raise ValueError(f"{path}: {key} must be a token, got null (BERT needs it)")
            settings[key] = token
    settings.update(options)
    return WordPiece.from_file(vocab_file, **settings)
