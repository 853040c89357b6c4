"""The framework-free halves that both twins share (pure Python and NumPy).

``course_pkg.torch`` and ``course_pkg.tensorflow`` turn their tensors' static facts (shapes,
dtype names, Python numbers) into plain values and call these modules, so that the two
implementations check, default, report and write files alike, with the very same messages.
``course_pkg.data`` and ``course_pkg.exercises`` use them too. Nothing here imports a framework
(``tests/test_imports.py`` and ``tests/test_layout.py`` check it); anything in the package may
import these modules, and they import nothing of the package outside this folder but
:mod:`course_pkg.interop` (the loaders of :mod:`~course_pkg.common.huggingface` set a built
model's weights by their canonical names).

- :mod:`~course_pkg.common.checks`: argument checks and their messages, shared constants;
- :mod:`~course_pkg.common.image_checks`: the vision models' checks (chapter 9);
- :mod:`~course_pkg.common.rnn_checks`: the RNN encoder-decoder's checks and choices (chapters 1-2);
- :mod:`~course_pkg.common.rotary_checks`: the checks of Llama's components (RMSNorm, rotary positions,
  grouped-query attention);
- :mod:`~course_pkg.common.training`: the trainers' constants, config comparison, progress bar, fit loop;
- :mod:`~course_pkg.common.generation`: what GPT's ``generate`` does alike in both frameworks;
- :mod:`~course_pkg.common.search`: greedy and beam search's defaults, length penalty, state reordering;
- :mod:`~course_pkg.common.files`: atomic file writes, the package's cache folder;
- :mod:`~course_pkg.common.config`: a layer's configuration, its constructor's recorded arguments;
- :mod:`~course_pkg.common.huggingface`: Hugging Face checkpoints mapped to the course's weight names.
"""
