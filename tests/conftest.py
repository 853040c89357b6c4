"""Fixtures and hooks of the test suite for ``course_pkg``.

Shared constants, example inputs, oracles and the framework adapters live in
``helpers.py`` (test modules import them from there); this file keeps only what
pytest itself uses: collection settings, fixtures and the parity summary hook.
"""

import os

# The site tests (tests/site) drive a browser over the built book: only
# .ci/build-book runs them, after the build, with COURSE_SITE_TESTS=1.
collect_ignore = [] if os.environ.get("COURSE_SITE_TESTS") else ["site"]

# Must happen before anything imports TensorFlow.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import pytest
from helpers import FRAMEWORKS, get_adapter


@pytest.fixture(params=FRAMEWORKS)
def fw(request):
    """The framework adapter under test (parametrized: tensorflow, torch)."""
    return get_adapter(request.param)


@pytest.fixture
def tf_fw():
    return get_adapter("tensorflow")


@pytest.fixture
def torch_fw():
    return get_adapter("torch")


@pytest.fixture
def ref():
    from course_pkg import reference

    return reference


@pytest.fixture
def interop():
    from course_pkg import interop as _interop

    return _interop


# ---------------------------------------------------------------------------
# Parity error log, printed at the end of the run.
# ---------------------------------------------------------------------------
_PARITY_LOG = []


@pytest.fixture
def record_error(request):
    def _record(label, err):
        _PARITY_LOG.append((f"{request.node.name}: {label}", float(err)))
        print(f"[max abs err] {label}: {err:.3e}")
        return err

    return _record


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _PARITY_LOG:
        return
    terminalreporter.section("parity: max abs errors (float32)")
    worst = sorted(_PARITY_LOG, key=lambda kv: -kv[1])
    for label, err in worst[:15]:
        terminalreporter.write_line(f"{err:.3e}  {label}")
    terminalreporter.write_line(
        f"overall max over {len(_PARITY_LOG)} comparisons: {worst[0][1]:.3e}")
