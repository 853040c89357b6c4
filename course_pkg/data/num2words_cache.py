"""Numbers written in words: ``num2words``, sped up and cached in memory and on disk.

``number_words`` writes one number; the corpora (``corpora.py``) ask
``words_for`` for many at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..common.arguments import check_count, check_language
from ..common.files import atomic_write, cache_folder


def _num2words():
    try:
        import num2words
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the number corpus needs num2words: pip install num2words "
            "(or pip install 'course-pkg[data]')"
        ) from err
    return num2words


def supported_languages() -> list:
    """The language codes ``num2words`` writes numbers in (``'de'``, ``'en'``, ``'fr'``, ...)."""
    return sorted(_num2words().CONVERTER_CLASSES)


# Words already written, per language: {lang: {number: words}}. Filled from the
# on-disk cache (once per process) and by num2words.
_WORDS: dict = {}


def forget_words() -> None:
    """Empty the memory cache, as in a fresh process: the next call reads the disk cache again."""
    _WORDS.clear()


def _cache_file(lang) -> Optional[Path]:
    """Where the words of ``lang`` are cached on disk, or None if disabled.

    The folder is :func:`~course_pkg.common.files.cache_folder` (``$COURSE_PKG_CACHE_DIR``, set
    but empty: no disk cache; else ``$XDG_CACHE_HOME/course_pkg`` or ``~/.cache/course_pkg``).
    """
    folder = cache_folder()
    if folder is None:
        return None
    from importlib.metadata import version

    return folder / f"num2words-{version('num2words')}-{lang}.json"


def _read_cache(path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return {int(k): v for k, v in json.load(f).items()}
    except (OSError, ValueError, AttributeError):  # missing or damaged: start afresh
        return {}


def write_cache(path, words) -> None:
    """Write atomically (temp file + rename), so readers never see half a file."""
    try:
        atomic_write(path, json.dumps({str(k): v for k, v in sorted(words.items())}, ensure_ascii=False))
    except OSError:  # read-only home, full disk...: the cache is only an optimisation
        pass


def fast_converter(lang, largest):
    """num2words' converter for ``lang``, sped up for numbers up to ``largest``.

    Most languages split a number with ``Num2Word_Base.splitnum``, which scans
    the converter's whole table of number words (up to 10^600) at every step
    and skips the entries larger than the number. A copy whose table stops at
    ``largest`` writes the very same words about ten times faster. Languages
    with their own algorithm, or where a spot check disagrees, get the
    converter unchanged.
    """
    import copy

    num2words = _num2words()
    conv = num2words.CONVERTER_CLASSES[lang]
    base = getattr(getattr(num2words, "base", None), "Num2Word_Base", None)
    cards = getattr(conv, "cards", None)
    if base is None or not isinstance(cards, dict) or type(conv).splitnum is not base.splitnum:
        return conv
    fast = copy.copy(conv)
    fast.cards = type(cards)((k, v) for k, v in cards.items() if k <= largest)
    try:
        probes = {0, 1, 7, 21, 97, 100, 101, 1000, 1001, largest // 3, largest}
        if all(fast.to_cardinal(n) == conv.to_cardinal(n) for n in probes if 0 <= n <= largest):
            return fast
    except Exception:  # fall back to the plain converter, whose errors are reported
        pass
    return conv


def words_for(numbers, lang) -> list:
    """``num2words`` of every number in ``lang``, cached in memory and on disk."""
    if lang not in _WORDS:
        path = _cache_file(lang)
        _WORDS[lang] = _read_cache(path) if path is not None else {}
    known = _WORDS[lang]
    missing = sorted({int(n) for n in numbers} - known.keys())
    if missing:
        convert = fast_converter(lang, missing[-1]).to_cardinal
        for n in missing:
            try:
                known[n] = convert(n)
            except Exception as err:  # NotImplementedError, OverflowError, ...
                raise ValueError(f"num2words cannot write {n} in lang={lang!r}: {err}") from err
        path = _cache_file(lang)
        if path is not None:
            on_disk = _read_cache(path)  # keep what other processes added meanwhile
            on_disk.update(known)
            known.update(on_disk)
            write_cache(path, known)
    return [known[int(n)] for n in numbers]


def number_words(number, lang="fr") -> str:
    """``number`` written in words in ``lang``, e.g. ``number_words(97, "fr")`` ->
    ``'quatre-vingt-dix-sept'`` (``num2words``, cached)."""
    check_language(lang, supported_languages())
    return words_for([check_count("number", number, 0)], lang)[0]
