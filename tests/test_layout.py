"""The package's layout, read from its source (no import): each module keeps its private names
to itself, no file grows past 500 lines, and the framework-free code in ``course_pkg/common/``
imports no framework."""

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


def _rel(path, root=ROOT):
    return path.relative_to(root).as_posix()


def private_imports(path, root=ROOT):
    """``(file, 'module.name')`` for every private name of another course module used by ``path``:
    ``from X import _name``, an import of a private module (``X._mod``) and ``module._name`` on a
    course module bound by an import."""
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
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and _is_private(node.attr)):
            found.add(f"{modules[node.value.id]}.{node.attr}")
    return {(_rel(path, root), name) for name in found}


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


def test_no_module_uses_another_modules_private_names():
    found = set().union(*(private_imports(path) for path in _sources()))
    assert sorted(found - ALLOWED_PRIVATE) == []


def test_the_allow_list_holds_only_violations_that_remain():
    found = set().union(*(private_imports(path) for path in _sources()))
    assert sorted(ALLOWED_PRIVATE - found) == [], "fixed: remove these from ALLOWED_PRIVATE"
    long = {_rel(path) for path in PACKAGE.rglob("*") if _counted(path) and _lines(path) > MAX_LINES}
    assert sorted(ALLOWED_LONG - long) == [], "fixed: remove these from ALLOWED_LONG"


def _counted(path):
    """A file whose lines count: code and text, not the data files of sample_data/ (a line a record)."""
    return path.is_file() and "__pycache__" not in path.parts and "sample_data" not in path.parts


def _lines(path):
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except UnicodeDecodeError:  # a binary file has no lines to count
        return 0


def test_every_file_has_at_most_500_lines():
    files = [path for path in PACKAGE.rglob("*") if _counted(path)]
    long = {_rel(path): _lines(path) for path in files if _lines(path) > MAX_LINES}
    assert {path: n for path, n in long.items() if path not in ALLOWED_LONG} == {}


@pytest.mark.parametrize("path", sorted((PACKAGE / "common").glob("*.py")), ids=lambda p: p.name)
def test_common_modules_import_no_framework(path):
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported.add((node.module or "").split(".")[0])
    assert not imported & FRAMEWORKS, f"{_rel(path)} imports {sorted(imported & FRAMEWORKS)}"
