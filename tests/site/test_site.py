"""The built book, checked in headless Chromium as a reader would see it.

Every page of ``_toc.yml`` loads, renders its math and images, and (for a
chapter) launches the right notebook on Colab; the "TensorFlow | PyTorch"
tabs are built and the reader's choice follows them from page to page. In a
1280 px window no code block scrolls sideways, no figure is shrunk far below
its size, and the page's contents are a button away. What each page must
show is read from its source (see ``sitelib``), so the tests hold for stub
chapters and for finished ones. A screenshot of every page is written to
``_build/screenshots/<page>.png``.

Run by ``.ci/build-book`` after the build:
``COURSE_SITE_TESTS=1 python -m pytest tests/site -p no:cacheprovider``.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
import sitelib

DOCNAMES = sitelib.toc_docnames()
CHAPTERS = [d for d in DOCNAMES if sitelib.source_of(d).suffix == ".ipynb"]
TABBED_CHAPTERS = [d for d in CHAPTERS if not sitelib.changed_since_build(d)
                   and sitelib.framework_groups(sitelib.source_of(d))]


def stem(docname):
    return Path(docname).name


def source(docname):
    """The page's source, whose content the page must show (skip if saved after the build)."""
    if sitelib.changed_since_build(docname):
        pytest.skip(f"{docname} was saved after the build read it: build again to check it")
    return sitelib.source_of(docname)


def test_toc_lists_every_chapter_notebook_in_order():
    notebooks = sorted(p.stem for p in sitelib.source_of(CHAPTERS[0]).parent.glob("[0-9][0-9]_*.ipynb"))
    assert [stem(d) for d in CHAPTERS] == notebooks
    assert [stem(d)[:3] for d in CHAPTERS] == ["01_", "02_", "03_", "04_", "05_", "06_", "07_", "08_", "09_",
                                               "10_"]


# ------------------------------------------------------------------ every page
@pytest.mark.parametrize("docname", DOCNAMES, ids=stem)
def test_page_loads(site, page, docname):
    url = site + docname + ".html"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
    sitelib.open_page(page, url)
    heading = page.execute_script(
        "const h = document.querySelector('main h1');"
        "return h ? h.textContent.replace(/[#\\u00b6]\\s*$/, '').trim() : null;")
    assert heading, f"{docname}: no h1"
    assert page.title.startswith(heading), (page.title, heading)
    if not sitelib.changed_since_build(docname):
        expected = sitelib.first_heading(sitelib.source_of(docname))
        assert expected is None or heading == expected
    # framework-tabs.js ran (it marks every page with the reader's framework)
    assert sitelib.framework(page) in sitelib.FRAMEWORKS, "framework-tabs.js did not run"
    if sitelib.math_state(page)["count"]:
        sitelib.wait_math(page)
    sitelib.screenshot(page, sitelib.SCREENSHOTS / f"{stem(docname)}.png")
    assert sitelib.console_errors(page) == []


@pytest.mark.parametrize("docname", DOCNAMES, ids=stem)
def test_math_is_rendered(site, page, docname):
    path = source(docname)
    sitelib.open_page(page, site + docname + ".html")
    count = sitelib.math_state(page)["count"]
    if sitelib.has_math(path):
        assert count, f"{path.name} has math but the page has no .math element"
    if not count:
        pytest.skip("no math on this page")
    state = sitelib.wait_math(page)
    assert state["errors"] == 0, f"MathJax reported {state['errors']} TeX error(s)"


def test_intro_has_rendered_math(site, page):
    """The math check is never vacuous: the intro always has the attention formula."""
    intro = DOCNAMES[0]
    assert sitelib.has_math(sitelib.source_of(intro))
    sitelib.open_page(page, site + intro + ".html")
    state = sitelib.wait_math(page)
    assert state["containers"] >= 1 and state["errors"] == 0
    assert page.execute_script(
        "return document.querySelector('div.math mjx-container').getBoundingClientRect().height") > 20


@pytest.mark.parametrize("docname", DOCNAMES, ids=stem)
def test_images_load(site, page, docname):
    expected = sitelib.image_outputs(source(docname))
    sitelib.open_page(page, site + docname + ".html")
    images = page.find_elements("css selector", "main img")
    outputs = page.find_elements("css selector", "main .cell_output img")
    assert len(outputs) >= expected, f"{expected} image outputs stored, {len(outputs)} on the page"
    if not images:
        pytest.skip("no image on this page")
    for image in images:
        page.execute_script("arguments[0].scrollIntoView({block: 'center'});", image)
        sitelib.wait_for(lambda: page.execute_script("return arguments[0].complete;", image),
                         message=f"image {image.get_attribute('src')}")
        assert page.execute_script("return arguments[0].naturalWidth;", image) > 0, \
            f"image did not load: {image.get_attribute('src')}"


def _figure_images(page):
    """``[{src, alt, width, caption}]`` of the images of ``book/figures`` on the page."""
    return page.execute_script(
        "return Array.from(document.querySelectorAll('main img')).map(img => {"
        "  img.scrollIntoView({block: 'center'});"
        "  const fig = img.closest('figure'), cap = fig && fig.querySelector('figcaption');"
        "  return {src: img.getAttribute('src') || '', alt: (img.getAttribute('alt') || '').trim(),"
        "          complete: img.complete, width: img.naturalWidth,"
        "          caption: cap ? cap.textContent.trim() : ''};"
        "}).filter(i => arguments[0].includes(i.src.split('/').pop().split('?')[0]));",
        sitelib.figure_files())


@pytest.mark.parametrize("docname", DOCNAMES, ids=stem)
def test_figures_load_with_alt_text(site, page, docname):
    """Every drawn figure (book/figures) the page embeds loads, with alt text and a caption."""
    expected = sitelib.figure_refs(source(docname))
    sitelib.open_page(page, site + docname + ".html")
    if not expected:
        assert _figure_images(page) == []
        pytest.skip("no figure of book/figures on this page")
    sitelib.wait_for(lambda: all(i["complete"] for i in _figure_images(page)),
                     message=f"the figures of {docname}")
    images = _figure_images(page)
    assert sorted(i["src"].split("/")[-1] for i in images) == sorted(expected)
    for image in images:
        assert image["width"] > 0, f"figure did not load: {image['src']}"
        name = image["src"].split("/")[-1]
        assert image["alt"] and name not in image["alt"] and len(image["alt"]) >= 40, \
            f"{name}: alt text missing or not a description: {image['alt']!r}"
        assert image["caption"], f"{name}: no caption"


def test_every_figure_is_used(site, page):
    """Each file of book/figures is shown (and loads) on at least one page of the book."""
    files = sitelib.figure_files()
    assert files, "book/figures has no figure"
    shown = set()
    for docname in DOCNAMES:
        sitelib.open_page(page, site + docname + ".html")
        shown |= {i["src"].split("/")[-1] for i in _figure_images(page) if i["width"] > 0}
    assert sorted(set(files) - shown) == [], "figures in book/figures that no page shows"


# ------------------------------------------------ reading at 1280 px: code and figures
# Matplotlib writes text at 10 pt, 13.9 px in the book's 100 dpi figures; drawn at 60 % of
# its width a figure's labels are 8.3 px high, about the smallest a label stays legible at.
MIN_FIGURE_SCALE = 0.6


def _as_read(page, url, framework):
    """Open ``url`` at the test window's width, showing ``framework``'s tabs and every fold."""
    if page.get_window_size()["width"] != sitelib.WINDOW[0]:
        page.set_window_size(*sitelib.WINDOW)
    sitelib.open_page(page, url)
    sitelib.show_all(page, framework)


@pytest.mark.parametrize("docname", DOCNAMES, ids=stem)
def test_code_fits_the_column(site, page, docname, fresh):
    """No code, output or listing block scrolls sideways at 1280 px: each fits its box,
    the longest lines wrapped. Checked with each framework's tabs shown, folds opened."""
    fresh(site)
    shown, wide, count = set(), {}, 0
    for framework in sitelib.FRAMEWORKS:  # PyTorch last: the reader's default choice stays
        _as_read(page, site + docname + ".html", framework)
        blocks = sitelib.code_blocks(page)
        count = len(blocks)
        for block in blocks:
            if block["shown"]:
                shown.add(block["index"])
                if block["excess"] > 1:  # px: scrollWidth vs clientWidth, rounding aside
                    wide.setdefault(block["index"], block)
    if not count:
        pytest.skip("no code block on this page")
    assert shown == set(range(count)), (
        f"{count - len(shown)} of {count} code blocks of {docname} are shown with neither framework's "
        "tabs: the check cannot see them")
    assert not wide, (
        f"{len(wide)} of {count} code/output blocks of {docname} scroll sideways at "
        f"{sitelib.WINDOW[0]} px (first lines):\n"
        + "\n".join(f"  {b['line']!r}: {b['excess']} px too wide for its {b['width']} px box"
                    for _, b in sorted(wide.items())))


JS_CODE_COLUMNS = """
const pre = document.querySelector('.bd-article div.cell_input pre');
if (!pre) return null;
const probe = document.createElement('span');
probe.style.whiteSpace = 'pre';
probe.textContent = '0'.repeat(100);
pre.appendChild(probe);
const ch = probe.getBoundingClientRect().width / 100;
probe.remove();
const style = getComputedStyle(pre);
return (pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)) / ch;
"""


@pytest.mark.parametrize("docname", CHAPTERS, ids=stem)
def test_code_column_has_room(site, page, docname):
    """At 1280 px a code cell holds 100 columns: the course's code (110 at most) rarely wraps."""
    _as_read(page, site + docname + ".html", "pytorch")
    columns = page.execute_script(JS_CODE_COLUMNS)
    if columns is None:
        pytest.skip("no code cell on this page")
    assert columns >= 100, f"a code cell of {docname} holds {columns:.0f} columns at {sitelib.WINDOW[0]} px"


JS_CONTENTS = """
const nav = document.querySelector('#pst-page-toc-nav');
const drawer = document.querySelector('#pst-secondary-sidebar-modal');
const r = nav && nav.getBoundingClientRect();
return {links: nav ? nav.querySelectorAll('a').length : 0, open: !!(drawer && drawer.open),
        in_drawer: !!(nav && drawer && drawer.contains(nav)),
        left: r && r.left, right: r && r.right, viewport: document.documentElement.clientWidth,
        sidebar_shown: document.querySelector('#pst-secondary-sidebar').getClientRects().length > 0,
        hash: location.hash};
"""


@pytest.mark.parametrize("docname", CHAPTERS, ids=stem)
def test_contents_at_hand(site, page, docname):
    """At 1280 px the article has the room of the contents sidebar: the list button of the
    article's header opens the page's contents in a drawer; choosing a section closes it."""
    def contents():
        return page.execute_script(JS_CONTENTS)

    _as_read(page, site + docname + ".html", "pytorch")
    if not contents()["links"]:
        pytest.skip("no sections on this page")
    assert not contents()["sidebar_shown"], "the contents sidebar takes the article's room at 1280 px"
    button = page.find_element("css selector", ".bd-header-article .secondary-toggle")
    assert button.is_displayed(), "no button for the page's contents"
    button.click()
    state = sitelib.wait_for(lambda: (lambda s: s["open"] and s["in_drawer"] and s)(contents()),
                             message="the contents drawer to open")
    assert 0 <= state["left"] and state["left"] + 200 <= state["right"] <= state["viewport"], state
    link = page.find_elements("css selector", "#pst-secondary-sidebar-modal #pst-page-toc-nav a")[1]
    target = link.get_attribute("href").split("#")[-1]
    link.click()
    state = sitelib.wait_for(lambda: (lambda s: not s["open"] and s)(contents()),
                             message="the contents drawer to close")
    assert state["hash"] == "#" + target
    assert sitelib.console_errors(page) == []


@pytest.mark.parametrize("docname", DOCNAMES, ids=stem)
def test_figures_are_not_shrunk(site, page, docname, fresh):
    """At 1280 px every image (figure of book/figures, plot output) is drawn at no less than
    MIN_FIGURE_SCALE of its natural width: the column has room for it, or the notebook must
    draw it narrower (a smaller figsize, panels stacked), so that its labels stay legible."""
    fresh(site)
    shown, shrunk, count = set(), {}, 0
    for framework in sitelib.FRAMEWORKS:
        _as_read(page, site + docname + ".html", framework)
        sitelib.wait_for(lambda: all(i["complete"] for i in sitelib.image_sizes(page) if i["shown"]),
                         message=f"the images of {docname}")
        images = sitelib.image_sizes(page)
        count = len(images)
        for image in images:
            if image["shown"]:
                shown.add(image["index"])
                assert image["natural"] > 0, f"image did not load: {image['src']} ({image['where']})"
                if image["width"] < MIN_FIGURE_SCALE * image["natural"]:
                    shrunk.setdefault(image["index"], image)
    if not count:
        pytest.skip("no image on this page")
    assert shown == set(range(count)), (
        f"{count - len(shown)} of {count} images of {docname} are shown with neither framework's tabs")
    assert not shrunk, (
        f"{len(shrunk)} image(s) of {docname} drawn below {MIN_FIGURE_SCALE:.0%} of their width at "
        f"{sitelib.WINDOW[0]} px:\n"
        + "\n".join(f"  {i['src']} at {i['width']:.0f} of {i['natural']:.0f} px "
                    f"({i['width'] / i['natural']:.0%}): {i['where']}" for _, i in sorted(shrunk.items())))


# ---------------------------------------------------------------- chapter pages
@pytest.mark.parametrize("docname", CHAPTERS, ids=stem)
def test_colab_launch_link(site, page, docname):
    sitelib.open_page(page, site + docname + ".html")
    links = [a.get_attribute("href") for a in
             page.find_elements("css selector", "a[href^='https://colab.research.google.com']")]
    assert links == [sitelib.colab_url(docname)]


@pytest.mark.parametrize("docname", CHAPTERS, ids=stem)
def test_framework_tab_sets(site, page, docname, fresh):
    """A tab set for every run of adjacent tagged cells, showing the chosen framework only."""
    groups = sitelib.framework_groups(source(docname))
    fresh(site)
    sitelib.open_page(page, site + docname + ".html")
    sets = sitelib.tab_sets(page)
    assert [s["buttons"] for s in sets] == [sorted(g, key=sitelib.FRAMEWORKS.index) for g in groups]
    for tab_set, group in zip(sets, groups):
        assert tab_set["cells"] == len(group)
        if "pytorch" in group:  # the default choice
            assert tab_set["active"] == tab_set["visible"] == ["pytorch"]


# ------------------------------------------------------- the reader's choice
def test_choice_persists_across_pages(site, page, fresh):
    """Choose TensorFlow on the intro: the API page and every chapter follow, then back to PyTorch."""
    intro, api = DOCNAMES[0], "book/api"
    fresh(site)
    sitelib.open_page(page, site + intro + ".html")
    assert sitelib.framework(page) == "pytorch"  # the default
    assert set(sitelib.design_tabs_checked(page)) == {"pytorch"}
    sitelib.click_tab(page, "tensorflow")
    assert sitelib.framework(page) == "tensorflow"
    assert set(sitelib.design_tabs_checked(page)) == {"tensorflow"}

    sitelib.open_page(page, site + api + ".html")
    assert sitelib.framework(page) == "tensorflow"
    assert set(sitelib.design_tabs_checked(page)) == {"tensorflow"}
    for docname in CHAPTERS:
        sitelib.open_page(page, site + docname + ".html")
        assert sitelib.framework(page) == "tensorflow", docname
        assert all(s["active"] == ["tensorflow"] for s in sitelib.tab_sets(page)
                   if "tensorflow" in s["buttons"]), docname

    sitelib.open_page(page, site + api + ".html")
    sitelib.click_tab(page, "pytorch")
    sitelib.open_page(page, site + intro + ".html")
    assert sitelib.framework(page) == "pytorch"
    assert set(sitelib.design_tabs_checked(page)) == {"pytorch"}


@pytest.mark.skipif(not TABBED_CHAPTERS, reason="no chapter has framework cells yet "
                    "(the fixture book tests the mechanism)")
def test_choice_persists_across_chapters(site, page, fresh):
    """Click TensorFlow in a chapter's tab set; the next chapter with tabs shows TensorFlow."""
    first = TABBED_CHAPTERS[0]
    others = TABBED_CHAPTERS[1:] or [DOCNAMES[0]]
    fresh(site)
    for choice in ("tensorflow", "pytorch"):
        sitelib.open_page(page, site + first + ".html")
        sitelib.click_tab(page, choice)
        assert all(s["visible"] == [choice] for s in sitelib.tab_sets(page) if choice in s["buttons"])
        for docname in others:
            sitelib.open_page(page, site + docname + ".html")
            assert sitelib.framework(page) == choice, docname
            assert all(s["active"] == s["visible"] == [choice] for s in sitelib.tab_sets(page)
                       if choice in s["buttons"]), docname


# ---------------------------------------------------------- the fixture book
def test_fixture_book_tab_sets(fixture_book, fixture_site, page, fresh):
    """framework-tabs.js groups tagged cells exactly as sitelib.framework_groups predicts."""
    fresh(fixture_site)
    sitelib.open_page(page, fixture_site + "book/one.html")
    groups = sitelib.framework_groups(fixture_book / "book" / "one.ipynb")
    assert groups == [["tensorflow", "pytorch"], ["pytorch", "tensorflow"], ["tensorflow"],
                      ["tensorflow", "pytorch"]]
    sets = sitelib.tab_sets(page)
    assert [s["buttons"] for s in sets] == [["tensorflow", "pytorch"], ["tensorflow", "pytorch"],
                                            ["tensorflow"], ["tensorflow", "pytorch"]]
    assert [s["cells"] for s in sets] == [2, 2, 1, 2]
    # Default PyTorch: its panels shown, TensorFlow's hidden; a TensorFlow-only set shows nothing.
    assert [s["visible"] for s in sets] == [["pytorch"], ["pytorch"], [], ["pytorch"]]
    text = page.find_element("css selector", "main").text
    assert "pt first" in text and "tf first" not in text
    assert sitelib.console_errors(page) == []
    sitelib.screenshot(page, sitelib.SCREENSHOTS / "fixture-book-one.png")


def test_fixture_book_choice_persists(fixture_site, page, fresh):
    """Click TensorFlow on one page: every tab set there and on the next page switches."""
    fresh(fixture_site)
    sitelib.open_page(page, fixture_site + "book/one.html")
    sitelib.click_tab(page, "tensorflow")
    sets = sitelib.tab_sets(page)
    assert all(s["active"] == s["visible"] == ["tensorflow"] for s in sets)
    assert set(sitelib.design_tabs_checked(page)) == {"tensorflow"}  # the bridge to sphinx-design
    text = page.find_element("css selector", "main").text
    assert "tf first" in text and "pt first" not in text

    sitelib.open_page(page, fixture_site + "book/two.html")
    assert [s["visible"] for s in sitelib.tab_sets(page)] == [["tensorflow"]]
    sitelib.click_tab(page, "pytorch")
    assert [s["visible"] for s in sitelib.tab_sets(page)] == [["pytorch"]]

    sitelib.open_page(page, fixture_site + "book/one.html")
    assert [s["visible"] for s in sitelib.tab_sets(page)] == [["pytorch"], ["pytorch"], [],
                                                              ["pytorch"]]
    assert set(sitelib.design_tabs_checked(page)) == {"pytorch"}


def test_fixture_book_design_tabs_drive_cell_tabs(fixture_site, page, fresh):
    """Clicking a sphinx-design tab (source listings) switches the notebook tab sets too."""
    fresh(fixture_site)
    sitelib.open_page(page, fixture_site + "book/one.html")
    label = page.find_element("css selector",
                              "label[data-sync-group='framework'][data-sync-id='tensorflow']")
    page.execute_script("arguments[0].scrollIntoView({block: 'center'});", label)
    label.click()
    assert all(s["visible"] == ["tensorflow"] for s in sitelib.tab_sets(page))
    sitelib.open_page(page, fixture_site + "book/two.html")
    assert sitelib.framework(page) == "tensorflow"


def test_fixture_book_images_and_math(fixture_book, fixture_site, page, fresh):
    """The data-driven checks see what they must: image outputs and math in a notebook."""
    source = fixture_book / "book" / "one.ipynb"
    assert sitelib.image_outputs(source) == 2 and sitelib.has_math(source)
    fresh(fixture_site)
    sitelib.open_page(page, fixture_site + "book/one.html")
    assert sitelib.wait_math(page)["errors"] == 0
    images = page.find_elements("css selector", "main .cell_output img")
    assert len(images) == 2
    # the TensorFlow figure sits in a hidden panel; show it before measuring
    sitelib.click_tab(page, "tensorflow")
    for image in images:
        page.execute_script("arguments[0].scrollIntoView({block: 'center'});", image)
        sitelib.wait_for(lambda: page.execute_script("return arguments[0].complete;", image))
        assert page.execute_script("return arguments[0].naturalWidth;", image) == 24

