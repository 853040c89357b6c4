"""Helpers of the site tests: what the book's sources promise, and a browser to check it.

The expectations are read from the sources (``_toc.yml``, ``_config.yml``,
the notebooks and Markdown pages), so the same tests hold for stub chapters
and for finished ones: a notebook with a cell tagged ``tensorflow`` must show
a tab set, one with image outputs must show loaded images, one with ``$``
math must show rendered math.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
FRAMEWORKS = ("tensorflow", "pytorch")
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("COURSE_CHROMEDRIVER", "/usr/bin/chromedriver")
# The browser's window: a common laptop width, where the theme shows both sidebars by default.
WINDOW = (1280, 1000)


# ---------------------------------------------------------------- the sources
def toc_docnames(root=ROOT):
    """Docnames of every page in ``_toc.yml``, in reading order (root first)."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts") or [{"chapters": toc.get("chapters")}]:
        walk(part.get("chapters"))
    return [re.sub(r"\.(md|ipynb)$", "", n) for n in names]


def source_of(docname, root=ROOT):
    """The source file of a docname (``book/01_seq2seq`` -> its ``.ipynb``)."""
    for suffix in (".ipynb", ".md"):
        path = Path(root) / (docname + suffix)
        if path.exists():
            return path
    raise FileNotFoundError(f"no source for {docname} in {root}")


def changed_since_build(docname, html=HTML, root=ROOT):
    """Whether the page's source was saved after the build of ``html`` read it.

    (Its doctree is written as soon as Sphinx has read the source.) Then the
    page shows an older version than the file, and the file's expectations
    do not apply: never in CI's fresh clone, but while authors save notebooks.
    """
    doctree = Path(html).parent / ".doctrees" / (docname + ".doctree")
    source = source_of(docname, root)
    return doctree.exists() and source.stat().st_mtime > doctree.stat().st_mtime


def read_notebook(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _text(source):
    return "".join(source) if isinstance(source, list) else source


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def markdown_texts(path):
    """The Markdown of a page: every markdown cell of a notebook, or the .md file."""
    path = Path(path)
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    return [_text(c["source"]) for c in read_notebook(path)["cells"]
            if c["cell_type"] == "markdown" and "remove-cell" not in tags(c)]


_FENCE = re.compile(r"^(```+|~~~+)(.*?)$.*?^\1\s*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
_MATH = re.compile(r"\$[^$\s][^$]*\$|\$\$.+?\$\$|\\begin\{(equation|align|gather|multline)", re.S)


def has_math(path):
    """Whether a page's sources hold math: ``$...$``, ``$$...$$``, amsmath, {math},
    or a notebook output in LaTeX. Code (fences, code spans) does not count."""
    for text in markdown_texts(path):
        if re.search(r"^(```+|:::+)\s*\{math\}", text, re.M):
            return True
        prose = _CODE_SPAN.sub("", _FENCE.sub("", text))
        if _MATH.search(prose):
            return True
    if Path(path).suffix == ".ipynb":
        return any("text/latex" in out.get("data", {})
                   for c in read_notebook(path)["cells"] for out in c.get("outputs", []))
    return False


def image_outputs(path):
    """How many image outputs a notebook stores (0 for a Markdown page)."""
    if Path(path).suffix != ".ipynb":
        return 0
    return sum(1 for c in read_notebook(path)["cells"] if "remove-output" not in tags(c)
               and "remove-cell" not in tags(c)
               for out in c.get("outputs", []) if any(m in out.get("data", {}) for m in IMAGE_MIMES))


FIGURES = ROOT / "book" / "figures"
FIGURE_SUFFIXES = (".svg", ".png", ".jpg", ".jpeg", ".gif")
_FIGURE_REF = re.compile(r"^(?:```+|:::+)\s*\{figure\}\s+(\S+)|!\[[^\]]*\]\(([^)\s]+)", re.M)


def figure_files(folder=FIGURES):
    """The book's drawn figures: every image file of ``book/figures``."""
    return sorted(p.name for p in Path(folder).iterdir() if p.suffix.lower() in FIGURE_SUFFIXES)


def figure_refs(path):
    """The file names of ``book/figures`` that a page embeds ({figure} directives and
    ``![alt](figures/...)``), in order, as written in its Markdown."""
    names = []
    for text in markdown_texts(path):
        for directive, image in _FIGURE_REF.findall(text):
            target = directive or image
            if Path(target).parent.name == "figures":
                names.append(Path(target).name)
    return names


def framework_groups(path):
    """The tab sets ``framework-tabs.js`` must make of a notebook, as lists of frameworks.

    The rule of the script: a run of adjacent code cells tagged ``tensorflow``
    or ``pytorch`` is one tab set; any other visible cell ends it, and so does
    a framework met twice (it starts the next set).
    """
    if Path(path).suffix != ".ipynb":
        return []
    groups, current = [], None
    for cell in read_notebook(path)["cells"]:
        if "remove-cell" in tags(cell):
            continue  # not in the HTML at all
        framework = next((f for f in FRAMEWORKS if f in tags(cell)), None)
        if cell["cell_type"] != "code" or framework is None:
            current = None
            continue
        if current is None or framework in current:
            current = []
            groups.append(current)
        current.append(framework)
    return groups


def first_heading(path):
    """The text of the page's first ``# `` heading, Markdown markup removed."""
    for text in markdown_texts(path):
        match = re.search(r"^#\s+(.+?)\s*#*\s*$", _FENCE.sub("", text), re.M)
        if match:
            return re.sub(r"[*_`]", "", match.group(1)).strip()
    return None


def colab_url(docname, root=ROOT):
    """The Colab URL that the launch button of a notebook page must open."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]["url"].rstrip("/")
    owner_repo = re.sub(r"^https://github\.com/", "", repo)
    book = (config["repository"].get("path_to_book") or "").strip("/")
    path = "/".join(p for p in (book, docname + ".ipynb") if p)
    colab = config["launch_buttons"]["colab_url"].rstrip("/")
    return f"{colab}/github/{owner_repo}/blob/{config['repository'].get('branch', 'main')}/{path}"


# ---------------------------------------------------------------- the browser
def make_driver(user_data_dir):
    """Headless Debian Chromium driven by Debian's ChromeDriver; nothing downloaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic",
                 "--window-size={},{}".format(*WINDOW), f"--user-data-dir={user_data_dir}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


def wait_for(predicate, timeout=20.0, interval=0.1, message="condition"):
    """Poll ``predicate`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {message}")
        time.sleep(interval)


def open_page(driver, url):
    """Load ``url`` and wait until the page and its scripts are done."""
    driver.get(url)
    wait_for(lambda: driver.execute_script("return document.readyState") == "complete",
             message=f"{url} to load")
    return driver


JS_MATH_STATE = """
const maths = Array.from(document.querySelectorAll('.math'));
return {count: maths.length,
        rendered: maths.filter(m => m.querySelector('mjx-container')).length,
        errors: document.querySelectorAll('mjx-merror, .MathJax_Error').length,
        containers: document.querySelectorAll('mjx-container').length};
"""


def math_state(driver):
    return driver.execute_script(JS_MATH_STATE)


def wait_math(driver, timeout=30.0):
    """Wait until MathJax has typeset every math element; return the final state."""
    def done():
        state = math_state(driver)
        return state if state["count"] and state["rendered"] == state["count"] else None
    return wait_for(done, timeout=timeout, message="MathJax to typeset every .math element")


def framework(driver):
    """The framework that framework-tabs.js chose for this page (None without the script)."""
    return driver.execute_script("return document.documentElement.dataset.framework || null")


JS_TAB_SETS = """
return Array.from(document.querySelectorAll('.framework-tabs')).map(set => ({
  buttons: Array.from(set.querySelectorAll('.framework-tab-button')).map(b => b.dataset.framework),
  active: Array.from(set.querySelectorAll('.framework-tab-button.active')).map(b => b.dataset.framework),
  visible: Array.from(set.querySelectorAll('.framework-tab-panel'))
             .filter(p => !p.hidden && p.offsetParent !== null).map(p => p.dataset.framework),
  cells: set.querySelectorAll('.framework-tab-panel > div.cell').length,
}));
"""


def tab_sets(driver):
    """Every notebook tab set on the page: its buttons, active button(s), visible panel(s)."""
    return driver.execute_script(JS_TAB_SETS)


JS_DESIGN_TABS = """
return Array.from(document.querySelectorAll('label[data-sync-group="framework"]'))
  .filter(l => document.getElementById(l.htmlFor).checked).map(l => l.dataset.syncId);
"""


def design_tabs_checked(driver):
    """The sync id of the checked tab of every sphinx-design tab-set of the group ``framework``."""
    return driver.execute_script(JS_DESIGN_TABS)


def click_tab(driver, name):
    """Click the first "TensorFlow" / "PyTorch" tab of the page (notebook or sphinx-design tab)."""
    element = driver.execute_script(
        "return document.querySelector(`.framework-tab-button[data-framework='${arguments[0]}']`)"
        " || document.querySelector(`label[data-sync-group='framework'][data-sync-id='${arguments[0]}']`);",
        name)
    assert element is not None, f"no {name} tab on {driver.current_url}"
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    element.click()


JS_SHOW_ALL = """
const framework = arguments[0];
const tab = document.querySelector(`.framework-tab-button[data-framework='${framework}']`)
  || document.querySelector(`label[data-sync-group='framework'][data-sync-id='${framework}']`);
if (tab) tab.click();
document.querySelectorAll('main details').forEach(d => { d.open = true; });
return document.documentElement.dataset.framework || null;
"""


def show_all(driver, framework):
    """Show the page as a reader of ``framework`` sees it with every fold opened: that
    framework's tabs chosen (if the page has any), every ``<details>`` (hidden cell
    sources, dropdowns) open."""
    return driver.execute_script(JS_SHOW_ALL, framework)


JS_CODE_BLOCKS = """
const section = e => { const s = e.closest('section[id]'); return s ? '#' + s.id + ': ' : ''; };
return Array.from(document.querySelectorAll('.bd-article pre')).map((pre, index) => {
  if (!pre.getClientRects().length) return {index, shown: false};
  // the block, and the boxes around it that would scroll instead (myst-nb's div.output scrolls)
  const boxes = [pre, pre.closest('div.highlight'), pre.closest('div.output')].filter(Boolean);
  const line = pre.textContent.split('\\n').find(l => l.trim()) || '';
  return {index, shown: true, width: pre.clientWidth,
          excess: Math.max(...boxes.map(b => b.scrollWidth - b.clientWidth)),
          line: section(pre) + line.trim().slice(0, 70)};
});
"""


def code_blocks(driver):
    """Every ``pre`` of the page (code cells, their outputs, listings), in order:
    ``{index, shown}``, and for a shown one its ``width`` (px), its ``excess`` (how
    many px it, or a box around it, would scroll sideways) and its first line."""
    return driver.execute_script(JS_CODE_BLOCKS)


JS_IMAGE_SIZES = """
const section = e => { const s = e.closest('section[id]'); return s ? '#' + s.id + ': ' : ''; };
return Array.from(document.querySelectorAll('.bd-article img')).map((img, index) => {
  if (!img.getClientRects().length) return {index, shown: false};
  img.scrollIntoView({block: 'center'});
  // the width the author asked for: the width attribute (myst-nb writes one for an image
  // output with metadata, e.g. a retina PNG), else the image's own (an SVG's width attribute)
  const asked = /^\\d+(\\.\\d+)?(px)?$/.test(img.getAttribute('width') || '')
    ? parseFloat(img.getAttribute('width')) : img.naturalWidth;
  const cell = img.closest('div.cell'), code = cell && cell.querySelector('.cell_input pre');
  const figure = img.closest('figure'), caption = figure && figure.querySelector('figcaption');
  const first = code && (code.textContent.split('\\n').find(l => l.trim()) || '').trim();
  const where = section(img) + (code ? 'cell ' + first
    : caption ? 'figure "' + caption.textContent.trim() + '"' : 'image');
  return {index, shown: true, complete: img.complete, natural: asked,
          width: img.getBoundingClientRect().width,
          src: (img.getAttribute('src') || '').split('/').pop().slice(0, 24), where: where.slice(0, 100)};
});
"""


def image_sizes(driver):
    """Every ``img`` of the page, in order: ``{index, shown}``, and for a shown one the
    width it is drawn at, its ``natural`` width (as asked for by the page, else the
    file's), whether it has loaded, where it is (a cell's first line, a caption)."""
    return driver.execute_script(JS_IMAGE_SIZES)


def screenshot(driver, path, width=1280, max_height=12000):
    """Write a PNG of the whole page (up to ``max_height`` CSS pixels) to ``path``.

    The viewport is made as tall as the page for the capture (so that the
    theme lays out and paints all of it), then restored.
    """
    height = driver.execute_script(
        "return Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);")
    height = min(int(height), max_height)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    try:
        driver.execute_script("window.scrollTo(0, 0);")
        time.sleep(0.3)  # let the theme react to the new size (sticky sidebars, scroll spy)
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


# Known, harmless console errors of the theme's own scripts: nothing of the course.
CONSOLE_NOISE = (
    "/favicon.ico - Failed to load resource",  # the book sets no favicon; the browser asks anyway
    # sphinx-thebe 0.3.1 under Sphinx 7 writes its inline config script twice; the
    # second copy fails on its `const` (thebe is off in this book: no launch button uses it)
    "Identifier 'THEBE_JS_URL' has already been declared",
    "Got invalid theme mode",  # pydata-sphinx-theme, first visit: no stored light/dark mode yet
)


def console_errors(driver, ignore=CONSOLE_NOISE):
    """Severe browser-console entries since the last call (failed loads, script errors)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and not any(i in entry["message"] for i in ignore)]
