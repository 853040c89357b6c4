"""course_pkg.evaluation: exact match, corpus BLEU, accuracy by source length (framework-free)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_pkg.evaluation import accuracy_by_length, corpus_bleu, corpus_chrf, exact_match

ROOT = Path(__file__).resolve().parents[1]

PREDICTIONS = ["thirty-two", "one thousand and six", "seven", "nine hundred"]
REFERENCES = ["thirty-two", "one thousand and six", "eleven", "nine hundred and one"]
SOURCES = ["trente-deux", "mille six", "onze", "neuf cent un"]


def test_exact_match_compares_whole_strings():
    assert exact_match(PREDICTIONS, REFERENCES) == 0.5
    assert exact_match(REFERENCES, REFERENCES) == 1.0
    assert exact_match(["a b"], ["a  b"]) == 0.0  # character for character
    assert exact_match([], []) == 0.0
    assert exact_match(tuple(PREDICTIONS), iter(REFERENCES)) == 0.5  # any iterables of strings


def test_lengths_must_match():
    with pytest.raises(ValueError, match="predictions=4, references=3"):
        exact_match(PREDICTIONS, REFERENCES[:3])
    with pytest.raises(ValueError, match="sources=2"):
        accuracy_by_length(PREDICTIONS, REFERENCES, SOURCES[:2])
    with pytest.raises(ValueError, match="predictions=1, references=4"):
        corpus_bleu(PREDICTIONS[:1], REFERENCES)
    with pytest.raises(ValueError, match="predictions=1, references=4"):
        corpus_chrf(PREDICTIONS[:1], REFERENCES)


def test_inputs_must_be_strings():
    with pytest.raises(TypeError, match="list of strings"):
        exact_match("seven", "seven")
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        exact_match([[4, 5, 6]], ["seven"])


def test_corpus_bleu_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    score = corpus_bleu(PREDICTIONS, REFERENCES)
    assert isinstance(score, float) and 0.0 < score < 100.0
    assert score == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).score)
    assert corpus_bleu(REFERENCES, REFERENCES) == pytest.approx(100.0)
    assert corpus_bleu(["completely different words here"], ["the cat sat on the mat"]) == pytest.approx(0.0)


def test_corpus_chrf_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    score = corpus_chrf(PREDICTIONS, REFERENCES)
    assert isinstance(score, float) and 0.0 < score < 100.0
    assert score == pytest.approx(sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES]).score)
    assert corpus_chrf(REFERENCES, REFERENCES) == pytest.approx(100.0)
    assert corpus_chrf([], []) == 0.0
    # partial credit for a nearly right word, where BLEU gives none
    assert corpus_chrf(["chats"], ["chat"]) > 0.0 == corpus_bleu(["chats"], ["chat"])


def test_corpus_chrf_checks_its_inputs():
    with pytest.raises(TypeError, match="list of strings"):
        corpus_chrf("seven", "seven")
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        corpus_chrf([[4, 5, 6]], ["seven"])


def test_accuracy_by_length_groups_by_source_token_count():
    result = accuracy_by_length(PREDICTIONS, REFERENCES, SOURCES)
    assert result == {1: (2, 0.5), 2: (1, 1.0), 3: (1, 0.0)}
    assert list(result) == sorted(result)
    by_chars = accuracy_by_length(PREDICTIONS, REFERENCES, SOURCES, tokenizer=list)
    assert sum(count for count, _ in by_chars.values()) == len(SOURCES)
    assert by_chars[len("onze")] == (1, 0.0)


def test_accuracy_by_length_with_the_course_tokenizer():
    from course_pkg import data  # part of the package: a failing import fails the test, never skips it

    tokenize = data.Tokenizer("fr").tokenize
    result = accuracy_by_length(PREDICTIONS, REFERENCES, SOURCES, tokenizer=tokenize)
    assert sum(count for count, _ in result.values()) == len(SOURCES)


def test_import_is_framework_free():
    code = ("import sys, course_pkg.evaluation\n"
            "bad = [m for m in ('torch', 'tensorflow', 'keras', 'sacrebleu') if m in sys.modules]\n"
            "print('LOADED:', bad)\n"
            "sys.exit(1 if bad else 0)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
