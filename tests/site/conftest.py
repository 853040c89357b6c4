"""Fixtures of the site tests: the built book over HTTP, a headless Chromium, a fixture book.

Run by ``.ci/build-book`` after ``jupyter-book build`` (``COURSE_SITE_TESTS=1``,
see ``tests/conftest.py``). The pages are served over http://127.0.0.1 (the
tabs' choice lives in localStorage, which file:// pages do not share).
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from pathlib import Path

import pytest
import sitelib

HTML = sitelib.HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output readable
        pass


@pytest.fixture(scope="session")
def serve():
    """``serve(folder)`` -> base URL of a static server of ``folder`` on 127.0.0.1 (a free port)."""
    servers = []

    def start(folder):
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def site(serve):
    """Base URL of the built book, ``_build/html``."""
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} has no index.html: build the book first (bash .ci/build-book)")
    shutil.rmtree(sitelib.SCREENSHOTS, ignore_errors=True)
    return serve(HTML)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session, with a fresh profile."""
    for path in (sitelib.CHROMIUM, sitelib.CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} is missing: apt-get install chromium chromium-driver "
                        "(.ci/build-book does)")
    profile = tempfile.mkdtemp(prefix="course-chromium-")
    driver = sitelib.make_driver(profile)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser):
    """The browser, its console log drained, so that a test sees only its own errors."""
    browser.get_log("browser")
    return browser


@pytest.fixture
def fresh(browser):
    """Forget the reader's framework choice: returns ``reset(base_url)``."""
    def reset(base_url):
        sitelib.open_page(browser, base_url + "genindex.html")
        browser.execute_script("window.localStorage.clear();")
    return reset


# ------------------------------------------------------------- the fixture book
def _png(width=24, height=16, rgb=(10, 125, 145)):
    """A small solid PNG, written by hand (no imaging library needed)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(source, tag=None, text=None, png=False):
    outputs = []
    if text is not None:
        outputs.append({"output_type": "stream", "name": "stdout", "text": text})
    if png:
        outputs.append({"output_type": "display_data", "metadata": {},
                        "data": {"image/png": base64.b64encode(_png()).decode("ascii"),
                                 "text/plain": "<Figure>"}})
    return {"cell_type": "code", "execution_count": 1, "metadata": {"tags": [tag] if tag else []},
            "outputs": outputs, "source": source}


def _notebook(cells):
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"},
                         "language_info": {"name": "python"}}}


DESIGN_TAB_SET = """\
::::{tab-set}
:sync-group: framework

:::{tab-item} TensorFlow
:sync: tensorflow
TensorFlow text.
:::

:::{tab-item} PyTorch
:sync: pytorch
PyTorch text.
:::
::::
"""

FIXTURE_NOTEBOOKS = {
    # Expected tab sets: [tf, pt], [pt, tf], [tf], [tf, pt].
    "book/one": [
        _md("# Fixture one\n\nInline math $a^2 + b^2 = c^2$ and framework tabs.\n"),
        _code("x = 1\nprint('neutral')", text="neutral\n"),
        _code("print('tf first')", "tensorflow", "tf first\n"),
        _code("print('pt first')", "pytorch", "pt first\n"),
        _md("A markdown cell ends a tab set.\n"),
        _code("print('pt second')", "pytorch", "pt second\n"),
        _code("print('tf second')", "tensorflow", "tf second\n"),
        _code("print('tf alone')", "tensorflow", "tf alone\n"),
        _md("A sphinx-design tab-set of the same sync group:\n\n" + DESIGN_TAB_SET),
        _code("show_tf_plot()", "tensorflow", png=True),
        _code("show_torch_plot()", "pytorch", png=True),
    ],
    "book/two": [
        _md("# Fixture two\n"),
        _code("print('tf')", "tensorflow", "tf\n"),
        _code("print('pt')", "pytorch", "pt\n"),
    ],
}


@pytest.fixture(scope="session")
def fixture_book(tmp_path_factory):
    """A two-notebook Jupyter Book built with the real _config.yml and book/_static.

    Its notebooks have tagged cells in every arrangement the tab script
    handles, so the tab mechanism is tested even while every chapter is a stub.
    Returns the source folder; the HTML is in its ``_build/html``.
    """
    root = tmp_path_factory.mktemp("fixture-book")
    shutil.copy(sitelib.ROOT / "_config.yml", root / "_config.yml")
    shutil.copytree(sitelib.ROOT / "book" / "_static", root / "book" / "_static")
    shutil.copy(sitelib.ROOT / "book" / "references.bib", root / "book" / "references.bib")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/one\nchapters:\n  - file: book/two\n", encoding="utf-8")
    for docname, cells in FIXTURE_NOTEBOOKS.items():
        (root / f"{docname}.ipynb").write_text(json.dumps(_notebook(cells), indent=1),
                                               encoding="utf-8")
    jupyter_book = shutil.which("jupyter-book") or str(Path(sys.executable).with_name("jupyter-book"))
    result = subprocess.run([jupyter_book, "build", str(root), "-W", "-n", "--keep-going", "--all"],
                            cwd=root, capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, (
        f"fixture book build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return root


@pytest.fixture(scope="session")
def fixture_site(fixture_book, serve):
    """Base URL of the fixture book's HTML."""
    return serve(fixture_book / "_build" / "html")
