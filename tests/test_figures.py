"""The book's drawn figures (``book/figures``): reproducible from their script, each embedded
with alt text, none unused. (That they load in a browser: ``tests/site``.)"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
FIGURES = BOOK / "figures"
SUFFIXES = (".svg", ".png", ".jpg", ".jpeg", ".gif")
# A {figure} directive (its options up to the blank line) or ![alt](path).
DIRECTIVE = re.compile(r"^(```+|:::+)\s*\{figure\}\s+(\S+)\s*\n((?::[\w-]+:.*\n)*)", re.M)
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)")


def _make_figures():
    spec = importlib.util.spec_from_file_location("make_figures", FIGURES / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages():
    """``(page name, markdown)`` of every markdown cell of the chapters and every .md page."""
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                source = cell["source"]
                yield path.stem, "".join(source) if isinstance(source, list) else source
    for path in sorted(BOOK.glob("*.md")):
        yield path.stem, path.read_text(encoding="utf-8")


def embedded():
    """``[(page, file name, alt text)]`` for every figure of book/figures the book embeds."""
    found = []
    for page, text in _pages():
        for _, target, options in DIRECTIVE.findall(text):
            alt = re.search(r"^:alt:\s*(.*)$", options, re.M)
            found.append((page, target, alt.group(1).strip() if alt else ""))
        for alt, target in IMAGE.findall(text):
            found.append((page, target, alt.strip()))
    return [(page, Path(target).name, alt) for page, target, alt in found
            if Path(target).parent.name == "figures"]


def test_parser_sees_directives_and_images():
    text = "```{figure} figures/a.svg\n:alt: An a.\n:width: 80%\n\nCaption.\n```\n![A b.](figures/b.svg)\n"
    found = [(t, o) for _, t, o in DIRECTIVE.findall(text)]
    assert found == [("figures/a.svg", ":alt: An a.\n:width: 80%\n")]
    assert IMAGE.findall(text) == [("A b.", "figures/b.svg")]


def test_the_script_reproduces_the_committed_figures(tmp_path):
    """Deterministic output (no date, fixed ids): regenerated, every figure is byte for byte the file."""
    module = _make_figures()
    written = module.main(tmp_path)
    committed = sorted(p.name for p in FIGURES.iterdir() if p.suffix in SUFFIXES)
    assert sorted(p.name for p in written) == committed == sorted(module.FIGURES)
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert "<dc:date>" not in text
        assert text == (FIGURES / path.name).read_text(encoding="utf-8"), \
            f"{path.name} is stale: run python book/figures/make_figures.py"


def test_every_figure_is_embedded_with_its_alt_text():
    module = _make_figures()
    uses = embedded()
    for page, name, alt in uses:
        assert (FIGURES / name).is_file(), f"{page}: figures/{name} does not exist"
        assert len(alt) >= 40, f"{page}: figures/{name} has no descriptive alt text: {alt!r}"
    for name, (chapter, alt) in module.FIGURES.items():
        pages = {page: a for page, n, a in uses if n == name}
        assert chapter in pages, f"{name} is not shown in {chapter}"
        assert pages[chapter] == alt, f"{chapter}: the alt text of {name} differs from make_figures.FIGURES"


@pytest.mark.parametrize("name", sorted(p.name for p in FIGURES.iterdir() if p.suffix in SUFFIXES))
def test_every_file_in_figures_is_used(name):
    assert name in {n for _, n, _ in embedded()}, f"book/figures/{name} is used nowhere"
