"""PyTorch sides (issue 12, goal 7): hand-written `torch.nn` modules of the deep linear chain and the Transformer
(used by torch_step.py, which maps weights and steps them, and through it by run.py), and netcompiler's layer-dict
network on its torch backend (`CompiledNetwork(..., backend="torch")` + `TorchTrainer`, as compile-net trains
with backend "torch").

Both torch sides run with 1 intra-op thread: on this shared 2-core machine torch's default (one per core) is
5-20x slower per CPU-second (see benchmarks/README.md, "frontend_paths.py"). Importing this module does not
import TensorFlow (the hand-written side's memory is torch's alone).
"""

import torch
import torch.nn.functional as F


class TorchLinear(torch.nn.Module):
    """models.linear_config by hand: `layers` x (dropout on the input, nn.Linear, ReLU), then the output layer."""

    def __init__(self, layers, width, dim, classes, dropout=0.1):
        super().__init__()
        self.p = dropout
        self.hidden = torch.nn.ModuleList(torch.nn.Linear(width if i else dim, width) for i in range(layers))
        self.output = torch.nn.Linear(width, classes)

    def forward(self, x, lengths):
        for layer in self.hidden:
            x = F.relu(layer(F.dropout(x, self.p, self.training)))
        return self.output(x)


class TorchTransformer(torch.nn.Module):
    """configs/transformer-enc.py by hand (models.transformer_config's sizes): pre-norm blocks, q/k/v without
    bias, F.scaled_dot_product_attention with a key mask and attention dropout, FF with dropout on ff2's input."""

    def __init__(self, blocks, d, heads, ff, dim, classes, dropout=0.1):
        super().__init__()
        self.d, self.heads, self.p = d, heads, dropout
        self.input, self.final_ln = torch.nn.Linear(dim, d), torch.nn.LayerNorm(d, 1e-6)
        self.output = torch.nn.Linear(d, classes)
        self.blocks = torch.nn.ModuleList(torch.nn.ModuleDict({
            "att_ln": torch.nn.LayerNorm(d, 1e-6), "q": torch.nn.Linear(d, d, bias=False),
            "k": torch.nn.Linear(d, d, bias=False), "v": torch.nn.Linear(d, d, bias=False),
            "att_out": torch.nn.Linear(d, d), "ff_ln": torch.nn.LayerNorm(d, 1e-6), "ff1": torch.nn.Linear(d, ff),
            "ff2": torch.nn.Linear(ff, d)}) for _ in range(blocks))

    def forward(self, x, lengths):
        B, T = x.shape[:2]
        drop = lambda t: F.dropout(t, self.p, self.training)  # noqa: E731
        key_mask = (torch.arange(T)[None, :] < lengths[:, None])[:, None, None, :]  # [B, 1, 1, T]
        heads = lambda t: t.view(B, T, self.heads, self.d // self.heads).transpose(1, 2)  # noqa: E731
        h = drop(self.input(x))
        for b in self.blocks:
            a = b["att_ln"](h)
            att = F.scaled_dot_product_attention(heads(b["q"](a)), heads(b["k"](a)), heads(b["v"](a)),
                                                 attn_mask=key_mask, dropout_p=self.p if self.training else 0.0)
            h = h + drop(b["att_out"](att.transpose(1, 2).reshape(B, T, self.d)))
            h = h + drop(b["ff2"](drop(F.relu(b["ff1"](b["ff_ln"](h))))))
        return self.output(self.final_ln(h))


class TorchConvFront(torch.nn.Module):
    """configs/asr-conv-blstm.py's conv front-end by hand: the features as a [T, 40] image of one channel; conv
    3x3 (32, no bias, as the config's behaviour version), ReLU, max-pool (1, 2) over the features, conv 3x3 (64),
    ReLU, max-pool (1, 2); channels first throughout. The padded frames of the first conv's output are zeroed
    (netcompiler masks a conv's input over its dynamic axis); the [T, 10, 64] maps are merged frequency-major to
    640 per frame, as merge_dims does."""

    def __init__(self, dim=40):
        super().__init__()
        self.conv0 = torch.nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.conv1 = torch.nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.out_dim = dim // 4 * 64

    def forward(self, x, lengths):
        B, T = x.shape[:2]
        h = F.relu(self.conv0(x[:, None]))  # [B, 32, T, 40]
        h = h * (torch.arange(T)[None, :] < lengths[:, None])[:, None, :, None]
        h = F.max_pool2d(F.relu(self.conv1(F.max_pool2d(h, (1, 2)))), (1, 2))  # [B, 64, T, 10]
        return h.permute(0, 2, 3, 1).reshape(B, T, -1)

    def mapping(self):
        """[(netcompiler parameter name, parameter, its layout -> torch's)]: [3, 3, in, out] -> [out, in, 3, 3]."""
        return [(f"conv{i}/W", getattr(self, f"conv{i}").weight, lambda w: w.permute(3, 2, 0, 1)) for i in range(2)]


class TorchConv(torch.nn.Module):
    """models.model_conv by hand: the conv front-end, dropout, the output layer."""

    def __init__(self, dim=40, classes=1000, dropout=0.1):
        super().__init__()
        self.p = dropout
        self.front = TorchConvFront(dim)
        self.output = torch.nn.Linear(self.front.out_dim, classes)

    def forward(self, x, lengths):
        return self.output(F.dropout(self.front(x, lengths), self.p, self.training))


def netcompiler_torch_side(config):
    """(parameter count, step) of the config's network on netcompiler's torch backend, trained as compile-net does."""
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.engine.torch_optimizers import make_torch_optimizer, process_gradients_fn
    from netcompiler.engine.collector_pause import collector_paused
    from netcompiler.engine.session import set_up_process
    from netcompiler.engine.torch_trainer import TorchTrainer, configure_torch
    from netcompiler.network import build_network

    set_up_process()  # as compile-net's Session does,
    configure_torch(42)  # and its torch settings (random_seed's default; denormals flushed)
    with collector_paused():  # as Session builds the model
        model = CompiledNetwork(build_network(config), seed=42, backend="torch")
    trainer = TorchTrainer(model, make_torch_optimizer(config.values, model.trainable_params), None,
                           process_gradients=process_gradients_fn(config.values))

    def step(x, y, lengths):
        return trainer.train_step({"data": x, "classes": y}, {"data": lengths, "classes": lengths})[1]

    return sum(p.numel() for p in model.trainable_params), step
