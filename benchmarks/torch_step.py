"""netcompiler's PyTorch train step against hand-written PyTorch of the same model (issue 12, goals 2, 3, 7).

    python benchmarks/torch_step.py                       # linear, transformer, blstm, 12ax, conv
    python benchmarks/torch_step.py --models blstm --rounds 5
    python benchmarks/torch_step.py --quick               # small sizes, CI smoke

Per model, one child process builds both sides (netcompiler: `CompiledNetwork(backend="torch")` + `TorchTrainer`
as compile-net trains; hand-written: `torch.nn` modules, `F.dropout`, `torch.optim.Adam`), copies netcompiler's
weights into the hand-written model and asserts that loss and every gradient agree on a ragged batch (eval mode:
no dropout). It then times train steps alternating between the sides (round r: A then B, round r+1: B then A),
by process CPU time (user + sys of all threads: the machine is shared), and takes the medians. Peak memory
(VmHWM) comes from two more child processes, one per side, that build their side and run 3 steps; "above
imports" is VmHWM minus the resident set after the imports (netcompiler's process also holds netcompiler's
imports).

Models: deep linear (100 x 512, ReLU, dropout 0.1 on each layer's input, Adam); configs/transformer-enc.py as
shipped (2 pre-norm blocks, d 256; label smoothing 0.1, global-norm clipping 1); configs/asr-conv-blstm.py with
2 BLSTM layers x 256 per direction (`models.asr_config`; hand: `hand_torch.TorchConvFront`, then
`torch.nn.LSTM(bidirectional=True)` on packed sequences); configs/demo-12ax-lstm.py (LSTM 10; hand:
`torch.nn.LSTM` on packed sequences); the conv front-end of configs/asr-conv-blstm.py before a 1000-class softmax
(hand: `hand_torch.TorchConv`). Batches have ragged lengths (between half and all of the frames). Both sides
run with `--threads` intra-op threads.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from measure import status_mb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]
MARK = "RESULT "

# name -> (batch size, frames, settings); quick sizes in QUICK
SIZES = {"linear": (4, 100, dict(layers=100, width=512)), "transformer": (16, 100, dict(blocks=2, d=256)),
         "blstm": (16, 100, dict(layers=2, n=256)), "12ax": (10, 100, dict()), "conv": (16, 100, dict())}
QUICK = {"linear": (4, 50, dict(layers=10, width=64)), "transformer": (4, 50, dict(blocks=2, d=256)),
         "blstm": (4, 50, dict(layers=2, n=32)), "12ax": (10, 50, dict()), "conv": (4, 50, dict())}


# --- the models: config, hand-written module, weight mapping ---------------------------------------------------------
def make_model(name, settings):
    """(netcompiler config, hand-written torch module, [(nc name, hand parameter, nc -> hand layout)])."""
    from hand_torch import TorchConv, TorchConvFront, TorchLinear, TorchTransformer
    from models import asr_config, linear_config, transformer_config
    from netcompiler.config import load_config

    t = lambda w: w.t()  # noqa: E731  netcompiler's W [in, out] is nn.Linear's weight [out, in] transposed
    same = lambda w: w  # noqa: E731

    def linear(prefix, module):
        return [(f"{prefix}/W", module.weight, t)] + ([(f"{prefix}/b", module.bias, same)] if module.bias is not None
                                                     else [])

    if name == "linear":
        config = linear_config(settings["layers"], settings["width"])
        hand = TorchLinear(settings["layers"], settings["width"], 40, 100)
        mapping = [m for i, layer in enumerate(hand.hidden) for m in linear(f"l{i + 1}", layer)]
        return config, hand, mapping + linear("output", hand.output), (40, 100)
    if name == "transformer":
        d = settings["d"]
        config = transformer_config(settings["blocks"], d, 4, 4 * d)
        hand = TorchTransformer(settings["blocks"], d, 4, 4 * d, 80, 500)
        mapping = linear("input", hand.input) + linear("output", hand.output)
        norm = lambda p, m: [(f"{p}/scale", m.weight, same), (f"{p}/bias", m.bias, same)]  # noqa: E731
        for i, block in enumerate(hand.blocks):
            p = f"block{i + 1}_"
            mapping += norm(p + "att_ln", block["att_ln"]) + norm(p + "ff_ln", block["ff_ln"])
            for part in ("q", "k", "v", "att_out", "ff1", "ff2"):
                mapping += linear(p + part, block[part])
        return config, hand, mapping + norm("final_ln", hand.final_ln), (80, 500)
    if name == "blstm":
        hand = HandBLSTM(settings["layers"], settings["n"], 40, 1000, front=TorchConvFront(), output_dropout=True)
        mapping = [m for i, lstm in enumerate(hand.lstms) for d, sfx in (("fw", ""), ("bw", "_reverse"))
                   for m in lstm_mapping(f"lstm{i}_{d}/rec", lstm, sfx)]
        return asr_config(settings["n"], settings["layers"]), hand, \
            hand.front.mapping() + mapping + linear("output", hand.output), (40, 1000)
    if name == "conv":
        hand = TorchConv()
        return asr_config(layers=0), hand, hand.front.mapping() + linear("output", hand.output), (40, 1000)
    if name == "12ax":
        config = load_config(os.path.join(ROOT, "configs", "demo-12ax-lstm.py"))
        hand = HandBLSTM(1, 10, 9, 2, bidirectional=False, dropout=0.0)
        return config, hand, lstm_mapping("lstm/rec", hand.lstms[0], "") + linear("output", hand.output), (9, 2)
    raise SystemExit(f"unknown model {name!r} (known: {', '.join(SIZES)})")


def lstm_mapping(prefix, lstm, suffix):
    """netcompiler's W [in, 4n] / W_re [n, 4n] / b [4n] (gate blocks c, i, f, o) as torch.nn.LSTM's weight_ih
    [4n, in] / weight_hh [4n, n] / bias_ih (gate blocks i, f, g=c, o); bias_hh stays zero and frozen."""
    import torch

    def cifo_to_ifgo(w):
        c, i, f, o = torch.chunk(w, 4, dim=-1)
        return torch.cat([i, f, c, o], dim=-1)

    getattr(lstm, f"bias_hh_l0{suffix}").requires_grad_(False)
    return [(f"{prefix}/W", getattr(lstm, f"weight_ih_l0{suffix}"), lambda w: cifo_to_ifgo(w).t()),
            (f"{prefix}/W_re", getattr(lstm, f"weight_hh_l0{suffix}"), lambda w: cifo_to_ifgo(w).t()),
            (f"{prefix}/b", getattr(lstm, f"bias_ih_l0{suffix}"), cifo_to_ifgo)]


def _hand_blstm_class():
    import torch
    import torch.nn.functional as F
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class _HandBLSTM(torch.nn.Module):
        """(Bi)LSTM layers of torch.nn.LSTM on packed sequences (dropout on the input of every layer but the
        first), then the output layer (dropout on its input with `output_dropout`); `front` (a module of
        (x, lengths) with `out_dim` features per frame) runs before the first layer."""

        def __init__(self, layers, n, dim, classes, bidirectional=True, dropout=0.1, front=None,
                     output_dropout=False):
            super().__init__()
            self.p, self.front, self.output_dropout = dropout, front, output_dropout
            width = 2 * n if bidirectional else n
            dim = front.out_dim if front is not None else dim
            self.lstms = torch.nn.ModuleList(torch.nn.LSTM(width if i else dim, n, bidirectional=bidirectional)
                                             for i in range(layers))
            for lstm in self.lstms:
                for name, param in lstm.named_parameters():
                    if name.startswith("bias_hh"):
                        torch.nn.init.zeros_(param)
                        param.requires_grad_(False)
            self.output = torch.nn.Linear(width, classes)

        def forward(self, x, lengths):
            T = x.shape[1]
            h = (self.front(x, lengths) if self.front is not None else x).transpose(0, 1)
            lengths = lengths.long()
            for i, lstm in enumerate(self.lstms):
                if i:
                    h = F.dropout(h, self.p, self.training)
                packed = pack_padded_sequence(h, lengths, enforce_sorted=False)
                h, _ = pad_packed_sequence(lstm(packed)[0], total_length=T)
            if self.output_dropout:
                h = F.dropout(h, self.p, self.training)
            return self.output(h.transpose(0, 1))

    return _HandBLSTM


def HandBLSTM(*args, **kwargs):  # noqa: N802  (a class made when torch is imported)
    return _hand_blstm_class()(*args, **kwargs)


# --- the two sides ---------------------------------------------------------------------------------------------------
def hand_step_fn(net, config, classes, fused=False):
    """step(x, y, lengths) -> loss of the hand-written model: summed CE over valid frames with the config's label
    smoothing as netcompiler defines it (1 - s on the target, s / (C - 1) elsewhere: torch's smoothing of
    s C / (C - 1); the loss differs by that target's entropy per frame), global-norm clipping, Adam."""
    import torch
    import torch.nn.functional as F

    values = config.values
    params = [p for p in net.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=values["learning_rate"], **({"fused": True} if fused else {}))
    s = values["network"]["output"].get("loss_opts", {}).get("label_smoothing", 0.0)
    clip = values.get("gradient_clip_global_norm", 0.0)

    def loss_fn(x, y, lengths):
        mask = torch.arange(x.shape[1])[None, :] < lengths[:, None]
        return F.cross_entropy(net(x, lengths)[mask], y[mask].long(), reduction="sum",
                               label_smoothing=s * classes / (classes - 1))

    def step(x, y, lengths):
        loss = loss_fn(x, y, lengths)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        optimizer.step()
        return loss.detach()

    entropy = 0.0
    if s:
        import math
        entropy = -(1 - s) * math.log(1 - s) - s * math.log(s / (classes - 1))
    return step, loss_fn, entropy


def build_sides(name, settings, which=("nc", "hand"), hand_fused=False):
    """{side: (step, parameter count)}, and what the agreement check needs."""
    import torch
    from netcompiler.builtin import load_builtin_layers
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.engine.torch_optimizers import make_torch_optimizer, process_gradients_fn
    from netcompiler.engine.session import set_up_process
    from netcompiler.engine.torch_trainer import TorchTrainer, configure_torch
    from netcompiler.network import build_network

    set_up_process()  # as compile-net's Session; both sides run in this process, so the hand-written side's
    configure_torch(42)  # denormals are flushed too
    load_builtin_layers()
    config, hand, mapping, (dim, classes) = make_model(name, settings)
    sides, extra = {}, {"dim": dim, "classes": classes, "hand": hand, "mapping": mapping}
    if "nc" in which:
        model = CompiledNetwork(build_network(config), seed=42, backend="torch")
        trainer = TorchTrainer(model, make_torch_optimizer(config.values, model.trainable_params), None,
                               process_gradients=process_gradients_fn(config.values))
        sides["nc"] = (lambda x, y, lengths: trainer.train_step({"data": x, "classes": y},
                                                                {"data": lengths, "classes": lengths})[1],
                       sum(p.numel() for p in model.trainable_params))
        extra.update(model=model, trainer=trainer)
    if "hand" in which:
        hand.train()
        step, loss_fn, entropy = hand_step_fn(hand, config, classes, hand_fused)
        sides["hand"] = (step, sum(p.numel() for p in hand.parameters() if p.requires_grad))
        extra.update(loss_fn=loss_fn, entropy=entropy)
    return sides, extra


def batches(count, size, frames, dim, classes, seed=0):
    import numpy as np
    import torch

    rng = np.random.RandomState(seed)
    out = []
    for _ in range(count):
        lengths = rng.randint(frames // 2, frames + 1, size=size).astype(np.int32)
        lengths[0] = frames
        x = rng.randn(size, frames, dim).astype(np.float32)
        x[np.arange(frames)[None, :] >= lengths[:, None]] = 0.0
        y = rng.randint(0, classes, (size, frames)).astype(np.int32)
        out.append(tuple(torch.from_numpy(a) for a in (x, y, lengths)))
    return out


def check_agreement(extra, batch):
    """Copies netcompiler's weights into the hand-written model; asserts loss and gradients agree (no dropout)."""
    import torch

    model, hand, trainer = extra["model"], extra["hand"], extra["trainer"]
    with torch.no_grad():
        for nc_name, param, to_hand in extra["mapping"]:
            param.copy_(to_hand(model.params[nc_name]))
    x, y, lengths = batch
    for p in model.trainable_params:
        p.grad = None
    _, objective = trainer._losses({"data": x, "classes": y}, {"data": lengths, "classes": lengths}, training=False)
    objective.backward()
    hand.eval()
    hand.zero_grad(set_to_none=True)
    loss = extra["loss_fn"](x, y, lengths)
    loss.backward()
    hand_loss = loss.detach()
    hand.train()
    frames = float(lengths.sum())
    nc_loss = float(objective.detach()) + frames * extra["entropy"]
    assert abs(nc_loss - float(hand_loss)) <= 1e-4 * abs(float(hand_loss)), (nc_loss, float(hand_loss))
    worst = 0.0
    for nc_name, param, to_hand in extra["mapping"]:
        got, want = to_hand(model.params[nc_name].grad), param.grad
        err = float((got - want).abs().max() / (want.abs().max() + 1e-12))
        assert err < 1e-3, f"gradient of {nc_name} differs: relative max error {err:.2e}"
        worst = max(worst, err)
    return {"loss_nc": nc_loss, "loss_hand": float(hand_loss), "grad_rel_err": worst}


# --- children --------------------------------------------------------------------------------------------------------
def time_child(name, sizes, rounds, threads, hand_fused=False):
    import torch

    torch.set_num_threads(threads)
    size, frames, settings = sizes[name]
    sides, extra = build_sides(name, settings, hand_fused=hand_fused)
    assert sides["nc"][1] == sides["hand"][1], f"parameter counts differ: {sides['nc'][1]} vs {sides['hand'][1]}"
    data = batches(2, size, frames, extra["dim"], extra["classes"])
    result = {"params": sides["nc"][1], "check": check_agreement(extra, data[0])}
    cpu = {"nc": [], "hand": []}
    for side in ("nc", "hand"):  # warm-up
        for batch in data:
            float(sides[side][0](*batch))
    for r in range(rounds):
        for side in (("nc", "hand") if r % 2 == 0 else ("hand", "nc")):
            start = time.process_time()
            for batch in data:
                float(sides[side][0](*batch))
            cpu[side].append(time.process_time() - start)
    valid = sum(int(b[2].sum()) for b in data)
    result.update({f"{s}_frames_per_cpu_s": valid / statistics.median(cpu[s]) for s in cpu}, cpu=cpu,
                  threads=torch.get_num_threads())
    return result


def memory_child(name, side, sizes, threads, hand_fused=False):
    import torch  # noqa: F401  both sides import torch and netcompiler's modules before the baseline
    import netcompiler.emit.model  # noqa: F401
    import netcompiler.engine.torch_trainer  # noqa: F401

    torch.set_num_threads(threads)
    size, frames, settings = sizes[name]
    base = status_mb("VmRSS")
    sides, extra = build_sides(name, settings, which=(side,), hand_fused=hand_fused)
    for batch in batches(2, size, frames, extra["dim"], extra["classes"]) * 2:
        float(sides[side][0](*batch))
    return {"peak_mb": status_mb("VmHWM"), "above_imports_mb": status_mb("VmHWM") - base}


def run_child(args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join([HERE, ROOT]))
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode or not lines:
        raise SystemExit(f"child {' '.join(args)} failed:\n" + "\n".join(proc.stderr.splitlines()[-15:]))
    return json.loads(lines[-1][len(MARK):])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(SIZES))
    parser.add_argument("--rounds", type=int, default=5, help="timed passes per side, alternating (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads of both sides (default 1)")
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 rounds")
    parser.add_argument("--hand-fused", action="store_true",
                        help="the hand-written side with torch.optim.Adam(fused=True) too (default: torch's default)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory children")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "MODEL"), help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = QUICK if args.quick else SIZES
    if args.child:
        kind, name = args.child
        result = time_child(name, sizes, args.rounds, args.threads, args.hand_fused) if kind == "time" else \
            memory_child(name, args.side, sizes, args.threads, args.hand_fused)
        print(MARK + json.dumps(result), flush=True)
        os._exit(0)
    rounds = 3 if args.quick and args.rounds == 5 else args.rounds
    common = ["--rounds", str(rounds), "--threads", str(args.threads)] + ["--quick"] * args.quick + \
        ["--hand-fused"] * args.hand_fused
    print("| model | params | frames/CPU-s nc | hand | ratio (goal >= 1.0) | peak MB nc / hand | ratio (goal <= 1.1) "
          "| above imports MB nc / hand | loss, grad agree |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        t = run_child(["--child", "time", name] + common)
        mem = {} if args.no_memory else {s: run_child(["--child", "memory", name, "--side", s] + common)
                                         for s in ("nc", "hand")}
        speed = t["nc_frames_per_cpu_s"] / t["hand_frames_per_cpu_s"]
        mem_text = " | | " if not mem else (
            f"{mem['nc']['peak_mb']:.0f} / {mem['hand']['peak_mb']:.0f} | "
            f"{mem['nc']['peak_mb'] / mem['hand']['peak_mb']:.2f} | "
            f"{mem['nc']['above_imports_mb']:.0f} / {mem['hand']['above_imports_mb']:.0f}")
        print(f"| {name} | {t['params']:,} | {t['nc_frames_per_cpu_s']:.0f} | {t['hand_frames_per_cpu_s']:.0f} | "
              f"{speed:.2f} | {mem_text} | rel. grad err {t['check']['grad_rel_err']:.0e} |", flush=True)


if __name__ == "__main__":
    main()
