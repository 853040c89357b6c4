"""course_pkg.data.tatoeba: the checked download and the reading of Tatoeba's pairs, offline.

No test reaches the network: the downloads read ``file://`` URLs of zips written here, and the
offline case asks a port of this machine where nothing listens.
"""

from __future__ import annotations

import hashlib
import http.client
import zipfile

import pytest

from course_pkg.common.files import cache_folder
from course_pkg.data import tatoeba

LINES = [
    "Go.\tVa !",
    "Hi.\tSalut !\tCC-BY 2.0 (France) Attribution: tatoeba.org",  # a third column: ignored
    "Where is the station?\tOù est la gare\u202f?",  # French typography's narrow space
    "Hi.\tSalut !",  # the same pair again: kept once
    "",
    "I'm cold.\tJ'ai\xa0froid.",
]


def write_zip(path, lines=LINES, member="fra-eng/fra.txt"):
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr(member, "\n".join(lines) + "\n")
    return path


def test_pairs_are_french_to_english_normalised_and_unique(tmp_path):
    pairs = tatoeba.load_pairs(write_zip(tmp_path / "fra-eng.zip"))
    assert pairs == [("Va !", "Go."), ("Salut !", "Hi."), ("Où est la gare ?", "Where is the station?"),
                     ("J'ai froid.", "I'm cold.")]


def test_held_out_sentences_are_dropped_on_either_side_up_to_case_punctuation_and_apostrophes(tmp_path):
    archive = write_zip(tmp_path / "fra-eng.zip")
    held_out = [("où est la gare ?", "Another English sentence."), ("Une autre phrase.", "go!")]
    assert tatoeba.load_pairs(archive, exclude=held_out) == [("Salut !", "Hi."), ("J'ai froid.", "I'm cold.")]
    curly = [("J’ai froid !", "Something else.")]  # a curly apostrophe, another final mark
    assert ("J'ai froid.", "I'm cold.") not in tatoeba.load_pairs(archive, exclude=curly)
    paraphrase = [("Il fait froid.", "I am cold.")]  # other words: another sentence, kept
    assert ("J'ai froid.", "I'm cold.") in tatoeba.load_pairs(archive, exclude=paraphrase)
    assert tatoeba.load_pairs(archive, max_pairs=2) == [("Va !", "Go."), ("Salut !", "Hi.")]


def test_a_line_without_a_tab_or_a_zip_without_fra_txt_is_named(tmp_path):
    with pytest.raises(ValueError, match="line 2 has no tab"):
        tatoeba.load_pairs(write_zip(tmp_path / "a.zip", ["Go.\tVa !", "Hi. Salut !"]))
    with pytest.raises(ValueError, match="holds no fra.txt"):
        tatoeba.load_pairs(write_zip(tmp_path / "b.zip", member="deu.txt"))


def test_download_checks_the_pinned_sha1_and_keeps_the_file(tmp_path):
    source = write_zip(tmp_path / "fra-eng.zip")
    sha1 = hashlib.sha1(source.read_bytes()).hexdigest()
    folder = tmp_path / "cache"
    got = tatoeba.download(folder, url=source.as_uri(), sha1=sha1)
    assert got == folder / "fra-eng.zip" and got.read_bytes() == source.read_bytes()
    source.unlink()  # a second call finds the checked file and downloads nothing
    assert tatoeba.download(folder, url=source.as_uri(), sha1=sha1) == got
    assert [p.name for p in folder.iterdir()] == ["fra-eng.zip"]


def test_a_kept_file_with_another_sha1_is_downloaded_again(tmp_path):
    source = write_zip(tmp_path / "fra-eng.zip")
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "fra-eng.zip").write_bytes(b"an older or damaged file")
    got = tatoeba.download(folder, url=source.as_uri(), sha1=hashlib.sha1(source.read_bytes()).hexdigest())
    assert got.read_bytes() == source.read_bytes()


def test_a_connection_lost_in_the_middle_is_an_oserror_and_nothing_is_kept(tmp_path, monkeypatch):
    class Broken:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self, size):
            raise http.client.IncompleteRead(b"partial")

    monkeypatch.setattr(tatoeba.urllib.request, "urlopen", lambda url, timeout: Broken())
    with pytest.raises(ConnectionError, match="broke off"):
        tatoeba.download(tmp_path, url="https://example.invalid/fra-eng.zip")
    assert list(tmp_path.iterdir()) == []


def test_a_file_with_another_sha1_is_refused_and_nothing_is_kept(tmp_path):
    source = write_zip(tmp_path / "fra-eng.zip")
    folder = tmp_path / "cache"
    with pytest.raises(ValueError, match="not the pinned 0{40}"):
        tatoeba.download(folder, url=source.as_uri(), sha1="0" * 40)
    assert list(folder.iterdir()) == []


def test_offline_is_an_oserror_that_a_cell_can_skip_on(tmp_path):
    with pytest.raises(OSError):
        tatoeba.download(tmp_path, url="http://127.0.0.1:9/fra-eng.zip", timeout=5)
    assert list(tmp_path.iterdir()) == []


def test_the_default_folder_is_the_package_cache(monkeypatch, tmp_path):
    source = write_zip(tmp_path / "fra-eng.zip")
    sha1 = hashlib.sha1(source.read_bytes()).hexdigest()
    monkeypatch.setenv("COURSE_PKG_CACHE_DIR", str(tmp_path / "cache"))
    assert tatoeba.download(url=source.as_uri(), sha1=sha1) == tmp_path / "cache" / "fra-eng.zip"
    monkeypatch.delenv("COURSE_PKG_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder() == tmp_path / "xdg" / "course_pkg"
    monkeypatch.setenv("COURSE_PKG_CACHE_DIR", "")  # the disk cache disabled: a temporary folder
    got = tatoeba.download(url=source.as_uri(), sha1=sha1)
    assert got.read_bytes() == source.read_bytes() and tmp_path not in got.parents
