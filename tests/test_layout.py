"""The package's layout, read from its source (no import): each module keeps its private names
to itself, no file grows past 500 lines nor function past 60 (in ``course_pkg`` and the code of
``tests/``, ``benchmarks/``, ``book/figures/`` and ``.ci/``), no test asserts a wall-clock time,
and the framework-free code in ``course_pkg/common/`` imports no framework and is named by
concept (each module after the twin module it serves, or the Hugging Face family it maps)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_pkg"
MAX_LINES = 500
FRAMEWORKS = {"torch", "tensorflow", "keras", "jax", "flax"}

# Violations that other refactors remove; the integrator empties these lists after merging them.
ALLOWED_PRIVATE = set()  # (file, name): none; a new entry needs a reason
ALLOWED_LONG = set()  # files over the limit: none
ALLOWED_LONG_FUNCTIONS = set()  # (file, function) over MAX_FUNCTION_LINES: none
MAX_FUNCTION_LINES = 60
CODE_ROOTS = ("tests", "benchmarks", "book/figures", ".ci")  # their code is held to the same sizes


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path, root):
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(path, node, root):
    """The absolute name of the module an ``ImportFrom`` node imports from."""
    if not node.level:
        return node.module or ""
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _sources():
    return sorted(PACKAGE.rglob("*.py"))


def _users():
    """The package's modules and the files that import them: the tests and the benchmarks."""
    return _sources() + sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))


def _rel(path, root=ROOT):
    return path.relative_to(root).as_posix()


def _dotted(node):
    """``['a', 'b', 'c']`` for the expression ``a.b.c`` (names and attributes only), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def private_imports(path, root=ROOT):
    """``(file, 'module.name')`` for every private name of another course module used by ``path``:
    ``from X import _name``, an import of a private module (``X._mod``), ``module._name`` (or
    ``course_pkg.x._name``) on a course module bound by an import, and ``setattr(module, "_name",
    ...)`` (``getattr``, ``monkeypatch.setattr`` alike; or ``"course_pkg.x._name"`` as its target)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _module_name(path, root)
    found, modules = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(path, node, root)
            if not source.startswith("course_pkg"):
                continue
            if any(_is_private(part) for part in source.split(".")):
                found.add(source)
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if _is_private(alias.name) and source != own:
                    found.add(target)
                module_path = root / Path(*target.split("."))
                if module_path.with_suffix(".py").exists() or (module_path / "__init__.py").exists():
                    modules[alias.asname or alias.name] = target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("course_pkg"):
                    if any(_is_private(part) for part in alias.name.split(".")):
                        found.add(alias.name)
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:  # ``import course_pkg.x`` binds ``course_pkg``
                        modules["course_pkg"] = "course_pkg"
    for node in ast.walk(tree):
        used = _private_use(node)  # (the expression naming a module, the private name used on it)
        chain = used and _dotted(used[0])
        if chain and chain[0] in modules:
            found.add(".".join([modules[chain[0]], *chain[1:], used[1]]))
        target = _string_arg(node, 0)  # monkeypatch.setattr("course_pkg.x._name", value)
        if (target and getattr(node.func, "attr", None) in {"setattr", "delattr"}
                and target.startswith("course_pkg.") and any(map(_is_private, target.split(".")))):
            found.add(target)
    return {(_rel(path, root), name) for name in found}


ATTRIBUTE_BUILTINS = {"setattr", "getattr", "delattr", "hasattr"}  # monkeypatch.setattr, delattr alike


def _string_arg(node, index):
    """The string constant that is argument ``index`` of the call ``node``, else None."""
    args = node.args if isinstance(node, ast.Call) else []
    arg = args[index] if index < len(args) else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _private_use(node):
    """``(expression, '_name')`` where ``node`` is ``expression._name`` or
    ``setattr(expression, '_name', ...)`` (``getattr``, ``delattr``, ``hasattr``,
    ``monkeypatch.setattr`` alike), else None."""
    if isinstance(node, ast.Attribute) and _is_private(node.attr):
        return node.value, node.attr
    name = _string_arg(node, 1)
    if name and _is_private(name) and (getattr(node.func, "id", None) in ATTRIBUTE_BUILTINS
                                       or getattr(node.func, "attr", None) in {"setattr", "delattr"}):
        return node.args[0], name
    return None


def test_private_imports_check_finds_each_kind(tmp_path):
    package = tmp_path / "course_pkg" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "masks.py").write_text("def _token_ids(t):\n    return t\n")
    (package / "gpt.py").write_text(
        "from . import masks\nfrom .masks import _token_ids\nfrom ._layers import Layer\n"
        "import course_pkg.torch._weights\nmasks._token_ids(1)\n")
    assert {name for _, name in private_imports(package / "gpt.py", tmp_path)} == {
        "course_pkg.torch.masks._token_ids", "course_pkg.torch._layers", "course_pkg.torch._weights"}
    test = tmp_path / "tests" / "test_gpt.py"  # a test or a benchmark: the same rule
    test.parent.mkdir()
    test.write_text(
        "import course_pkg.torch.masks\nfrom course_pkg.torch import masks as m\n"
        "course_pkg.torch.masks._A\nsetattr(m, '_B', 1)\nmonkeypatch.setattr(m, '_C', 2)\n"
        "monkeypatch.setattr('course_pkg.torch.masks._D', 3)\nm.public(1)\nsetattr(m, 'public', 1)\n")
    assert {name for _, name in private_imports(test, tmp_path)} == {
        f"course_pkg.torch.masks._{x}" for x in "ABCD"}


def test_no_module_uses_another_modules_private_names():
    """Nor does a test or a benchmark: they use the package as its readers do."""
    found = set().union(*(private_imports(path) for path in _users()))
    assert sorted(found - ALLOWED_PRIVATE) == []


def test_the_allow_list_holds_only_violations_that_remain():
    found = set().union(*(private_imports(path) for path in _users()))
    assert sorted(ALLOWED_PRIVATE - found) == [], "fixed: remove these from ALLOWED_PRIVATE"
    assert sorted(ALLOWED_LONG - set(long_files())) == [], "fixed: remove these from ALLOWED_LONG"


def _counted(path):
    """A file whose lines count: code and text, not the data files of sample_data/ (a line a record)."""
    return path.is_file() and "__pycache__" not in path.parts and "sample_data" not in path.parts


def _lines(path):
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except UnicodeDecodeError:  # a binary file has no lines to count
        return 0


def _is_code(path):
    """Python, shell, or a script that starts with ``#!`` (``.ci/test``); not data (SVG, JSON)."""
    if path.suffix in (".py", ".sh"):
        return True
    try:
        return not path.suffix and path.read_bytes().startswith(b"#!")
    except OSError:
        return False


def _checked_files(root=ROOT):
    """The files the size rules cover: ``course_pkg``'s code and text (not sample_data's records)
    and the code of each of ``CODE_ROOTS``."""
    files = [path for path in (root / "course_pkg").rglob("*") if _counted(path)]
    for name in CODE_ROOTS:
        files += [path for path in (root / name).rglob("*") if _counted(path) and _is_code(path)]
    return sorted(files)


def long_files(root=ROOT):
    """``{file: lines}`` of the checked files over ``MAX_LINES`` lines."""
    return {_rel(path, root): _lines(path) for path in _checked_files(root) if _lines(path) > MAX_LINES}


def long_functions(root=ROOT):
    """``{(file, function): lines}`` of the functions and methods of the checked Python files over
    ``MAX_FUNCTION_LINES`` lines, from ``def`` to the last line of the body."""
    found = {}
    for path in _checked_files(root):
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[(_rel(path, root), node.name)] = lines
    return found


def _plant(root, relative, lines):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def test_size_checks_find_long_files_and_functions_in_each_root(tmp_path):
    """Planted violations: a long file or function in each root is found; data files and short
    functions are not."""
    function = ["def f():"] + [f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1)]  # 60 lines: allowed
    for name in ("course_pkg", *CODE_ROOTS):
        _plant(tmp_path, f"{name}/ok.py", function)
        _plant(tmp_path, f"{name}/long.py", ["x = 1"] * (MAX_LINES + 1))
        _plant(tmp_path, f"{name}/long_function.py", function + ["    return 0"])
    _plant(tmp_path, ".ci/script", ["#!/bin/sh"] + ["true"] * MAX_LINES)
    _plant(tmp_path, "book/figures/figure.svg", ["<g/>"] * (MAX_LINES + 1))  # data: not counted
    roots = ("course_pkg", *CODE_ROOTS)
    assert set(long_files(tmp_path)) == {f"{name}/long.py" for name in roots} | {".ci/script"}
    assert long_functions(tmp_path) == {(f"{name}/long_function.py", "f"): MAX_FUNCTION_LINES + 1
                                        for name in roots}


def test_every_file_has_at_most_500_lines():
    assert {path: n for path, n in long_files().items() if path not in ALLOWED_LONG} == {}


def test_every_function_has_at_most_60_lines():
    found = long_functions()
    assert {key: n for key, n in found.items() if key not in ALLOWED_LONG_FUNCTIONS} == {}
    assert sorted(ALLOWED_LONG_FUNCTIONS - set(found)) == [], "fixed: remove from ALLOWED_LONG_FUNCTIONS"


# A test that asserts how long something took fails on a loaded machine and says nothing about
# the code (issue 39): speed is measured by benchmarks/, which print it. These find such asserts.
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns", "time", "time_ns", "timeit"}
DURATION_WORDS = {"seconds", "secs", "elapsed", "duration", "runtime", "took"}
DURATION_ENDINGS = {"s", "ms", "sec", "time", "wall"}  # step_time, wall_s, took_ms


def _duration_name(name):
    words = name.lower().strip("_").split("_")
    return bool(DURATION_WORDS & set(words)) or words[-1] in DURATION_ENDINGS


def _is_duration(node, timed):
    """Whether ``node`` holds a time: a clock's reading, a name or attribute that says so, a name
    assigned from one (``timed``), or arithmetic on them; not ``len(times)`` and the like."""
    if isinstance(node, ast.Call):
        func = node.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in CLOCKS
    if isinstance(node, ast.Name):
        return node.id in timed or _duration_name(node.id)
    if isinstance(node, ast.Attribute):
        return _duration_name(node.attr)
    if isinstance(node, ast.Subscript):
        key = node.slice
        return (isinstance(key, ast.Constant) and isinstance(key.value, str) and _duration_name(key.value)
                or _is_duration(node.value, timed))
    if isinstance(node, ast.BinOp):
        return _is_duration(node.left, timed) or _is_duration(node.right, timed)
    return False


def _is_number(node):
    """A bound written in the test: ``15``, ``-1``, ``2 * 60``, or a constant's ``LIMIT`` name; not 0
    (``wall_s > 0``: a time was measured, which no load can make false)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and node.value != 0
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return isinstance(node, ast.Name) and node.id.isupper()


def timed_asserts(path, root=ROOT):
    """``[(file, line)]`` of the asserts in ``path`` that compare a time with a number
    (``assert seconds < 15``, ``assert time.perf_counter() - start <= LIMIT``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    timed = set()  # names assigned a time, anywhere in the file
    for _ in range(2):  # a second pass: names assigned from those (took = end - start)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                if _is_duration(node.value, timed):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    timed |= {t.id for t in targets if isinstance(t, ast.Name)}
    return [(_rel(path, root), node.lineno) for node in ast.walk(tree) if isinstance(node, ast.Assert)
            and any(_compares_time_with_number(compare, timed)
                    for compare in ast.walk(node.test) if isinstance(compare, ast.Compare))]


def _compares_time_with_number(compare, timed):
    sides = [compare.left, *compare.comparators]
    return any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
               and (_is_duration(a, timed) and _is_number(b) or _is_duration(b, timed) and _is_number(a))
               for op, a, b in zip(compare.ops, sides, sides[1:]))


def test_timed_assert_check_finds_each_kind(tmp_path):
    """Planted: the asserts on a time are found (by name, by a clock's reading, through a name
    assigned from one, either side, chained); counts, equalities and names that only contain
    ``time`` are not."""
    path = tmp_path / "test_planted.py"
    path.write_text("""import time
from time import perf_counter
LIMIT = 2.0

def test_it():
    start = time.perf_counter()
    took = time.perf_counter() - start
    lag = took * 1000
    assert seconds < 15, "slow"
    assert time.perf_counter() - start <= LIMIT
    assert 5 > elapsed_ms
    assert 0 < lag < 30
    assert result["wall_s"] >= 2 * 60
    assert timing.step_time < 0.5
    assert perf_counter() < 1e9
    assert len(times) == 3 and time_steps == 4 and n_times < 5
    assert history["elapsed"] == [4.0, 8.0]
    assert took and seconds_per_step
    assert tokens < 15 and result["wall_s"] > 0 and 0 <= lag
""", encoding="utf-8")
    assert [line for _, line in timed_asserts(path, tmp_path)] == [9, 10, 11, 12, 13, 14, 15]


def test_no_test_asserts_a_wall_clock_time():
    found = [hit for path in sorted((ROOT / "tests").rglob("*.py")) for hit in timed_asserts(path)]
    assert found == [], "a test asserts how long something took: measure it in benchmarks/ instead"


@pytest.mark.parametrize("path", sorted((PACKAGE / "common").rglob("*.py")),
                         ids=lambda p: p.relative_to(PACKAGE / "common").as_posix())
def test_common_modules_import_no_framework(path):
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported.add((node.module or "").split(".")[0])
    assert not imported & FRAMEWORKS, f"{_rel(path)} imports {sorted(imported & FRAMEWORKS)}"


# course_pkg/common/ is named by concept, not by kind (issue 39): each module after the twin module
# it serves (common/attention.py: the checks of torch/attention.py and tensorflow/attention.py), each
# module of common/huggingface/ after the Hugging Face family it maps (the model_type it reads).
# The modules that serve no single twin module, and why each is here:
COMMON_OTHERS = {
    "__init__": "the package itself: its docstring lists the modules and their roles",
    "arguments": "checks of no one concept that three or more modules use (positive sizes, dropout, ...)",
    "files": "atomic writes and the cache folder: for data, subword, exercises and the checkpoints",
    "config": "a layer's recorded constructor arguments: both twins' base Layer and their schedule",
    "huggingface": "the Hugging Face mappings: a package of one module per family (checked below)",
}


def _model_types(path):
    """The Hugging Face ``model_type`` strings that ``path`` reads: the third argument of each
    ``check_config(config, family, model_type, sizes)`` call."""
    return {node.args[2].value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check_config"
            and len(node.args) > 2 and isinstance(node.args[2], ast.Constant)}


def misnamed_common_modules(root=ROOT):
    """The modules (and packages) of ``course_pkg/common/`` named after no twin module
    (``course_pkg/torch/<name>.py``) and not in ``COMMON_OTHERS``, and the modules of
    ``common/huggingface/`` not named after the ``model_type`` they read."""
    common = root / "course_pkg" / "common"
    allowed = {path.stem for path in (root / "course_pkg" / "torch").glob("*.py")} | set(COMMON_OTHERS)
    modules = [path for path in sorted(common.iterdir())
               if path.suffix == ".py" or (path / "__init__.py").is_file()]
    found = [_rel(path, root) for path in modules if path.stem not in allowed]
    families = sorted((common / "huggingface").glob("*.py"))
    return found + [_rel(path, root) for path in families
                    if path.stem != "__init__" and path.stem not in _model_types(path)]


def test_common_naming_check_finds_a_module_named_by_kind(tmp_path):
    """Planted: modules named by kind (``checks``, a package ``image_checks``) and family modules
    named after no family or another one are found; a twin's name, a listed other, a family's
    ``model_type`` and a folder that is no package are not."""
    _plant(tmp_path, "course_pkg/torch/attention.py", ["x = 1"])
    for name in ("__init__", "attention", "arguments", "checks", "huggingface/__init__",
                 "image_checks/__init__"):
        _plant(tmp_path, f"course_pkg/common/{name}.py", ["x = 1"])
    _plant(tmp_path, "course_pkg/common/__pycache__/checks.cpython-311.pyc", [""])
    _plant(tmp_path, "course_pkg/common/huggingface/bert.py", ['check_config(config, "BERT", "bert", ())'])
    _plant(tmp_path, "course_pkg/common/huggingface/llama_checkpoint.py",
           ['check_config(config, "Llama", "llama", ())'])
    _plant(tmp_path, "course_pkg/common/huggingface/helpers.py", ["x = 1"])
    assert misnamed_common_modules(tmp_path) == [
        "course_pkg/common/checks.py", "course_pkg/common/image_checks",
        "course_pkg/common/huggingface/helpers.py", "course_pkg/common/huggingface/llama_checkpoint.py"]


def test_common_modules_are_named_after_what_they_serve():
    assert misnamed_common_modules() == [], (
        "name a common/ module after the twin module it serves (or a huggingface/ module after its "
        "model_type); a module that serves no single one goes in COMMON_OTHERS with its reason")
