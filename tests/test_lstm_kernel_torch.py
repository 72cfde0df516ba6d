"""The PyTorch backend's LSTM through aten's kernel (netcompiler/backends/torch/lstm_kernel.py) against the Python
loop it replaces (x W + b, then `RecurrentOps.lstm_autograd`), on ragged lengths (with an empty sequence) and on
full ones: h of every valid frame, zero after each sequence's end, the final states at each sequence's last frame
(the initial state for an empty sequence), and the gradients of all inputs."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netcompiler.backends.torch.lstm_kernel import lstm_sequences  # noqa: E402
from netcompiler.backends.torch.recurrent import RecurrentOps  # noqa: E402


def make_args(steps, batch, n, dim, dtype=torch.float32, seed=0, shared_state=False):
    rng = np.random.RandomState(seed)
    state_shape = (1, n) if shared_state else (batch, n)
    shapes = [(steps, batch, dim), (dim, 4 * n), (4 * n,), (n, 4 * n), state_shape, state_shape]
    scales = [1.0, 0.4, 0.3, 0.3, 0.5, 0.5]
    return [torch.tensor(rng.randn(*s) * k, dtype=dtype, requires_grad=True) for s, k in zip(shapes, scales)]


def kernel(*args):
    return lstm_sequences(*args, loop=RecurrentOps.lstm_raw)


def loop_reference(x, ff_weight, bias, rec_weight, h0, c0, lengths):
    """What frontend/rec.py computes without the kernel: the loop over all frames, masked; states gathered."""
    hs, cells = RecurrentOps.lstm_autograd(torch.matmul(x, ff_weight) + bias, rec_weight, h0, c0)
    mask = (torch.arange(x.shape[0])[:, None] < lengths[None, :])[:, :, None]
    rows = torch.arange(x.shape[1])
    final = [torch.cat([initial[None], states])[lengths, rows] for states, initial in ((hs, h0), (cells, c0))]
    return torch.where(mask, hs, 0.0), final[0], final[1]


@pytest.mark.parametrize("lengths", [[9, 4, 1, 0, 7], [9, 9, 9, 9, 9], [3, 9, 5, 2, 8]])
@pytest.mark.parametrize("shared_state", [False, True])
def test_kernel_matches_the_loop(lengths, shared_state):
    lengths = torch.tensor(lengths)
    rng = np.random.RandomState(1)
    weights = [torch.tensor(rng.randn(*s), dtype=torch.float32) for s in ((9, 5, 6), (5, 6), (5, 6))]
    results = []
    for lstm in (kernel, loop_reference):
        args = make_args(9, 5, 6, 3, shared_state=shared_state)
        h0, c0 = (a.expand(5, -1) for a in args[4:])  # a shared initial state, as flat_state broadcasts it
        outputs = lstm(*args[:4], h0, c0, lengths)
        assert outputs is not None
        objective = sum((out * w).sum() for out, w in zip(outputs, weights))
        results.append(([o.detach() for o in outputs], torch.autograd.grad(objective, args)))
    (got, got_grads), (want, want_grads) = results
    for name, g, w in zip(("hs", "h", "c"), got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    for seq, length in enumerate(lengths.tolist()):
        assert torch.all(got[0][length:, seq] == 0)  # nothing after a sequence's end
    for name, g, w in zip(("x", "W", "b", "W_re", "h0", "c0"), got_grads, want_grads):
        assert w.abs().max() > 1e-3, name  # the comparison means something
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_an_int_length_and_float64():
    args = make_args(4, 3, 2, 5, dtype=torch.float64, seed=3)
    hs, h, c = kernel(*args, 4)
    want = loop_reference(*args, torch.tensor([4, 4, 4]))
    for g, w in zip((hs, h, c), want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12)


def test_not_used_where_it_does_not_apply():
    args = make_args(4, 3, 2, 5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert kernel(*args, 4) is None  # bfloat16 autocast: the loop
    assert kernel(*make_args(0, 3, 2, 5), 0) is None  # no frames
    assert kernel(*(a.double() if i == 3 else a for i, a in enumerate(args)), 4) is None  # mixed dtypes


def test_training_after_a_first_run_in_inference_mode():
    """The gate re-layout's index (made on first use and kept) must not be an inference tensor: a backward pass
    after a first run under `torch.inference_mode` (e.g. a forward job before training) saves it."""
    from netcompiler.backends.torch.lstm_kernel import _ifco_order

    _ifco_order.cache_clear()
    args = make_args(5, 3, 4, 6)
    with torch.inference_mode():
        kernel(*[a.detach() for a in args], torch.tensor([5, 3, 1]))
    hs, h, c = kernel(*args, torch.tensor([5, 3, 1]))
    (hs.sum() + h.sum() + c.sum()).backward()
    assert all(a.grad is not None for a in args[1:4])
