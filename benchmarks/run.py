"""Issue 12's measuring harness: every benchmark model on netcompiler and on hand-written code, each side in a
process of its own (alternating order), and a Markdown table of the ratios netcompiler / hand-written with the
goal beside each.

    python benchmarks/run.py                      # default sizes, TF and torch, input pipeline (~15 min on 2 cores)
    python benchmarks/run.py --quick              # tiny sizes, 1 repetition: CI smoke (< 3 min)
    python benchmarks/run.py --full               # the issue's sizes (Transformer 38M, BLSTM 6x512): long
    python benchmarks/run.py --models linear-100,linear-400 --scaling --json out.json

See benchmarks/README.md ("run.py") for the models, the columns and the goals.
"""

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # the benchmark modules and the netcompiler package of this tree

from models import MODELS, get_model  # noqa: E402
from measure import child_result  # noqa: E402
import report  # noqa: E402

SCALING_LAYERS = 5000
HAND_TF_SCALING_MAX = 2000
"""--scaling builds the hand-written TF2 chain only up to this many layers, because of HAND_TF_AT_5000."""
HAND_TF_AT_5000 = "at 5000 it was stopped after 7.7 minutes at 5.7 GB, before its first step (session 18)"
QUICK_TORCH = ("linear-100", "transformer")  # --quick runs only these on torch (the 3-minute budget)


def run_child(what, side, size, reps, log, check=False):
    """Runs `run.py --child` in a fresh process; its result dict, or {"error": ...} when it failed."""
    start = time.perf_counter()
    result = child_result(__file__, [what, side, size, reps] + ["--check"] * check)
    print(f"  {what:<12} {side:<10} {time.perf_counter() - start:6.1f} s  "
          f"{'ERROR ' + result['error'].splitlines()[-1] if 'error' in result else ''}", file=log, flush=True)
    return result


def merge(results):
    """The median of every number over the rounds of one side (the first error, if any)."""
    errors = [r for r in results if "error" in r]
    if errors:
        return errors[0]
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    values = {k: [r[k] for r in results if k in r] for k in results[0]}
    return {k: statistics.median(vs) if number(vs[0]) and len(set(vs)) > 1 else vs[0] for k, vs in values.items()}


def machine():
    """The CPU the run measures ("Intel(R) Xeon(R) Processor, model 207, AMX-BF16"): absolute times and frames per
    second compare only between runs on the same one (sessions 1-17 and 18 ran on different CPUs)."""
    try:
        with open("/proc/cpuinfo") as f:
            first_cpu = f.read().split("\n\n")[0]
    except OSError:
        return "unknown CPU"
    fields = {}
    for line in first_cpu.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    parts = [fields.get("model name", "unknown CPU")]
    if "model" in fields:
        parts.append(f"model {fields['model']}")
    flags = fields.get("flags", "").split()
    parts += [name for flag, name in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16")) if flag in flags][:1]
    return ", ".join(parts)


def torch_wanted(args):
    """Whether the PyTorch sides run: torch installed and not --no-torch."""
    return not args.no_torch and importlib.util.find_spec("torch") is not None


def alternating_rounds(what, pair, rounds, size, reps, log, first=0, check=False):
    """{side: the median of `rounds` children of `what`} for the sides in `pair`; the side that goes first
    alternates from round to round (starting with pair[0] when `first` is even). With `check`, the first round's
    hand-written TF2 child also compares the models."""
    results = {side: [] for side in pair}
    for r in range(rounds):
        for side in (pair if (first + r) % 2 == 0 else pair[::-1]):
            results[side].append(run_child(what, side, size, reps, log, check=check and r == 0))
    return {side: merge(of_side) for side, of_side in results.items()}


def benchmark_models(names, args, size, log, results, save):
    """Measures the models into `results` (a dict: model -> side -> measures), calling `save` after each."""
    for i, name in enumerate(names):
        model = get_model(name, size)
        print(f"{name}: {model.description}", file=log, flush=True)
        entry = results[name] = {"description": model.description}
        with_torch = model.torch and torch_wanted(args) and (name in QUICK_TORCH or not args.quick)
        pairs = [("nc-tf", "hand-tf")] + ([("nc-torch", "hand-torch")] if with_torch else [])
        rounds = args.rounds * model.rounds_factor
        for pair in pairs:
            entry.update(alternating_rounds(name, pair, rounds, size, args.reps, log, first=i, check=not args.no_check))
        if rounds != args.rounds:
            entry["rounds"] = rounds  # (the report's header names it)
        save()


def scaling_chain(args, size, log):
    """The --scaling chain's build on each side (`alternating_rounds`), except the hand-written TF2 side above
    HAND_TF_SCALING_MAX layers."""
    layers = args.scaling_layers
    pairs = [("nc-tf", "hand-tf")] + ([("nc-torch", "hand-torch")] if torch_wanted(args) else [])
    result = {"layers": layers}
    for pair in pairs:
        if "hand-tf" in pair and layers > HAND_TF_SCALING_MAX:
            result["hand-tf"] = {"skipped": f"not run above {HAND_TF_SCALING_MAX} layers ({HAND_TF_AT_5000})"}
            pair = pair[:1]
        result.update(alternating_rounds(f"linear-{layers}", pair, args.rounds, size, 0, log))
    return result


def growth(results):
    """Exponent of netcompiler's (and the hand-written code's) build time from linear-100 to linear-400."""
    if "linear-100" not in results or "linear-400" not in results:
        return None
    small, big = results["linear-100"], results["linear-400"]
    layers = [int(r["description"].split()[0]) for r in (small, big)]
    out = {"layers": layers}
    for side in ("nc-tf", "hand-tf", "nc-torch", "hand-torch"):
        if all(side in r and "error" not in r[side] for r in (small, big)):
            out[side] = {kind: math.log(big[side][f"build_{kind}"] / small[side][f"build_{kind}"])
                         / math.log(layers[1] / layers[0]) for kind in ("cpu", "wall")}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size_group = parser.add_mutually_exclusive_group()
    size_group.add_argument("--quick", action="store_true", help="tiny sizes, 1 repetition (CI smoke, < 3 min)")
    size_group.add_argument("--full", action="store_true", help="the issue's sizes (38M Transformer, BLSTM 6x512)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated (default: {','.join(MODELS)})")
    parser.add_argument("--reps", type=int, default=None, help="timed passes per side (default 3; quick 1)")
    parser.add_argument("--rounds", type=int, default=1, help="processes per side, alternating order (default 1)")
    parser.add_argument("--scaling", action="store_true",
                        help=f"also build a {SCALING_LAYERS}-layer chain on netcompiler and by hand (TF, and torch "
                             "unless --no-torch; goal < 60 s, < 2 GB, ratio <= 1.2), --rounds processes per side; "
                             f"the hand-written TF2 chain only up to {HAND_TF_SCALING_MAX} layers")
    parser.add_argument("--scaling-layers", type=int, default=SCALING_LAYERS, metavar="N",
                        help=f"layers of the --scaling chain (default {SCALING_LAYERS})")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch sides (skipped too without torch)")
    parser.add_argument("--no-check", action="store_true", help="skip the weights-copied loss/gradient check")
    parser.add_argument("--no-pipeline", action="store_true", help="skip the input-pipeline measurement")
    parser.add_argument("--json", metavar="FILE", help="also write all results to FILE (after every model)")
    parser.add_argument("--report", metavar="FILE", help="print the table of a --json FILE (also of a partial run)")
    parser.add_argument("--check", action="store_true", help=argparse.SUPPRESS)  # a child: compare the models too
    parser.add_argument("--child", nargs=4, metavar=("MODEL", "SIDE", "SIZE", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child, args.check)
    if args.report:
        with open(args.report) as f:
            return finish(json.load(f), quick=True)
    size = "quick" if args.quick else "full" if args.full else "default"
    args.reps = args.reps or (1 if args.quick else 3)
    names = [n for n in args.models.split(",") if n]
    for name in names:
        get_model(name, size)  # an unknown name stops here, before any measurement
    log = sys.stderr
    start, load = time.time(), os.getloadavg()[0]
    print(f"benchmarks/run.py: size {size}, {args.reps} timed passes, {args.rounds} process(es) per side; "
          f"{os.cpu_count()} CPUs, load average {load:.1f}", file=log, flush=True)
    results = {"meta": {"size": size, "reps": args.reps, "rounds": args.rounds, "cpus": os.cpu_count(),
                        "machine": machine(), "load_start": load,
                        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start))},
               "models": {}}

    def save():  # after every model, so an interrupted run keeps what it measured (see --report)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)

    benchmark_models(names, args, size, log, results["models"], save)
    results["growth"] = growth(results["models"])
    if args.scaling:
        results["scaling"] = scaling_chain(args, size, log)
    if not args.no_pipeline:
        results["pipeline"] = {name: run_child(f"pipeline:{name}", "nc-tf", size, 0, log) for name in ("12ax", "hdf")}
    results["meta"].update(load_end=os.getloadavg()[0], seconds=time.time() - start)
    save()
    return finish(results, args.quick)


def finish(results, quick):
    """Prints the report; the exit code (2 crash, 1 missed goal unless quick, else 0)."""
    text, missed, crashed = report.render(results)
    print(text)
    if crashed:
        return 2
    return 1 if missed and not quick else 0


def child(what, side, size, reps, check):
    from measure import child_main

    if what.startswith("pipeline:"):
        from pipeline import pipeline_main

        return pipeline_main(what.split(":", 1)[1], size)
    return child_main(get_model(what, size), side, int(reps), check)


if __name__ == "__main__":
    sys.exit(main())
