"""The claims a chapter prints, and which of them a run with one framework must print.

A chapter checks each claim of its prose in a printed line that ends in ``: True``
(``at least 99% exact match: True``). A learner who runs one framework
(``COURSE_FRAMEWORK``, see :mod:`course_pkg.notebook`) must see every claim about that
framework or about neither; only the claims that compare the two frameworks are theirs
to miss. This module reads a notebook's stored outputs and says, for each choice, which
claim lines a run prints and which it misses. ``book/conftest.py`` uses it in CI's
single-framework passes (a chapter that prints fewer than :data:`MIN_COVERAGE` of its
claims fails), and ``tests/test_claims.py`` in the unit tests: it reads stored notebooks
from a checkout, and no chapter imports it when it runs.

A claim line **concerns** a framework when it names it (``TensorFlow``, Keras, ``tf.``;
``PyTorch``, ``torch``) and **compares the two** when it names both or says "both
frameworks". A cell tagged ``per-framework`` is a neutral cell (it runs under every
choice) that reports on each framework that ran, one line per framework beginning with
its name; under one framework the lines that begin with the other's name are not
expected (:func:`expected_outputs`).

Imports no framework.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from ..notebook import marker, skip_reason
from .notebook_files import cell_tags, source_text

#: The tag of a neutral cell that prints one line per framework that ran (see the module docstring).
PER_FRAMEWORK_TAG = "per-framework"
#: The least share of a chapter's claims about one framework or neither that its run must print.
MIN_COVERAGE = 0.9

NAMES = {"tensorflow": "TensorFlow", "pytorch": "PyTorch"}
_CLAIM = re.compile(r":\s*True\s*$")
_MENTIONS = {
    "tensorflow": re.compile(r"TensorFlow|\bkeras\b|\bKeras\b|\btf\."),
    "pytorch": re.compile(r"PyTorch|\btorch\b"),
}
_BOTH = re.compile(r"both frameworks", re.IGNORECASE)


def _stream_text(output) -> str:
    text = output.get("text", "")
    return text if isinstance(text, str) else "".join(text)


def line_framework(line: str):
    """The framework a per-framework cell's output line is about: ``"tensorflow"`` or
    ``"pytorch"`` when it begins with that framework's name, else ``None``."""
    stripped = line.lstrip()
    for framework, name in NAMES.items():
        if re.match(rf"{name}\b", stripped):
            return framework
    return None


def concerns(line: str) -> set:
    """The frameworks a claim line names: ``set()`` (neither), one, or both (a comparison)."""
    if _BOTH.search(line):
        return {"tensorflow", "pytorch"}
    return {framework for framework, pattern in _MENTIONS.items() if pattern.search(line)}


def is_claim(line: str) -> bool:
    """Whether an output line checks a claim (it ends in ``: True``)."""
    return bool(_CLAIM.search(line))


def expected_outputs(cell, choice: str) -> list:
    """The stored outputs of ``cell`` that a run under ``choice`` prints: all of them, except
    in a ``per-framework`` cell under one framework, whose stream lines that begin with
    the other framework's name are dropped."""
    outputs = cell.get("outputs", [])
    if choice == "both" or PER_FRAMEWORK_TAG not in cell_tags(cell):
        return outputs
    kept = []
    for output in outputs:
        if output.get("output_type") != "stream":
            kept.append(output)
            continue
        lines = _stream_text(output).splitlines(keepends=True)
        lines = [ln for ln in lines if line_framework(ln) in (None, choice)]
        if lines:
            new = copy.deepcopy(output)
            new["text"] = "".join(lines)
            kept.append(new)
    return kept


def _load(notebook):
    if isinstance(notebook, dict):
        return notebook
    return json.loads(Path(notebook).read_text(encoding="utf-8"))


def _cell_framework(cell) -> set:
    """The framework a cell's marker gives it (a tab's or an ``only`` cell), else ``set()``."""
    found = marker(source_text(cell).lstrip("\n").split("\n", 1)[0])
    return {found[1]} if found and found[1] else set()


def claim_lines(notebook, choice: str = "both") -> list:
    """``(line, frameworks)`` for each claim line a run under ``choice`` prints, from the stored
    outputs, in order: the frameworks the line is about (those it names, and the framework
    of the cell that prints it). A cell skipped under ``choice`` prints none of its lines."""
    found = []
    for cell in _load(notebook).get("cells", []):
        if cell.get("cell_type") != "code" or skip_reason(source_text(cell), choice) is not None:
            continue
        own = _cell_framework(cell)
        for output in expected_outputs(cell, choice):
            if output.get("output_type") == "stream":
                found += [(ln.rstrip(), concerns(ln) | own)
                          for ln in _stream_text(output).splitlines() if is_claim(ln)]
    return found


def coverage(notebook, choice: str) -> tuple:
    """``(printed, wanted, missing)`` for a run with one framework (``choice``): the distinct
    stored claim lines about that framework or neither (``wanted``: printed by a cell of
    that framework or a neutral one, and naming at most that framework), how many of them
    the run prints, and the list of those it misses."""
    if choice not in NAMES:
        raise ValueError(f"coverage is for one framework: choose 'pytorch' or 'tensorflow', not {choice!r}")
    wanted = list(dict.fromkeys(ln for ln, about in claim_lines(notebook, "both") if about <= {choice}))
    printed = {ln for ln, _ in claim_lines(notebook, choice)}
    missing = [ln for ln in wanted if ln not in printed]
    return len(wanted) - len(missing), len(wanted), missing


def coverage_report(notebook) -> str:
    """One line per framework: the share of the chapter's claims its run prints, then the
    lines it misses."""
    lines = []
    for choice, name in NAMES.items():
        printed, wanted, missing = coverage(notebook, choice)
        share = printed / wanted if wanted else 1.0
        lines.append(f"{name}: {printed}/{wanted} claims ({share:.0%})")
        lines += [f"  missing: {ln}" for ln in missing]
    return "\n".join(lines)
