"""Make a directory that, first on PYTHONPATH, makes one framework uninstalled.

    python .ci/without_framework.py tensorflow DIR   # then PYTHONPATH=DIR:... python ...
    python .ci/without_framework.py torch DIR

DIR gets, for each sys.path directory of this Python that holds the framework, a copy
made of symbolic links to everything else in it, and a ``sitecustomize.py`` that swaps
those directories for their copies when Python starts. For that Python (and the Jupyter
kernels it starts, which inherit PYTHONPATH) the framework is then simply not there:
``import torch`` raises ModuleNotFoundError, ``importlib.util.find_spec("torch")`` is
None and ``importlib.metadata`` finds no distribution, as where it was never installed
(so that packages which look before they import, such as transformers, behave as they
would there). Nothing of the real installation changes.
"""

import re
import sys
from pathlib import Path

BLOCKED = {
    "tensorflow": ("tensorflow", "keras", "tf_keras"),
    "torch": ("torch", "torchvision", "torchaudio", "functorch", "torchgen"),
}


def blocked(name: str, packages) -> bool:
    """Whether a site-packages entry belongs to one of ``packages`` (module or metadata)."""
    stem = re.split(r"[-.]", name, maxsplit=1)[0].lower()
    return stem in packages and (name.lower() == stem or name.endswith((".py", ".dist-info", ".egg-info",
                                                                       ".pth", ".so")) or "-" in name)


def main(framework: str, out: str) -> None:
    packages = BLOCKED[framework]
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    swaps = {}
    for index, entry in enumerate(sys.path):
        path = Path(entry or ".").resolve()
        if not path.is_dir() or path == out:
            continue
        names = [p.name for p in path.iterdir()]
        if not any(blocked(n, packages) for n in names):
            continue
        copy = out / f"site-{index}"
        copy.mkdir(exist_ok=True)
        for name in names:
            if not blocked(name, packages) and not (copy / name).exists():
                (copy / name).symlink_to(path / name)
        swaps[str(path)] = str(copy)
    if not swaps:
        raise SystemExit(f"{framework} is not installed in this Python: nothing to hide")
    (out / "sitecustomize.py").write_text(
        f'"""Written by .ci/without_framework.py: hides {framework} from this Python."""\n'
        "import os\nimport sys\n\n"
        f"_SWAPS = {swaps!r}\n"
        "sys.path[:] = [_SWAPS.get(os.path.realpath(p or '.'), p) for p in sys.path]\n",
        encoding="utf-8")
    print(f"{out}: {framework} hidden from {', '.join(swaps)}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in BLOCKED:
        raise SystemExit(f"usage: python {sys.argv[0]} {{{'|'.join(BLOCKED)}}} DIR")
    main(sys.argv[1], sys.argv[2])
