"""The run-time set-up of a chapter: what the set-up cell every chapter notebook starts with calls.

The set-up cell (its text: :mod:`course_pkg.authoring.setup_cell`) ends with
``from course_pkg.notebook import use_frameworks``; this module is what a chapter imports at
run time to run one framework at a time (the authoring tools that write the cells' marks are
in :mod:`course_pkg.authoring`, for a checkout only).

Every chapter shows each framework-specific step twice, a TensorFlow cell and a
PyTorch cell, and a few cells compare the two. A learner who has installed only
one framework chooses it in the set-up cell (or with the environment variable
``COURSE_FRAMEWORK``); :func:`use_frameworks` then makes the other framework's
cells no-ops, so that the chapter runs top to bottom without it.

The kernel never sees a cell's tags, so each such cell says which framework it
needs on its first line, a marker comment (``python -m course_pkg.authoring
frameworks`` writes them from the tags):

=====================================  ==========================================
first line                             runs when the choice is
=====================================  ==========================================
``# TensorFlow``                       ``tensorflow`` or ``both`` (a tab's cell)
``# PyTorch``                          ``pytorch`` or ``both`` (a tab's cell)
``# TensorFlow only``                  ``tensorflow`` or ``both`` (no PyTorch twin)
``# PyTorch only``                     ``pytorch`` or ``both`` (no TensorFlow twin)
``# Both frameworks: compares ...``    ``both`` only
=====================================  ==========================================

A skipped tab cell prints nothing (its twin in the other framework runs); a
skipped ``only`` or comparison cell prints one line saying why it was skipped. A
neutral cell that reports on each framework that ran (tagged ``per-framework``, no
marker) runs under every choice: see :mod:`course_pkg.authoring.claims`.

Imports no framework (it imports TensorFlow itself only when TensorFlow is chosen).
"""

from __future__ import annotations

import os
import re

CHOICES = ("both", "pytorch", "tensorflow")
ENV = "COURSE_FRAMEWORK"

_NAMES = {"tensorflow": "TensorFlow", "pytorch": "PyTorch"}
_MARKER = re.compile(r"^#\s*(?:(?P<fw>TensorFlow|PyTorch)(?P<only>\s+only)?|(?P<both>Both frameworks))"
                     r"\s*(?::\s*(?P<why>.*))?$")


def resolve(choice: str | None = "") -> str:
    """The framework choice: ``choice`` if given, else ``$COURSE_FRAMEWORK``, else ``"both"``.

    Case and surrounding spaces are ignored; anything but ``"pytorch"``,
    ``"tensorflow"`` or ``"both"`` raises ``ValueError`` naming the choices.
    """
    if choice is not None and not isinstance(choice, str):
        raise TypeError(f"the framework choice must be a string, not {type(choice).__name__}")
    source = "the framework choice"
    if not (choice or "").strip():
        choice, source = os.environ.get(ENV, ""), f"${ENV}"
    choice = (choice or "").strip().lower() or "both"
    if choice not in CHOICES:
        raise ValueError(f"{source} is {choice!r}: choose one of {', '.join(map(repr, CHOICES))}")
    return choice


def marker(first_line: str):
    """What a cell's first line says it needs: ``(kind, framework)`` or ``None`` for any cell.

    ``kind`` is ``"tab"`` (``# PyTorch``), ``"only"`` (``# PyTorch only``) or
    ``"both"`` (``# Both frameworks: ...``, framework ``None``); ``framework``
    is ``"tensorflow"`` or ``"pytorch"``.
    """
    match = _MARKER.match(first_line.strip())
    if match is None:
        return None
    if match["both"]:
        return "both", None
    framework = "tensorflow" if match["fw"] == "TensorFlow" else "pytorch"
    return ("only" if match["only"] else "tab"), framework


def skip_reason(source: str, choice: str):
    """Why a cell with this ``source`` is skipped under ``choice``: a line to print, ``""``
    (skipped silently) or ``None`` (the cell runs)."""
    first = source.lstrip("\n").split("\n", 1)[0]
    found = marker(first)
    if found is None or choice == "both":
        return None
    kind, framework = found
    running = f"running {_NAMES[choice]} only, COURSE_FRAMEWORK={choice}"
    if kind == "both":
        why = (_MARKER.match(first.strip())["why"] or "").strip()
        if not why or why.startswith("compares"):
            return f"skipped: this cell compares TensorFlow and PyTorch ({running})"
        return f"skipped: this cell needs both frameworks: {why} ({running})"
    if framework == choice:
        return None
    if kind == "only":
        return f"skipped: this cell needs {_NAMES[framework]} ({running})"
    return ""


class _SkipOtherFramework:
    """An IPython input transformer: a cell the choice excludes becomes a no-op."""

    def __init__(self, choice: str):
        self.choice = choice

    def __call__(self, lines: list) -> list:
        reason = skip_reason("".join(lines), self.choice)
        if reason is None:
            return lines
        return [f"print({reason!r})\n"] if reason else ["pass\n"]


def quiet_tensorflow() -> None:
    """Import TensorFlow, let it share the GPU, keep float32 exact, and list its devices with stderr closed.

    TensorFlow reserves nearly all of a GPU's memory at its first operation unless
    memory growth is set before it touches the GPU; with growth it takes what it
    needs, so that PyTorch can run on the same GPU in the same process ("both").
    On an Ampere or newer GPU it computes float32 matrix products and convolutions
    in TF32 (10 bits of mantissa) unless told not to; the chapters compare float32
    results with NumPy's to 1e-5 or closer, so TF32 is turned off (PyTorch's matrix
    products are full float32 by default).
    Its start-up lines about CUDA ignore ``TF_CPP_MIN_LOG_LEVEL``; closing stderr
    keeps them out of the notebook.
    """
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")  # also for a TensorFlow imported earlier
    stderr, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        import tensorflow

        for gpu in tensorflow.config.list_physical_devices("GPU"):
            try:
                tensorflow.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:  # the GPU is in use already (the cell ran before): growth stays as set
                pass
        tensorflow.config.experimental.enable_tensor_float_32_execution(False)
    finally:
        os.dup2(stderr, 2)
        os.close(stderr)
        os.close(null)


def installed() -> list:
    """The frameworks installed in this Python, of ``"tensorflow"`` and ``"pytorch"`` (imports neither)."""
    import importlib.util

    return [framework for module, framework in (("tensorflow", "tensorflow"), ("torch", "pytorch"))
            if importlib.util.find_spec(module) is not None]


# What Hugging Face transformers 4.x is told for each choice (None: unset, transformers' "AUTO"):
# every choice sets both variables, so that choosing again in the same runtime leaves no value
# of the previous choice behind (USE_TF=0 from "pytorch" and USE_TORCH=0 from "tensorflow"
# together would hide both frameworks from it).
TRANSFORMERS_ENV = {
    "pytorch": {"USE_TF": "0", "USE_TORCH": "1"},
    "tensorflow": {"USE_TF": "1", "USE_TORCH": "0"},
    "both": {"USE_TF": None, "USE_TORCH": None},
}


def restart_notice(choice: str) -> str:
    """The line to print when ``transformers`` is already imported with other settings than
    ``choice``'s, else ``""``.

    transformers 4.x reads ``USE_TF`` and ``USE_TORCH`` once, at its import (it records them
    in ``transformers.utils.import_utils``), and decides then which frameworks it uses; a
    later change of the variables does not reach it. transformers 5 reads neither (it is
    PyTorch only): nothing to say. Imports nothing.
    """
    import sys

    if "transformers" not in sys.modules:
        return ""
    recorded = sys.modules.get("transformers.utils.import_utils")
    names = ("USE_TF", "USE_TORCH")
    if recorded is None or not all(isinstance(getattr(recorded, n, None), str) for n in names):
        return ""
    wanted = {n: (TRANSFORMERS_ENV[choice][n] or "AUTO").upper() for n in names}
    found = {n: getattr(recorded, n).upper() for n in names}
    if found == wanted:
        return ""
    return (f"restart the runtime, then run this cell first: transformers was imported with "
            f"{' '.join(f'{n}={v}' for n, v in found.items())} and reads them only then, but "
            f"FRAMEWORK = {choice!r} needs {' '.join(f'{n}={v}' for n, v in wanted.items())}")


def use_frameworks(choice: str | None = "", shell=None) -> str:
    """Run this notebook with ``choice`` (see :func:`resolve`); return the resolved choice.

    Left empty (and ``$COURSE_FRAMEWORK`` unset), the choice is ``"both"`` where both
    frameworks are installed (as on Colab), else the one that is (said in one printed
    line). In IPython (``shell``, default the running one) it registers an input
    transformer that turns every cell marked for a framework not chosen into a no-op
    (calling it again replaces it). It sets ``$COURSE_FRAMEWORK`` to the choice, and tells
    Hugging Face ``transformers`` which frameworks to use (:data:`TRANSFORMERS_ENV`:
    ``"pytorch"`` sets ``USE_TF=0 USE_TORCH=1``, ``"tensorflow"`` ``USE_TF=1 USE_TORCH=0``,
    ``"both"`` unsets both; transformers 4.x imports TensorFlow otherwise, when it is
    installed), so that a runtime can switch from one choice to another. transformers 4.x
    reads the two variables once, when it is imported: if it was imported with other
    values, one printed line says that the runtime must be restarted (:func:`restart_notice`).
    It imports TensorFlow, quietly and sharing the GPU, only when TensorFlow is chosen.
    """
    explicit = bool((choice or "").strip() if isinstance(choice, str) else choice) or bool(
        os.environ.get(ENV, "").strip())
    choice = resolve(choice)
    if choice == "both":
        found = installed()
        if len(found) == 1 and not explicit:
            choice = found[0]
            other = "PyTorch" if choice == "tensorflow" else "TensorFlow"
            print(f"{other} is not installed: running {_NAMES[choice]} only (FRAMEWORK = {choice!r})")
        elif len(found) < 2:
            missing = [f for f in ("tensorflow", "pytorch") if f not in found]
            if len(missing) == 2:
                raise ModuleNotFoundError(
                    "neither TensorFlow nor PyTorch is installed: install one, for example "
                    "pip install \"course-pkg[torch]\"")
            other = found[0]
            raise ModuleNotFoundError(
                f"{_NAMES[missing[0]]} is not installed, and this notebook runs both frameworks: "
                f"choose one in the set-up cell (FRAMEWORK = {other!r}) or set {ENV}={other}")
    os.environ[ENV] = choice
    for name, value in TRANSFORMERS_ENV[choice].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    notice = restart_notice(choice)
    if notice:
        print(notice)
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            get_ipython = None
        shell = get_ipython() if get_ipython else None
    if shell is not None:
        transformers = shell.input_transformers_cleanup
        transformers[:] = [t for t in transformers if not isinstance(t, _SkipOtherFramework)]
        transformers.append(_SkipOtherFramework(choice))
    if choice in ("tensorflow", "both"):
        quiet_tensorflow()
    return choice
