# shellcheck shell=bash
# The Python environment of the course's commands, in one place: .ci/test, .ci/build-book and
# .ci/compat source this file (bash .ci/python-env.sh alone sets up, installs and says where).
# Source it from a script only: on an error it exits, with a message that says what to do.
#
# The interpreter: $COURSE_PYTHON if set, else `python` on the PATH, else `python3`; it must be
# Python 3.11 to 3.13. The environment, the first rule that applies:
#   1. COURSE_VENV=1: the checkout's .venv (made if missing); COURSE_VENV=0: the interpreter's own.
#   2. Inside an environment already: an active virtual environment ($VIRTUAL_ENV), conda
#      ($CONDA_PREFIX), an interpreter that is a virtual environment's, CI ($CI set, as CI
#      services do; CI runs outside any venv with the pyenv Python), Colab ($COLAB_RELEASE_TAG):
#      install into it, as a bare `pip install` would.
#   3. The checkout's .venv exists: reuse it.
#   4. The interpreter is "externally managed" (PEP 668: an EXTERNALLY-MANAGED file in its
#      standard library, as Debian 12+, Ubuntu 23.04+ and Homebrew mark their Python): pip would
#      refuse to install there, so make the checkout's .venv with it (python3 -m venv) and use it.
#   5. Otherwise (pyenv, python.org's installer, a Python built by hand): the interpreter's own.
# With a .venv, its bin/ goes first on the PATH and VIRTUAL_ENV is set, as its activate script does.
#
# What it installs (once per command: a nested source finds $COURSE_ENV_READY and installs
# nothing): COURSE_INSTALL=all (default) requirements.txt, then the package in editable mode
# without its dependencies; COURSE_INSTALL=package the package alone with its dependencies
# (NumPy, regex: the cheap newcomer job of .ci/run); COURSE_INSTALL=none nothing.
# Afterwards $PYTHON is the environment's interpreter (an absolute path): the commands run it.

if [ "${BASH_SOURCE[0]}" = "$0" ]; then  # run, not sourced
    set -euo pipefail
fi
_course_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

_course_fail() {
    echo "==> ERROR: $*" >&2
    exit 1
}

# "VERSION IN_VENV EXTERNALLY_MANAGED EXECUTABLE" of interpreter $1, or nothing if it does not run
_course_probe() {
    "$1" - <<'EOF' 2>/dev/null
import os
import sys
import sysconfig

managed = os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
print("%d.%d.%d" % sys.version_info[:3], int(sys.prefix != sys.base_prefix), int(managed), sys.executable)
EOF
}

# checks that interpreter $1 ($2: what it is, for the message) is Python 3.11 to 3.13
_course_check_version() {
    local version=$3
    case "$version" in
        3.11.*|3.12.*|3.13.*) ;;
        *) _course_fail "$2 ($1) is Python $version; the course needs Python 3.11 to 3.13: install one" \
                        "(python.org, pyenv, your system's packages) and run again with it as \`python\`" \
                        "or \`python3\` first on the PATH, or with COURSE_PYTHON=/path/to/python3.12" ;;
    esac
}

course_python_env() {
    local py found venv="$_course_root/.venv" where
    if [ -n "${COURSE_PYTHON:-}" ]; then
        py=$COURSE_PYTHON
    elif command -v python >/dev/null 2>&1; then
        py=$(command -v python)
    elif command -v python3 >/dev/null 2>&1; then
        py=$(command -v python3)
    else
        _course_fail "neither \`python\` nor \`python3\` is on the PATH: install Python 3.11 to 3.13" \
                     "(python.org, pyenv, your system's packages), or set COURSE_PYTHON=/path/to/python3.12"
    fi
    found=$(_course_probe "$py") || true
    [ -n "$found" ] || _course_fail "$py does not run as a Python interpreter (set COURSE_PYTHON=/path/to/python3.12)"
    # shellcheck disable=SC2086
    set -- $found  # version in_venv managed executable
    _course_check_version "$py" "the Python found" "$1"
    local version=$1 in_venv=$2 managed=$3 executable=$4 use_venv=0
    if [ "${COURSE_VENV:-}" = 1 ]; then
        use_venv=1 where="the checkout's .venv (COURSE_VENV=1)"
    elif [ "${COURSE_VENV:-}" = 0 ]; then
        where="the interpreter's own environment (COURSE_VENV=0)"
    elif [ -n "${VIRTUAL_ENV:-}" ]; then
        where="the active virtual environment $VIRTUAL_ENV"
    elif [ -n "${CONDA_PREFIX:-}" ]; then
        where="the active conda environment $CONDA_PREFIX"
    elif [ "$in_venv" = 1 ]; then
        where="the virtual environment of $py"
    elif [ -n "${CI:-}" ]; then
        where="the running Python's own environment (CI=$CI)"
    elif [ -n "${COLAB_RELEASE_TAG:-}" ]; then
        where="Colab's Python"
    elif [ -e "$venv" ]; then
        use_venv=1 where="the checkout's .venv"
    elif [ "$managed" = 1 ]; then
        use_venv=1 where="the checkout's .venv, new: $py is externally managed (PEP 668), pip installs nothing there"
    else
        where="the running Python's own environment ($py is not externally managed; COURSE_VENV=1 makes a .venv instead)"
    fi
    if [ "$use_venv" = 1 ]; then
        if [ ! -e "$venv" ]; then
            echo "==> $py -m venv .venv   (Python $version; the course installs into $venv)"
            if ! "$py" -m venv "$venv"; then
                rm -rf "$venv"
                _course_fail "$py -m venv failed: on Debian or Ubuntu install the venv module" \
                             "(sudo apt-get install python3-venv), then run again"
            fi
        fi
        [ -x "$venv/bin/python" ] || _course_fail "$venv has no bin/python: remove that folder and run again"
        found=$(_course_probe "$venv/bin/python") || true
        [ -n "$found" ] || _course_fail "$venv/bin/python does not run: remove $venv and run again"
        # shellcheck disable=SC2086
        set -- $found
        _course_check_version "$venv/bin/python" "the checkout's .venv" "$1"
        version=$1 executable=$venv/bin/python
        export VIRTUAL_ENV=$venv
        export PATH="$venv/bin:$PATH"
    fi
    export PYTHON=$executable
    echo "==> Python $version at $PYTHON: installing into $where"
    if [ "$use_venv" = 1 ]; then
        echo "    (to run a notebook: source .venv/bin/activate && jupyter lab)"
    fi
}

course_install() {
    local mode=${COURSE_INSTALL:-all}
    if [ "${COURSE_ENV_READY:-}" = "$PYTHON" ] || [ "$mode" = none ]; then
        return 0
    fi
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
    case "$mode" in
        all)
            echo "==> python -m pip install -q -r requirements.txt && python -m pip install -q -e . --no-deps"
            (cd "$_course_root" && "$PYTHON" -m pip install -q -r requirements.txt \
                && "$PYTHON" -m pip install -q -e . --no-deps) ;;
        package)
            echo "==> python -m pip install -q -e .   (the package and its dependencies only)"
            (cd "$_course_root" && "$PYTHON" -m pip install -q -e .) ;;
        *) _course_fail "COURSE_INSTALL=$mode: choose all, package or none" ;;
    esac
    export COURSE_ENV_READY=$PYTHON
}

if [ "${COURSE_ENV_READY:-}" ] && [ -x "$COURSE_ENV_READY" ]; then
    export PYTHON=$COURSE_ENV_READY  # set up by the command that runs this one
else
    course_python_env
fi
course_install

if [ "${BASH_SOURCE[0]}" = "$0" ]; then  # run, not sourced
    (cd / && "$PYTHON" -c "import course_pkg, sys; print('==> course_pkg', course_pkg.__version__, 'importable by', sys.executable)")
fi
