"""The PyTorch backend's reverse_sequence_raw (backends/torch/sequence.py): each sequence reversed within its own
length, padding left in place, with the gradient of a plain gather, on ragged lengths (batch axis before or after
the time axis) and on full ones (the flip)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netcompiler.backends.torch.sequence import SequenceOps  # noqa: E402


def numpy_reverse(x, lengths, seq_axis, batch_axis):
    out = np.array(x)
    for b, length in enumerate(lengths):
        index = [slice(None)] * x.ndim
        index[batch_axis], index[seq_axis] = b, slice(0, length)
        src = [slice(None)] * x.ndim
        src[batch_axis], src[seq_axis] = b, slice(length - 1, None, -1) if length else slice(0, 0)
        out[tuple(index)] = x[tuple(src)]
    return out


@pytest.mark.parametrize("lengths", [[5, 2, 0, 4], [5, 5, 5, 5]])
@pytest.mark.parametrize("seq_axis,batch_axis", [(0, 1), (1, 0)])
def test_values_and_gradient(lengths, seq_axis, batch_axis):
    rng = np.random.RandomState(0)
    shape = [0, 0, 3]
    shape[seq_axis], shape[batch_axis] = 5, 4
    x = torch.tensor(rng.randn(*shape), requires_grad=True)
    weight = torch.tensor(rng.randn(*shape))
    out = SequenceOps.reverse_sequence_raw(x, torch.tensor(lengths, dtype=torch.int32), seq_axis, batch_axis)
    want = numpy_reverse(x.detach().numpy(), lengths, seq_axis, batch_axis)
    np.testing.assert_array_equal(out.detach().numpy(), want)
    (grad,) = torch.autograd.grad((out * weight).sum(), x)
    # d/dx sum(reverse(x) * w) = reverse(w): the same permutation
    np.testing.assert_array_equal(grad.numpy(), numpy_reverse(weight.numpy(), lengths, seq_axis, batch_axis))
    if len(set(lengths)) > 1:
        assert torch.autograd.gradcheck(
            lambda t: SequenceOps.reverse_sequence_raw(t, torch.tensor(lengths), seq_axis, batch_axis), (x,))
