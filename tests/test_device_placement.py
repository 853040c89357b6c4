"""PyTorch models on an accelerator take token ids from anywhere: lists, arrays, CPU tensors.

A learner's model lives where the Trainer put it (CUDA on a Colab GPU), while the course hands
it sources built on the CPU (``translate``, ``greedy_decode``, ``beam_search``, ``model(src,
tgt)``). The GPU check (benchmarks/gpu_check.py) first found chapters 1, 2, 5, 6 and 8 failing
on an H100 ("Expected all tensors to be on the same device"): the decoders kept the source on
the CPU. The probe tests run everywhere (a parameter on PyTorch's ``meta`` device stands for an
accelerator); the CUDA tests run where PyTorch sees a GPU and compare with the same model on
the CPU.
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from course_pkg import torch as cpt  # noqa: E402

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="PyTorch sees no CUDA device")


class Seen(Exception):
    """Raised by the probe with the device its ``start_decoding`` was given."""


class Probe(torch.nn.Module):
    """A decodable model whose weights live on the ``meta`` device: it reports where the source went."""

    target_vocab_size = 5
    max_len = 4

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1, device="meta"))

    def start_decoding(self, src_tokens):
        raise Seen(src_tokens.device)


@pytest.mark.parametrize("decode", ["greedy_decode", "beam_search"])
@pytest.mark.parametrize("source", ["list", "array", "cpu tensor"])
def test_the_decoders_hand_the_source_to_the_model_on_its_weights_device(decode, source):
    src = [[3, 4, 2]]
    src = {"list": src, "array": np.array(src), "cpu tensor": torch.tensor(src)}[source]
    with pytest.raises(Seen) as seen:
        getattr(cpt, decode)(Probe(), src)
    assert seen.value.args[0].type == "meta"


def models():
    torch.manual_seed(0)
    return {
        "Seq2Seq": cpt.Seq2Seq(12, 12, 8, 16),
        "Seq2Seq, Bahdanau attention": cpt.Seq2Seq(12, 12, 8, 16, attention="bahdanau"),
        "Seq2Seq, Luong (general) attention": cpt.Seq2Seq(12, 12, 8, 16, attention="luong_general"),
        "Transformer": cpt.Transformer(num_layers=2, d_model=16, num_heads=2, dff=32, input_vocab_size=12,
                                       target_vocab_size=12, max_len=8, dropout=0.0),
    }


@CUDA
@pytest.mark.parametrize("name", list(models()))
def test_a_model_on_cuda_takes_cpu_tokens_and_agrees_with_the_cpu(name):
    cpu = models()[name].eval()
    gpu = copy.deepcopy(cpu).to("cuda")
    src = np.array([[5, 6, 7, 2], [8, 9, 2, 0]])
    tgt = np.array([[1, 5, 6], [1, 7, 0]])
    with torch.no_grad():
        expected, got = cpu(src, tgt), gpu(src, tgt)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), atol=1e-4)
    for decode in (lambda m, s: cpt.greedy_decode(m, s, max_len=5),
                   lambda m, s: cpt.beam_search(m, s, beam_size=3, max_len=5)):
        tokens = decode(gpu, torch.as_tensor(src))  # a CPU tensor
        assert tokens.device.type == "cuda"
        assert tokens.cpu().tolist() == decode(cpu, src).tolist()


@CUDA
def test_translate_and_the_trainer_run_on_cuda():
    from course_pkg.data import SPECIAL_TOKENS, Vocab

    vocab = Vocab([*SPECIAL_TOKENS, "un", "deux", "trois", "quatre", "one", "two", "three", "four"])  # 12
    model = models()["Transformer"]
    trainer = cpt.Trainer(model, warmup_steps=10, seed=0)  # puts the model on CUDA
    assert trainer.device.type == "cuda"
    src = np.array([[4, 5, 2]])
    trainer.train_step(src, np.array([[1, 7, 8]]), np.array([[7, 8, 2]]))
    [translation] = cpt.translate(model, ["un deux"], vocab, vocab, max_len=4)
    assert isinstance(translation, str)
