"""The framework-free halves that both twins share (pure Python and NumPy).

``course_pkg.torch`` and ``course_pkg.tensorflow`` turn their tensors' static facts (shapes,
dtype names, Python numbers) into plain values and call these modules, so that the two
implementations check, default, report and write files alike, with the very same messages.
``course_pkg.data``, ``course_pkg.subword`` and ``course_pkg.exercises`` use them too. Nothing
here imports a framework (``tests/test_imports.py`` and ``tests/test_layout.py`` check it);
anything in the package may import these modules, and they import nothing of the package outside
this folder but :mod:`course_pkg.interop` (the loaders of :mod:`~course_pkg.common.huggingface`
set a built model's weights by their canonical names).

The modules are named by concept: each after the twin module it serves (``common/attention.py``
serves ``torch/attention.py`` and ``tensorflow/attention.py``); a check that a second module uses
too stays with its main user, which the other imports it from. ``tests/test_layout.py`` holds
every module to a twin module's name, or to this short list of the others:

- :mod:`~course_pkg.common.arguments`: checks of no one concept that three or more modules use
  (positive sizes, dropout, flags, choices, epsilons, activations, pad ids, batch sizes, counts);
- :mod:`~course_pkg.common.files`: atomic file writes, the package's cache folder;
- :mod:`~course_pkg.common.config`: a layer's configuration, its constructor's recorded arguments;
- :mod:`~course_pkg.common.huggingface`: Hugging Face checkpoints mapped to the course's weight names,
  a package: its ``__init__`` the machinery every family shares (``Reader``, ``check_config``,
  ``build_from_huggingface``), then one module per family, named after its ``model_type``:
  :mod:`~course_pkg.common.huggingface.bert`, :mod:`~course_pkg.common.huggingface.gpt2`,
  :mod:`~course_pkg.common.huggingface.vit`, :mod:`~course_pkg.common.huggingface.llama`,
  :mod:`~course_pkg.common.huggingface.marian`.

Those named after a twin module:

- :mod:`~course_pkg.common.tokens`: token ids' dtype, rank, range and length;
- :mod:`~course_pkg.common.masks`: a mask that fits the attention scores, a (batch, seq) padding mask;
- :mod:`~course_pkg.common.attention`: heads, masks' dtype, query/key/value shapes and dtypes,
  grouped-query heads, rotary positions in attention;
- :mod:`~course_pkg.common.positional`: a position table's sizes, a first position;
- :mod:`~course_pkg.common.normalization`: RMSNorm's input width;
- :mod:`~course_pkg.common.rotary`: rotary embeddings' base, head width, positions and shapes;
- :mod:`~course_pkg.common.decoder`: the encoder output a cross-attention needs;
- :mod:`~course_pkg.common.transformer`: a ``(src_tokens, tgt_tokens)`` pair given as one argument;
- :mod:`~course_pkg.common.rnn_attention`: Luong's scores and widths, the RNN attentions' mask message;
- :mod:`~course_pkg.common.seq2seq`: the RNN encoder-decoder's attention types, states, lengths;
- :mod:`~course_pkg.common.bert`: BERT's segment ids;
- :mod:`~course_pkg.common.causal_lm`: what GPT's and Llama's ``generate`` do alike in both frameworks;
- :mod:`~course_pkg.common.heads`: the hidden states and positions a classification head reads;
- :mod:`~course_pkg.common.vit`: the vision models' images, patches, pooling and stem (chapter 9);
- :mod:`~course_pkg.common.losses`: labels that fit the logits, label smoothing;
- :mod:`~course_pkg.common.schedule`: the Noam schedule's factor, Adam's constants;
- :mod:`~course_pkg.common.decoding`: greedy and beam search's defaults, length penalty, state reordering;
- :mod:`~course_pkg.common.trainer`: precision, budgets, the fit loop, its progress bar and history;
- :mod:`~course_pkg.common.checkpoint`: the trainers' checkpoint format, its checks and errors.
"""
