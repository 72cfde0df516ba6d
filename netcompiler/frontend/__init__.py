"""The op layer (`import netcompiler.frontend as rf`): operations on Tensors addressed by Dim.

Each op checks its arguments' templates, computes the output template, and
calls the backend of its Tensors' raw values (`netcompiler/backends/`). Ops
that cross a dynamic Dim mask its padded frames. Names follow RETURNN's
frontend (`rf.matmul(a, b, reduce=dim)`, `rf.reduce(x, mode="max", axis=dim)`,
`rf.softmax(x, axis=dim)`).

On top of the ops, the model-building API of RETURNN's frontend: `rf.Module`, `rf.Parameter`, `rf.init`,
containers, `rf.Linear`, `rf.Embedding`, convolutions, normalization, `rf.LSTM`, ... (parameters live on the
backend `rf.select_backend_torch()` / `rf.select_backend_tf()` chose, or the run context's).
"""

from ..tensor import Data, Dim, Tensor, batch_dim
from . import math as _math
from .array import (
    concat, convert_to_tensor, cumsum, dim_size_tensor, expand_dim, frames_in, full, gather, masked, merge_dims, ones,
    pad, permute, range_over_dim, replace_dim, reverse_sequence, sequence_mask, shape_of, slice, split, split_dims,
    one_hot, pack_padded, squeeze, stack, zeros, zeros_like,
)
from .beam import backtrack, beam_step, best_rows, gather_batch, initial_scores, sort_beams, tile_batch
from .conv import conv, pool
from .loops import (
    assert_equal, cond, map_tensors, scan, step_frame, step_frames, step_stack, step_stack_stack, step_stack_write, while_loop,
    with_dependencies,
)
from .loss import (
    binary_cross_entropy, collapse_repeated, cross_entropy, ctc_decode, ctc_loss, edit_distance, label_smoothing,
    softmax_cross_entropy_with_logits,
)
from .math import (
    ACTIVATIONS, abs, activation, cast, clip_by_value, combine, compare, cos, elu, erf, exp, gelu, is_finite, log,
    filtered_gradient, log_sigmoid, logical_not, maximum, minimum, neg, relu, rsqrt, scaled_gradient, sigmoid, sign, silu, sin,
    softplus, sqrt, square, stop_gradient, tanh, where,
)
from .math import synthetic_gradient
from .nn import dropout, random, random_normal, random_uniform
from .parameters import create_parameter, parameter_assign
from .reduce import (
    REDUCE_MODES, log_softmax, masked_dims, matmul, moments, reduce, reduce_argmax, reduce_max, reduce_mean, reduce_min,
    reduce_sum, softmax,
)
from .rec import gru, lstm, rnn
from .rec_cell import gru_step, lstm_step, rhn, rhn_step, rnn_step, zoneout_lstm, zoneout_lstm_step
from . import run_ctx as _run_ctx
from .run_ctx import MarkedLoss, RunContext, SizeTable, current_run_ctx, get_run_ctx
from .sequence import take_frames, window
from .shape import merge_dims_packed
from .packing import merge_padded, sizes_along_padded, split_padded, unpack_padded
from .user_code import (
    UserCodeResultError, UserData, raw_for_user_code, tensor_from_user_code, user_code_globals, user_data,
)

from . import init
from .activations import (
    ceil, expm1, floor, gating, identity, log1p, relu_square, round, safe_log, selu, swish,
)
from .attention import SelfAttention, dot_attention
from .backend_select import select_backend, select_backend_tf, select_backend_torch, selected_backend
from .container import ModuleList, ParameterList, Sequential, sequential
from .conv_modules import Conv1d, Conv2d, Conv3d, TransposedConv1d, TransposedConv2d
from .dropout_module import Dropout, dropout_broadcast_default
from .linear import Embedding, Linear
from .model_parameter import Parameter
from .module import Functional, Module
from .normalization import (
    BatchNorm, GroupNorm, LayerNorm, Normalize, RMSNorm, layer_norm, normalize, rms_norm,
)
from .pooling import max_pool, max_pool1d, pool1d, pool2d, pool3d
from .random_state import get_random_seed, set_random_seed
from .rec_modules import LSTM, LstmState, single_step_dim
from .state import State
from .conv_transposed import transposed_conv

from .side_effects import host_callback
Tensor._ops = _math  # the operators of Tensor (a + b, a < b, -a) run through the op layer
Tensor._marks = _run_ctx  # Tensor.mark_as_loss/mark_as_output record in the current run
Dim._runs = _run_ctx  # Dim.dyn_size_ext reads the sizes of the current run
