"""The prose quotes no number that a re-run can contradict.

A decimal number or a percentage in a chapter's text must be one of: printed by a cell whose
output nbval compares (a fact of the run, checked on every CI pass), written in the chapter's
own code (a constant the chapter sets: a learning rate, a dropout rate), or on the short list
below of constants with their source. Anything else (an accuracy seen once, a timing, a loss
"of about 0.8" read off one run) must move into a measurement cell with a claim that checks it,
or out of the chapter. Section and exercise numbers ("section 6.4", "## 6.4", "exercise 5.1")
are not quantities.
"""

from __future__ import annotations

import re

import pytest

from course_pkg.authoring.notebook_files import cell_tags, chapter_notebooks, source_text

# Constants the prose may quote although no compared cell prints them: value -> where it comes from.
CONSTANTS = {
    "0.98": "Adam's beta_2 in Vaswani et al. (2017), section 5.3",
    "0.9": "Adam's beta_1 in Vaswani et al. (2017), section 5.3",
    "0.1": "dropout and label smoothing of Vaswani et al. (2017), section 5.4",
    "1.0": "the course's float mask: 1.0 = blocked (chapter 3)",
    "0.0": "the course's float mask: 0.0 = may attend (chapter 3)",
    "3.2": "ln 25, the loss of a uniform guess among 25 words (chapter 1, section 1.6)",
    "57.7": "100 / sqrt(3), the score of chapter 2's worked example (section 2.1)",
}

NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?\s?%|\d+\.\d+)")
LITERAL = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
SECTION = re.compile(r"(?:[Ss]ections?|§|#+|[Cc]hapters?|[Ee]xercises?|and|,)\s*$")
COMPARED_OUT = ("nbval-ignore-output", "nbval-skip")


def prose(text: str) -> str:
    """The running text of a markdown cell: without code, math, links and directives' options."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]*\$", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"https?://\S+", " ", text)
    return re.sub(r"^:[\w-]+:.*$", " ", text, flags=re.M)


def compared_text(notebook: dict) -> str:
    """Everything the code cells print that nbval compares, and the code itself (numbers are
    compared as values, so that ``1e-3`` in the code backs "0.001" in the prose)."""
    parts = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts.append(source_text(cell))
        if set(cell_tags(cell)) & set(COMPARED_OUT):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append("".join(output["text"]))
            elif "data" in output:
                parts.append("".join(output["data"].get("text/plain", "")))
    return "\n".join(parts)


def quoted_numbers(notebook: dict) -> list:
    """``(cell id, number, context)`` of each number in the prose that is not backed."""
    printed = [float(literal) for literal in LITERAL.findall(compared_text(notebook))]
    backed = {round(x, digits) for x in printed for digits in range(7)}  # as printed, or rounded
    found = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = prose(source_text(cell))
        for match in NUMBER.finditer(text):
            value = match.group(1)
            core = re.match(r"[\d.]+", value).group(0)
            if SECTION.search(text[:match.start()]) or core in CONSTANTS:
                continue
            number = float(core)
            if number in backed or (value.endswith("%") and round(number / 100, 6) in backed):
                continue  # as printed or written in the code (1e-3 for 0.001; 0.97 for 97%)
            context = " ".join(text[max(0, match.start() - 50):match.end() + 30].split())
            found.append((cell.get("id", "?"), value, context))
    return found


def test_prose_finds_a_quoted_measurement_and_accepts_what_is_backed():
    notebook = {"cells": [
        {"cell_type": "markdown", "id": "m", "source": "It reached 97.5% on every seed; see section 8.5 and "
                                                       "`lr=0.003`, with $d^{-0.5}$ and dropout 0.2."},
        {"cell_type": "code", "id": "c", "metadata": {}, "source": "model = ViT(dropout=0.2)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "steps: 300\n"}]},
    ]}
    assert [(cell, value) for cell, value, _ in quoted_numbers(notebook)] == [("m", "97.5%")]
    notebook["cells"][1]["outputs"][0]["text"] = "test accuracy 97.5%\n"
    assert quoted_numbers(notebook) == []  # printed by a compared cell
    notebook["cells"][1]["metadata"]["tags"] = ["nbval-ignore-output"]
    assert len(quoted_numbers(notebook)) == 1  # a measurement cell does not back the prose


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_the_prose_quotes_no_number_a_rerun_can_change(path):
    import json

    found = quoted_numbers(json.loads(path.read_text(encoding="utf-8")))
    assert not found, "numbers in the prose that no compared cell prints, nor the code, nor CONSTANTS:\n" + \
        "\n".join(f"  {cell}: {value!r} in '...{context}...'" for cell, value, context in found)
