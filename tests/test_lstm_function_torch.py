"""The PyTorch LSTM Function with its hand-written backward (netcompiler/backends/torch/lstm_function.py) against
the plain loop differentiated by autograd, on ragged lengths (outputs masked after each sequence's end, final
states at each sequence's last frame, as netcompiler/frontend/rec.py uses them), and by gradcheck."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netcompiler.backends.torch.lstm_function import LSTMFunction, lstm_function_applies  # noqa: E402
from netcompiler.backends.torch.recurrent import RecurrentOps  # noqa: E402


def make_args(steps, batch, n, dtype=torch.float32, seed=0, shared_state=False):
    rng = np.random.RandomState(seed)
    state_shape = (1, n) if shared_state else (batch, n)
    arrays = [rng.randn(steps, batch, 4 * n), rng.randn(n, 4 * n) * 0.3, rng.randn(*state_shape) * 0.5,
              rng.randn(*state_shape) * 0.5]
    args = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    weights = [torch.tensor(rng.randn(*shape), dtype=dtype) for shape in ((n,), (batch, n), (batch, n))]
    return args, weights


def ragged_objective(lstm, xw, rec_weight, h0, c0, lengths, weights, use_cells=True):
    batch = xw.shape[1]
    h0, c0 = h0.expand(batch, -1), c0.expand(batch, -1)  # a shared initial state, as flat_state broadcasts it
    hs, cells = lstm(xw, rec_weight, h0, c0)
    mask = (torch.arange(xw.shape[0])[:, None] < lengths[None, :]).to(xw.dtype)  # [T, N]
    out = (hs * mask[:, :, None] * weights[0]).sum()

    def final(states, initial):  # the state after each sequence's last frame; the initial one for an empty one
        padded = torch.cat([initial[None], states])
        return padded[lengths, torch.arange(batch)]

    out = out + (final(hs, h0) * weights[1]).sum()
    return out + (final(cells, c0) * weights[2]).sum() if use_cells else out


@pytest.mark.parametrize("use_cells", [True, False])
@pytest.mark.parametrize("shared_state", [False, True])
def test_gradients_match_autograd_of_the_loop_on_ragged_lengths(use_cells, shared_state):
    lengths = torch.tensor([9, 4, 1, 0, 7])
    results = []
    for lstm in (LSTMFunction.apply, RecurrentOps.lstm_autograd):
        args, weights = make_args(9, 5, 6, shared_state=shared_state)
        out = ragged_objective(lstm, *args, lengths, weights, use_cells)
        results.append((out.item(), torch.autograd.grad(out, args)))
    (got_out, got), (want_out, want) = results
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5)
    for name, g, w in zip(("xw", "rec_weight", "state_h", "state_c"), got, want):
        assert w.abs().max() > 1e-3, name  # the comparison means something
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert torch.all(got[0][4:, 1] == 0) and torch.all(got[0][:, 3] == 0)  # nothing after a sequence's end


def test_gradcheck_in_float64():
    args, weights = make_args(4, 3, 2, dtype=torch.float64, seed=3)
    lengths = torch.tensor([4, 2, 3])
    assert torch.autograd.gradcheck(lambda *a: ragged_objective(LSTMFunction.apply, *a, lengths, weights), args)


def test_no_steps():
    args, weights = make_args(0, 2, 3)
    out = ragged_objective(LSTMFunction.apply, *args, torch.tensor([0, 0]), weights)
    grads = torch.autograd.grad(out, args)
    assert grads[0].shape == (0, 2, 12) and torch.all(grads[1] == 0)
    np.testing.assert_allclose(grads[2].numpy(), weights[1].numpy())


def test_the_autograd_loop_is_used_under_bfloat16_autocast():
    args, _ = make_args(2, 2, 3)
    assert lstm_function_applies(*args)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not lstm_function_applies(*args)
