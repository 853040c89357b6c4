"""The grader's probe: the cell that has the student's kernel call their function on the
exercise's parameters and write what it returns to a file, and the score read from that file.

The probe only reports the function's results (serialised as JSON); the grade is computed here,
outside the kernel, against :mod:`course_pkg.reference`, so nothing the notebook patches can make
a wrong result right. :mod:`.grading` runs the notebook and places a probe after each exercise.
"""

from __future__ import annotations

import json

import numpy as np

from .comparison import compare

PROBE_KEY = "course_grader_probe"  # metadata of the cells the grader adds


def short_message(message, limit=160):
    """The first line of ``message``, cut to ``limit`` characters (``...`` where cut)."""
    lines = str(message).strip().splitlines()
    message = lines[0] if lines else ""
    return message if len(message) <= limit else message[:limit - 3] + "..."


class _Slot:
    """Where the result of the student's ``index``-th call goes."""

    def __init__(self, index):
        self.index = index


def call_plan(exercise, params):
    """``(calls, layout)``: the ``(args, kwargs)`` of each call of the student's function and
    the result's layout (a :class:`_Slot` or a list of them), read from :meth:`Exercise.result`."""
    calls = []

    def record(*args, **kwargs):
        calls.append((list(args), kwargs))
        return _Slot(len(calls) - 1)

    return calls, exercise.result(record, params)


def _encode(value):
    """Parameters as JSON: arrays and tuples marked, so that the kernel rebuilds them exactly."""
    if isinstance(value, np.ndarray):
        return {"ndarray": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {key: _encode(v) for key, v in value.items()}}
    return value


# Runs in the student's kernel. It only reports what the student's function returns: the
# grade is computed outside, so nothing the notebook patches can make a wrong result right.
PROBE = """# The grader calls {answer} on exercise {id}'s parameters here (not part of the notebook).
def __course_grader_probe(name, payload, out):
    import json
    import numpy

    def decode(v):
        if isinstance(v, list):
            return [decode(x) for x in v]
        if isinstance(v, dict):
            if "ndarray" in v:
                return numpy.asarray(v["ndarray"], dtype=v["dtype"])
            if "tuple" in v:
                return tuple(decode(x) for x in v["tuple"])
            return {{key: decode(x) for key, x in v["dict"].items()}}
        return v

    def encode(v):
        if v is None:
            return {{"none": True}}
        if isinstance(v, (tuple, list)):
            return {{"list": [encode(x) for x in v]}}
        try:
            if hasattr(v, "detach"):
                v = v.detach().cpu().numpy()
            elif hasattr(v, "numpy") and not isinstance(v, numpy.ndarray):
                v = v.numpy()
            a = numpy.asarray(v)
        except Exception as error:
            return {{"not_array": type(v).__name__, "error": str(error)}}
        data = a.tolist() if a.dtype.kind in "biufU" else None  # numbers and texts
        return {{"array": data, "dtype": a.dtype.str, "shape": list(a.shape)}}

    report = {{}}
    answer = globals().get(name)
    if answer is None:
        report["undefined"] = True
    elif not callable(answer):
        report["not_callable"] = type(answer).__name__
    else:
        results = []
        try:
            for args, kwargs in decode(json.loads(payload)):
                results.append(encode(answer(*args, **kwargs)))
            report["results"] = results
        except Exception as error:
            report["raised"] = [type(error).__name__, str(error)]
    with open(out, "w", encoding="utf-8") as file:
        file.write(json.dumps(report))


__course_grader_probe({answer!r}, {payload!r}, {out!r})
del __course_grader_probe
"""


def probe_cell(exercise, seed, out):
    """The cell that has the kernel call the student's function and write the result to ``out``."""
    import nbformat

    calls, _ = call_plan(exercise, exercise.params(seed))
    payload = json.dumps(_encode([[args, kwargs] for args, kwargs in calls]))
    source = PROBE.format(answer=exercise.answer, id=exercise.id, payload=payload, out=str(out))
    return nbformat.v4.new_code_cell(source, metadata={PROBE_KEY: exercise.id})


class _NotArray:
    """A result the kernel could not turn into an array (``compare`` names its type)."""

    def __init__(self, type_name, error):
        self.type_name, self.error = type_name, error

    def __array__(self, *args, **kwargs):
        raise ValueError(self.error)


def _decode(value):
    if "none" in value:
        return None
    if "list" in value:
        return [_decode(v) for v in value["list"]]
    if "not_array" in value:
        return _NotArray(str(value["not_array"]), str(value.get("error", "")))
    dtype, shape = np.dtype(value["dtype"]), tuple(int(n) for n in value["shape"])
    if value.get("array") is None:
        return np.zeros(shape, dtype=dtype)  # neither numbers nor texts: only type and shape matter
    return np.asarray(value["array"], dtype=dtype).reshape(shape)


def _probe_failure(exercise, report):
    """Why the kernel has no result of ``exercise``'s function, or ``None`` when it has one."""
    if report.get("undefined"):
        return f"NameError: name {exercise.answer!r} is not defined"
    if "not_callable" in report:
        return (f"AssertionError: Exercise {exercise.id}: {exercise.answer} must be a function, "
                f"got {report['not_callable']}")
    if "raised" in report:
        name, message = report["raised"]
        return f"{name}: {short_message(message)}" if short_message(message) else str(name)
    return None


def _assemble(layout, results):
    if isinstance(layout, _Slot):
        return results[layout.index]
    return type(layout)(_assemble(part, results) for part in layout)


def score_probe(exercise, seed, report, cell_error=None):
    """The reason ``exercise`` fails from the kernel's ``report`` of the student's results, or ``""``.

    ``cell_error``: the first error of the exercise's own cells (``"ImportError: ..."``), if any.
    Where the function is missing, not callable or raises, that error comes first: it is the
    cause (a cell that failed before ``def``), the rest its consequence.
    """
    failure = _probe_failure(exercise, report)
    if failure is not None:
        if cell_error:
            return f"{cell_error} (the error of exercise {exercise.id}'s cell; then: {failure})"
        return failure
    params = exercise.params(seed)
    _, layout = call_plan(exercise, params)
    try:
        got = _assemble(layout, [_decode(value) for value in report["results"]])
    except (KeyError, TypeError, ValueError, IndexError) as error:
        return f"the grader could not read {exercise.answer}'s result: {error}"
    try:
        compare(exercise, got, exercise.expected(**params), exercise.answer + "(...)", params)
    except AssertionError as error:
        # the course's message: a word or name and two answers
        return f"AssertionError: {short_message(error, 400)}"
    return ""
