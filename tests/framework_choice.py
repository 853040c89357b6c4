"""What the tests of the set-up's framework choice share: a stand-in for IPython's shell, and a
fixture that puts back the environment variables that ``use_frameworks`` sets."""

import os

import pytest


@pytest.fixture(autouse=True)
def restore_environment():
    """use_frameworks sets COURSE_FRAMEWORK, USE_TF and USE_TORCH in os.environ: put it back after
    each test, or the notebooks nbval runs later in the same session inherit the choice."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


class FakeShell:
    """What use_frameworks needs of IPython's shell, with IPython's own transformer manager."""

    def __init__(self):
        from IPython.core.inputtransformer2 import TransformerManager

        self.manager = TransformerManager()
        self.input_transformers_cleanup = self.manager.cleanup_transforms

    def run(self, source):
        """Transform ``source`` as IPython would, execute it; return (namespace, stdout)."""
        import contextlib
        import io

        code = self.manager.transform_cell(source)
        namespace, out = {}, io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<cell>", "exec"), namespace)
        return namespace, out.getvalue()
