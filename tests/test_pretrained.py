"""course_pkg.pretrained: chapter 7's shipped French -> English translator."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import get_adapter

from course_pkg import data, interop, pretrained

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def record():
    return pretrained.everyday_record()


@pytest.fixture(scope="module")
def vocab():
    return pretrained.everyday_vocab()


def test_it_imports_no_framework_until_it_is_handed_one():
    code = ("import sys\nfrom course_pkg import data, pretrained\n"
            "pretrained.everyday_vocab(); pretrained.everyday_record(); pretrained.everyday_weights()\n"
            "print([m for m in ('torch', 'tensorflow', 'keras') if m in sys.modules])")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"


def test_the_record_describes_the_recipe_and_the_model(record):
    recipe, config = record["recipe"], record["model"]
    assert recipe["tokens"] == "joint"
    assert config["input_vocab_size"] == config["target_vocab_size"] == recipe["vocab_size"]
    for key in ("num_layers", "d_model", "num_heads", "dff"):
        assert config[key] == recipe[key]
    history = record["history"]
    assert history["step"][0] == 0 and history["step"][-1] == record["steps"]
    assert len(history["step"]) == len(history["loss"]) == len(history["val_loss"])
    assert len(history["bleu_step"]) == len(history["val_bleu"]) == len(history["val_chrf"]) >= 2
    test = record["test"]
    for key in ("greedy_float32", "greedy_float16_weights"):  # what the script measured
        assert test[key]["bleu"] > test["copy"]["bleu"] + 5
        assert test[key]["chrf"] > test["copy"]["chrf"] + 5


def test_the_bpe_is_learnt_again_from_the_training_split(record, vocab):
    corpus = data.make_everyday_corpus("fr", "en")
    learnt = pretrained.everyday_bpe_vocab(corpus.train, record["recipe"]["vocab_size"])
    assert learnt.itos == vocab.itos
    assert len(vocab) == record["model"]["input_vocab_size"]
    assert vocab.itos[:4] == list(data.SPECIAL_TOKENS)
    text = "Où est la gare ? Je t'attends depuis 10 minutes."
    assert vocab.tokenizer.detokenize(vocab.tokenizer.tokenize(text)) == text


def test_the_weights_are_small_float16_and_the_longest_sentence_fits(record, vocab):
    assert pretrained.WEIGHTS.stat().st_size < 4_000_000
    with np.load(pretrained.WEIGHTS) as stored:
        assert {stored[name].dtype for name in stored.files} == {np.dtype(np.float16)}
    weights = pretrained.everyday_weights()
    assert {w.dtype for w in weights.values()} == {np.dtype(np.float32)}
    assert sum(w.size for w in weights.values()) == record["parameters"]
    assert all(np.isfinite(w).all() for w in weights.values())
    corpus = data.make_everyday_corpus("fr", "en")
    longest = max(max(len(vocab.encode(s)), len(vocab.encode(t)) + 1)
                  for s, t in corpus.train + corpus.valid + corpus.test)
    assert longest <= record["model"]["max_len"]


def test_the_package_data_ships_the_files():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1]
    patterns = ast.literal_eval(re.search(r"^course_pkg\s*=\s*(\[.*?\])", section, re.M).group(1))
    for path in (pretrained.WEIGHTS, pretrained.RECORD, pretrained.BPE_VOCAB, pretrained.BPE_MERGES):
        relative = path.relative_to(ROOT / "course_pkg")
        assert any(relative.match(p) for p in patterns), relative


@pytest.mark.parametrize("name", ["tensorflow", "torch"])
def test_the_file_names_and_shapes_are_those_of_the_recipe_model(name, record):
    fw = get_adapter(name)
    model = pretrained.everyday_translator(fw.cp)
    expected = interop.get_weights(model)
    weights = pretrained.everyday_weights()
    assert {k: v.shape for k, v in weights.items()} == {k: v.shape for k, v in expected.items()}
    for key, value in weights.items():
        np.testing.assert_array_equal(expected[key], value)


def test_both_frameworks_compute_the_same_logits_and_translations(vocab):
    corpus = data.make_everyday_corpus("fr", "en")
    pairs = corpus.test[:16]
    src, tgt_in, _ = data.encode_pairs(pairs, vocab, vocab)
    logits, translations = {}, {}
    for name in ("tensorflow", "torch"):
        fw = get_adapter(name)
        model = pretrained.everyday_translator(fw.cp)
        logits[name] = fw.call(model, fw.tensor(src), fw.tensor(tgt_in))
        translations[name] = fw.cp.translate(model, [s for s, _ in pairs], vocab, vocab)
    assert logits["torch"].shape == (len(pairs), tgt_in.shape[1], len(vocab))
    np.testing.assert_allclose(logits["tensorflow"], logits["torch"], atol=1e-3, rtol=0)
    assert translations["tensorflow"] == translations["torch"]
    assert sum(bool(t.strip()) for t in translations["torch"]) == len(pairs)  # it says something
