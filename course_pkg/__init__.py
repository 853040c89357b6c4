"""Companion package of the course *The Transformer, taught from scratch*.

The package holds one Transformer written twice, with the same names, signatures
and numbers::

    from course_pkg import torch as cp        # PyTorch
    from course_pkg import tensorflow as cp   # TensorFlow / Keras 3

``course_pkg.reference`` is the NumPy oracle both are tested against (its modules are named
as the twins'), and ``course_pkg.interop`` copies weights between the two frameworks. The rest,
by role: ``common`` holds the twins' framework-free halves (their checks and messages, by concept);
``data`` the corpora, tokenizer and vocabulary; ``evaluation`` and ``timing`` the tools the
chapters score and time with; ``notebook`` a chapter's run-time set-up; ``exercises`` the
exercises and their grading; ``authoring`` the tools that work only in a checkout.

Importing ``course_pkg`` itself imports neither framework.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
