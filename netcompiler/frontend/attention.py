"""Attention as RETURNN's frontend has it: `dot_attention` and the module `SelfAttention` (multi-head, over a
spatial dim of its input).

`SelfAttention` projects its input with one Linear `qkv` (in_dim -> 2 x key_dim_total + value_dim_total, split
per head into query, key, value), attends per head with `dot_attention` over a second dim with the sizes of the
attended axis (so padded frames get no weight), merges the heads and projects with the Linear `proj` (if
`proj_dim` is given). Parameter names as RETURNN's: `qkv.weight`, `qkv.bias`, `proj.weight`, `proj.bias`.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

from ..tensor import Dim, Tensor
from ..tensor.dim import same_size_dim
from .array import merge_dims, replace_dim, split, split_dims
from .linear import Linear
from .module import Module, check_input_dim
from .nn import dropout
from .reduce import matmul, softmax


def dot_attention(query: Tensor, keys: Tensor, values: Tensor, *, key_dim: Dim, axis: Dim, att_dropout: float = 0.0,
                  att_dropout_broadcast: Optional[bool] = None) -> Tensor:
    """softmax over `axis` of (query . keys over `key_dim`) / sqrt(|key_dim|), dropped out by `att_dropout` in
    training (its mask shared along all but `axis` with `att_dropout_broadcast`), then the weighted sum of `values`
    over `axis`. Padded frames of `axis` get no weight."""
    energy = matmul(query * key_dim.size ** -0.5, keys, reduce=key_dim)
    weights = softmax(energy, axis=axis)
    weights = dropout(weights, att_dropout, axis=[axis] if att_dropout_broadcast else None)
    att = matmul(weights, values, reduce=axis, use_mask=False)  # padded frames already have weight 0
    return att.copy(feature_dim=values.feature_dim) if values.feature_dim in att.dims else att


class SelfAttention(Module):
    """Multi-head self-attention over the dim `axis` given at the call (see the module docstring)."""

    def __init__(self, in_dim: Dim, proj_dim: Optional[Dim], *, key_dim_total: Dim, value_dim_total: Dim,
                 num_heads: Union[int, Dim], with_bias: bool = True, att_dropout: float = 0.1,
                 att_dropout_broadcast: Optional[bool] = None):
        super().__init__()
        heads = num_heads if isinstance(num_heads, Dim) else Dim(num_heads, name="num_heads")
        for total in (key_dim_total, value_dim_total):
            if total.size % heads.size:
                raise ValueError(f"SelfAttention: {total} is not a multiple of num_heads {heads.size}")
        self.in_dim, self.num_heads = in_dim, heads
        self.out_dim = proj_dim if proj_dim is not None else value_dim_total
        self.key_dim_total, self.value_dim_total = key_dim_total, value_dim_total
        self.key_dim_per_head = Dim(key_dim_total.size // heads.size, name=f"{key_dim_total.description}/heads")
        self.value_dim_per_head = Dim(value_dim_total.size // heads.size, name=f"{value_dim_total.description}/heads")
        self.qkv_dim_total = Dim(2 * key_dim_total.size + value_dim_total.size, name="qkv")
        self.qkv_dim_per_head = Dim(self.qkv_dim_total.size // heads.size, name="qkv/heads")
        self.qkv = Linear(in_dim, self.qkv_dim_total, with_bias=with_bias)
        self.proj = Linear(value_dim_total, proj_dim, with_bias=with_bias) if proj_dim is not None else None
        self.att_dropout = att_dropout
        self.att_dropout_broadcast = bool(att_dropout_broadcast)

    def __repr__(self):
        return f"<SelfAttention {self.in_dim} -> {self.out_dim}, {self.num_heads.size} heads>"

    def forward_qkv(self, source: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """Query, key and value per head: [..., num_heads, key/value dim per head]."""
        qkv = split_dims(self.qkv(source), axis=self.qkv_dim_total, dims=[self.num_heads, self.qkv_dim_per_head])
        return split(qkv, axis=self.qkv_dim_per_head,
                     out_dims=[self.key_dim_per_head, self.key_dim_per_head, self.value_dim_per_head])

    def __call__(self, source: Tensor, *, axis: Dim) -> Tensor:
        check_input_dim(self, source, self.in_dim)
        check_input_dim(self, source, axis, what="axis")
        q, k, v = self.forward_qkv(source)
        kv_axis = same_size_dim(axis, f"{axis.description}:kv")
        k, v = replace_dim(k, in_dim=axis, out_dim=kv_axis), replace_dim(v, in_dim=axis, out_dim=kv_axis)
        att = dot_attention(q, k, v, key_dim=self.key_dim_per_head, axis=kv_axis, att_dropout=self.att_dropout,
                            att_dropout_broadcast=self.att_dropout_broadcast)
        out, _ = merge_dims(att, dims=[self.num_heads, self.value_dim_per_head], out_dim=self.value_dim_total)
        return self.proj(out) if self.proj is not None else out
