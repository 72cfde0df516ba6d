"""Does bfloat16 mixed precision converge like float32? Trains shipped configs twice, float32 and with
`tf_amp`/`torch_amp` = "bfloat16" (same seed, same data), and writes both dev-score curves (a PNG and a table).

    python benchmarks/mixed_precision_curves.py        # demo-12ax-lstm.py, transformer-enc-rf.py on TF and torch
    python benchmarks/mixed_precision_curves.py --epochs 3 --runs demo-12ax-lstm.py:torch
    python benchmarks/mixed_precision_curves.py --out out/mixed_precision_curves

See benchmarks/README.md ("mixed_precision_curves.py") for the tolerance and the results.
"""

import argparse, io, os, re, sys, tempfile  # noqa: E401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from netcompiler.engine.main import run_task  # noqa: E402
from netcompiler.engine.precision import AMP_KEYS  # noqa: E402

TOLERANCE = {"score": 0.10, "error": 0.02}
"""Final dev scores agree when the losses differ by at most 10% (relative) and the error rates by at most 0.02
(absolute)."""


def dev_scores(log: str):
    """{epoch: {name: value}} of the dev scores of the 'epoch N  train ...  dev ce X fer Y  lr ...' lines of a
    training log (also 'dev ce X  dev fer Y', as frontend configs' separate losses print)."""
    scores = {}
    for line in log.splitlines():
        words = line.split()
        if len(words) < 3 or words[0] != "epoch" or not words[1].isdigit():
            continue
        part, seen, i = None, {}, 2
        while i < len(words):
            if words[i] in ("train", "dev", "lr"):
                part, i = words[i], i + 1
            elif part == "dev" and i + 1 < len(words) and re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", words[i + 1]):
                seen[words[i]], i = float(words[i + 1]), i + 2
            else:
                i += 1
        if seen:
            scores[int(words[1])] = seen
    return scores


def train(config, backend, amp, epochs, folder):
    """The dev scores per epoch of `compile-net CONFIG` on `backend`, float32 or bfloat16 (`amp`)."""
    overrides = ["++backend", backend, "++num_epochs", str(epochs), "++model", os.path.join(folder, "model"),
                 "++learning_curve_file", "None", "++torch_num_threads", "1"]
    if amp:
        overrides += [f"++{AMP_KEYS[backend]}", "bfloat16"]
    log = io.StringIO()
    assert run_task(os.path.join(ROOT, "configs", config), overrides, log=log) == 0, log.getvalue()
    scores = dev_scores(log.getvalue())
    assert sorted(scores) == list(range(1, epochs + 1)), log.getvalue()
    return scores


def is_error(name):
    """Whether a score is an error rate (frame error rate 'fer', 'error', ...), else a loss."""
    return name.endswith("fer") or "err" in name


def compare(name, fp32, bf16):
    """Table lines (epoch, each dev score fp32 / bf16) and whether the last epoch agrees within TOLERANCE (losses
    relative, error rates absolute)."""
    keys = list(fp32[1])
    lines = [f"{name}\n  epoch  " + "  ".join(f"{k + ' fp32':>10s} {k + ' bf16':>10s}" for k in keys)]
    for epoch in sorted(fp32):
        lines.append(f"  {epoch:5d}  " + "  ".join(f"{fp32[epoch][k]:10.4f} {bf16[epoch][k]:10.4f}" for k in keys))
    last = max(fp32)
    ok = True
    for key in keys:
        a, b = fp32[last][key], bf16[last][key]
        if not is_error(key):
            good = abs(a - b) <= TOLERANCE["score"] * max(abs(a), 1e-3)
            lines.append(f"  final {key}: fp32 {a:.4f}, bf16 {b:.4f}, relative difference "
                         f"{abs(a - b) / max(abs(a), 1e-3):.3f} (tolerance {TOLERANCE['score']}): "
                         f"{'same' if good else 'DIFFERENT'}")
        else:
            good = abs(a - b) <= TOLERANCE["error"]
            lines.append(f"  final {key}: fp32 {a:.4f}, bf16 {b:.4f}, difference {abs(a - b):.4f} "
                         f"(tolerance {TOLERANCE['error']}): {'same' if good else 'DIFFERENT'}")
        ok &= good
    return lines, ok


def plot(curves, path):
    """One panel per run: each dev score per epoch, fp32 solid, bf16 dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 4), squeeze=False)
    for ax, (name, fp32, bf16) in zip(axes[0], curves):
        for key in fp32[1]:
            epochs = sorted(fp32)
            line, = ax.plot(epochs, [fp32[e][key] for e in epochs], "-o", label=f"dev {key} float32")
            ax.plot(epochs, [bf16[e][key] for e in epochs], "--x", color=line.get_color(), label=f"dev {key} bfloat16")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.set_xticks(sorted(fp32))
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    runs = [f"{config}:{backend}" for config in ("demo-12ax-lstm.py", "transformer-enc-rf.py")
            for backend in ("tensorflow", "torch")]
    parser.add_argument("--runs", nargs="+", default=runs,
                        help="CONFIG:BACKEND, the config a file in configs/")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(ROOT, "out", "mixed_precision_curves"),
                        help="folder for curves.png and curves.txt")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    curves, report, all_ok = [], [], True
    for run in args.runs:
        config, backend = run.split(":")
        with tempfile.TemporaryDirectory() as folder:
            fp32 = train(config, backend, False, args.epochs, os.path.join(folder, "fp32"))
            bf16 = train(config, backend, True, args.epochs, os.path.join(folder, "bf16"))
        name = f"{config} on {backend}"
        lines, ok = compare(name, fp32, bf16)
        print("\n".join(lines), flush=True)
        report += lines
        curves.append((name, fp32, bf16))
        all_ok &= ok
    with open(os.path.join(args.out, "curves.txt"), "w") as f:
        f.write("\n".join(report) + "\n")
    plot(curves, os.path.join(args.out, "curves.png"))
    print(f"wrote {os.path.join(args.out, 'curves.png')} and curves.txt")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
