"""Authoring tools: what the course's authors and CI run on a checkout of the repository.

Nothing here is imported by a chapter at run time (a chapter's set-up cell imports
:mod:`course_pkg.notebook`); these tools read and rewrite the book's notebook files, so they
work from a checkout, whose top folder each takes as ``root`` (``--root``), by default the
one holding the current directory, else the checkout ``course_pkg`` itself lives in.

- :mod:`.setup_cell`: the set-up cell every chapter notebook starts with: its text (from
  ``_config.yml``), stamping it into notebooks and checking that they have the current one;
- :mod:`.frameworks`: one framework at a time: tags the cells that need one framework and
  writes their marker comments, with :mod:`.cell_analysis` (the names a cell reads, defines
  and changes), :mod:`.import_cells` (splitting an import cell of both frameworks) and
  :mod:`.notebook_fixes` (the changes particular cells needed for it);
- :mod:`.claims`: the claim lines a notebook's stored outputs print, and which of them a
  single-framework run must print (``book/conftest.py`` in CI, ``tests/test_claims.py``);
- :mod:`.notebook_files`: the checkout's top folder and chapter notebooks, reading and
  writing a notebook's JSON, a cell's source and tags.

The command line::

    python -m course_pkg.authoring check [--root DIR] [NOTEBOOK ...]   # the set-up cells are current
    python -m course_pkg.authoring stamp [--root DIR] [NOTEBOOK ...]   # rewrite them from _config.yml
    python -m course_pkg.authoring frameworks [--check] [NOTEBOOK ...] # split, tag and mark framework cells

Importing any of these modules imports no framework (and needs no checkout: only running
the tools does).
"""
