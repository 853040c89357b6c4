"""Atomic file writes: a file is replaced whole or not at all.

Every file the package writes (vocabularies, the num2words cache, checkpoints,
the exercise builds, the notebooks it edits) goes through :func:`atomic_open`
or :func:`atomic_write`: the content is written to a temporary file in the
target's folder, flushed and synced to disk, then renamed over the target with
``os.replace``, which POSIX and Windows do in one step. Whatever interrupts the
write (an exception, a full disk, ``KeyboardInterrupt``) removes the temporary
file and leaves the previous file byte-identical; a reader always finds the old
file or the new one, never half of one.

:func:`cache_folder` says where the package keeps what it caches on disk (the words of
``num2words``, a downloaded corpus).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets

__all__ = ["atomic_open", "atomic_write", "cache_folder", "make_folder", "sync_folder", "temporary_name",
           "write_error"]


def cache_folder():
    """The folder of the package's disk caches, a :class:`pathlib.Path`, or ``None`` if disabled.

    ``$COURSE_PKG_CACHE_DIR`` chooses it (set but empty: no disk cache); the default is
    ``$XDG_CACHE_HOME/course_pkg`` or ``~/.cache/course_pkg``.
    """
    from pathlib import Path

    folder = os.environ.get("COURSE_PKG_CACHE_DIR")
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "course_pkg")
    return Path(folder) if folder else None


def temporary_name(path) -> str:
    """A fresh name beside ``path`` for a temporary file: ``.<name>.<random>.tmp``."""
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")


def make_folder(folder, target=None) -> None:
    """Create ``folder`` and its parents; an ``OSError`` that names ``target`` (default: ``folder``).

    A parent that is a file, a folder without write permission and the like
    raise the usual ``OSError`` subclass (``NotADirectoryError``,
    ``PermissionError``...), with a message that says what was being written.
    """
    folder = os.path.abspath(os.fspath(folder))
    target = folder if target is None else os.fspath(target)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        blocker = folder
        while blocker != os.path.dirname(blocker) and not os.path.lexists(blocker):
            blocker = os.path.dirname(blocker)
        if os.path.lexists(blocker) and not os.path.isdir(blocker):
            raise NotADirectoryError(errno.ENOTDIR, f"cannot write {target}: {blocker} is a file, "
                                     "not a folder") from None
        raise type(err)(err.errno, f"cannot write {target}: {err.strerror} ({err.filename})") from None


# TensorFlow's file errors (``tf.errors``, by class name) and the errno of the OSError they stand for.
_TF_ERRNO = {"PermissionDeniedError": errno.EACCES, "NotFoundError": errno.ENOENT,
             "AlreadyExistsError": errno.EEXIST, "ResourceExhaustedError": errno.ENOSPC}


def write_error(path, kind, detail) -> OSError:
    """The ``OSError`` (``PermissionError``...) for a failed write of ``path`` that a library reported
    as error class ``kind`` (``"PermissionDeniedError"``) with message ``detail``: the message reads
    as :func:`atomic_open`'s, ``cannot write <path>: Permission denied (<path>)``."""
    path = os.fspath(path)
    code = _TF_ERRNO.get(kind)
    if code is None:
        lines = str(detail).strip().splitlines()
        return OSError(f"cannot write {path}: {lines[0] if lines else kind} ({path})")
    return OSError(code, f"cannot write {path}: {os.strerror(code)} ({path})")


def sync_folder(folder) -> None:
    """Make a rename in ``folder`` durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows, or no permission to read the folder
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path, mode="w", encoding=None, newline=None):
    """Open a temporary file beside ``path`` that replaces ``path`` when the block ends without error.

    Creates ``path``'s folder if needed. The new file gets the permissions
    that ``open(path, "w")`` would give it (``0o666`` less the umask).

    Args:
        path: the file to write.
        mode: ``"w"`` (text) or ``"wb"`` (bytes).
        encoding, newline: as for :func:`open`, in text mode (default encoding: UTF-8).

    Raises:
        OSError: ``path``'s folder cannot be created or written (the message
            names ``path``); or whatever the block raises, after the
            temporary file is removed and ``path`` left as it was.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    make_folder(folder, path)
    temporary = temporary_name(path)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as err:
        raise type(err)(err.errno, f"cannot write {path}: {err.strerror} ({folder})") from None
    file = None
    try:
        if mode == "wb":
            file = os.fdopen(fd, "wb")
        else:
            file = os.fdopen(fd, "w", encoding=encoding or "utf-8", newline=newline)
        with file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if file is None:  # fdopen failed: the descriptor is still open
            os.close(fd)
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    sync_folder(folder)


def atomic_write(path, data, encoding="utf-8") -> None:
    """Replace the file ``path`` by ``data`` (``str``, written in ``encoding``, or ``bytes``) atomically."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        with atomic_open(path, "wb") as file:
            file.write(data)
    else:
        with atomic_open(path, "w", encoding=encoding) as file:
            file.write(data)
