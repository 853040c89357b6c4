"""Chapter 7's optional online cells (section 7.9, "More data, online"), run offline.

nbval skips these cells (they need the network and a GPU), so nothing else runs their code. Here
they run from the notebook's own source against stand-ins: the chapter's earlier names on a few
everyday pairs and a tiny model, ``tatoeba.download`` returning a zip written here (or failing
as offline), and the cell's GPU check answered by the test. Each framework's training cell runs
for real, one short epoch, and the scores cell reads what it left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import time
import urllib.error
import zipfile
from pathlib import Path

import pytest

from course_pkg import data, pretrained
from course_pkg.data import tatoeba
from course_pkg.evaluation import corpus_bleu, corpus_chrf

NOTEBOOK = Path(__file__).resolve().parent.parent / "book" / "07_tokenization.ipynb"
GPU_CHECKS = {"tensorflow": 'not tf.config.list_physical_devices("GPU")',
              "torch": "not torch.cuda.is_available()"}
CELL_OF = {"tensorflow": "c07-more-tf", "torch": "c07-more-pt"}


def cell_source(cell_id):
    cells = {c.get("id"): c for c in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]}
    return "".join(cells[cell_id]["source"])


def chapter_names(fw):
    """The names the online cells take from the chapter's earlier cells, on a few pairs."""
    everyday = data.make_everyday_corpus("fr", "en")
    corpus = dataclasses.replace(everyday, train=everyday.train[:120], valid=everyday.valid[:16],
                                 test=everyday.test[:121])  # the scores cell shows sentence 120
    record = pretrained.everyday_record()
    config = {**record["model"], "num_layers": 1, "d_model": 16, "num_heads": 2, "dff": 32}
    sources, references = [fr for fr, _ in corpus.test], [en for _, en in corpus.test]
    names = dict(corpus=corpus, RECIPE=record["recipe"], CONFIG=config, data=data, pretrained=pretrained,
                 time=time, test_sources=sources, test_references=references, corpus_bleu=corpus_bleu,
                 corpus_chrf=corpus_chrf, copying=(corpus_bleu(sources, references), 0.0),
                 translators={"TensorFlow": dict(hyps=sources, bleu=0.0, chrf=0.0),
                              "PyTorch": dict(hyps=sources, bleu=0.0, chrf=0.0)})
    if fw.name == "torch":
        names.update(torch=pytest.importorskip("torch"), cpt=fw.cp)
    else:
        names.update(keras=fw.keras, ctf=fw.cp)
    return names


def run_cells(fw, names, gpu, epochs=1):
    """Run the data cell, ``fw``'s training cell and the scores cell; what each printed."""
    sources = [cell_source("c07-more-data"), cell_source(CELL_OF[fw.name]), cell_source("c07-more-scores")]
    assert "MORE_EPOCHS = 8" in sources[0] and GPU_CHECKS[fw.name] in sources[1]
    sources[0] = sources[0].replace("MORE_EPOCHS = 8", f"MORE_EPOCHS = {epochs}")
    sources[1] = sources[1].replace(GPU_CHECKS[fw.name], str(not gpu))
    printed = []
    for source in sources:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(source, "cell", "exec"), names)
        printed.append(out.getvalue())
    return printed


def fake_tatoeba(tmp_path, names):
    """A zip of 40 everyday training pairs, two pairs that repeat held-out sentences, one long one."""
    corpus = names["corpus"]
    pairs = corpus.train[:40] + [(corpus.test[0][0], "Another sentence."),
                                 ("Autre chose.", corpus.valid[3][1].upper())]
    pairs.append(("mot " * 80, "word " * 80))
    path = tmp_path / "fra-eng.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr("fra-eng/fra.txt", "".join(f"{en}\t{fr}\n" for fr, en in pairs))
    return path


def test_offline_every_cell_prints_one_skip_line(fw, monkeypatch):
    def offline():
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(tatoeba, "download", offline)
    printed = run_cells(fw, chapter_names(fw), gpu=True)
    assert printed == ["skipped: no Tatoeba pairs, this section needs a network "
                       "(URLError: <urlopen error Name or service not known>)\n",
                       "skipped: no Tatoeba pairs (the cell above says why)\n",
                       "skipped: no model trained on Tatoeba's pairs (the cells above say why)\n"]


def test_online_without_a_gpu_the_data_is_ready_and_training_skips(fw, monkeypatch, tmp_path):
    names = chapter_names(fw)
    archive = fake_tatoeba(tmp_path, names)
    monkeypatch.setattr(tatoeba, "download", lambda: archive)
    printed = run_cells(fw, names, gpu=False)
    assert printed[0].startswith("Tatoeba: 41 pairs (2 removed for sharing a sentence with the validation "
                                 "or test split), 40 of them within ")
    assert ("training pairs: 160 (the everyday corpus's 120 among them); 1 epochs of 64-pair batches: "
            "3 steps") in printed[0]
    assert printed[1].startswith("skipped: no GPU (on Colab: Runtime > Change runtime type > a GPU)")
    assert names["more"]["config"]["input_vocab_size"] == len(names["more"]["vocab"])


def test_with_a_gpu_each_framework_trains_and_the_scores_cell_compares(fw, monkeypatch, tmp_path):
    names = chapter_names(fw)
    archive = fake_tatoeba(tmp_path, names)
    monkeypatch.setattr(tatoeba, "download", lambda: archive)
    printed = run_cells(fw, names, gpu=True)
    name = {"torch": "PyTorch", "tensorflow": "TensorFlow"}[fw.name]
    assert list(names["more_runs"]) == [name]
    assert len(names["more_runs"][name]["hyps"]) == len(names["test_sources"])
    assert "3 steps in " in printed[1]
    assert printed[2].startswith(f"{name}, on the 121 everyday test pairs: BLEU ")
    assert printed[2].count("\n  reference:      ") == 3
