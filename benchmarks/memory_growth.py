"""Resident memory over many train steps when the batch shape changes from step to step, as in training (issue 12,
goal 3): `run.py` measures the peak on batches of one shape, where caches keyed by shape stay small.

    python benchmarks/memory_growth.py                                    # blstm, torch and TF, 300 steps
    python benchmarks/memory_growth.py --models blstm,conv --backends torch --steps 500 --every 100

One model at run.py's default size, netcompiler and hand-written (`measure.side_builder`: the same sides as
run.py), each side in a process of its own. Step i trains on a batch of the model's batch size whose frames T are
drawn from [frames / 2, 3 frames / 2] (a new T in most steps), sequence lengths from [T / 2, T] with the first
sequence full. Printed per side: the resident set (VmRSS) every `--every` steps and the peak (VmHWM) at the end;
the ratio of the peaks netcompiler / hand-written against run.py's memory goal (<= 1.1). Exits 1 on a miss,
2 when a side crashed (as run.py).
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from measure import RESULT_MARK, child_result, side_builder, status_mb  # noqa: E402
from models import get_model  # noqa: E402

GOAL = 1.1


def varying_batches(spec, steps, seed=0):
    """`steps` NumPy batches (x, y, lengths) of `spec.size` sequences, T drawn per batch as the module says."""
    rng = np.random.RandomState(seed)
    for _ in range(steps):
        frames = int(rng.randint(spec.frames // 2, 3 * spec.frames // 2 + 1))
        lengths = rng.randint(frames // 2, frames + 1, spec.size).astype(np.int32)
        lengths[0] = frames
        yield (rng.randn(spec.size, frames, spec.dim).astype(np.float32),
               rng.randint(0, spec.classes, (spec.size, frames)).astype(np.int32), lengths)


def child(name, side, steps, every):
    model = get_model(name, "default")
    build, convert = side_builder(model, side)
    _params, step = build()
    resident = {}
    for i, batch in enumerate(varying_batches(model.batches, steps), 1):
        float(step(*convert(batch)))
        if i % every == 0:
            resident[i] = round(status_mb("VmRSS"))
    print(RESULT_MARK + json.dumps({"resident": resident, "peak": round(status_mb("VmHWM"))}), flush=True)
    os._exit(0)  # skip the frameworks' teardown


def run_side(name, side, steps, every):
    result = child_result(__file__, [name, side, steps, every])
    if "error" in result:
        print(f"{name} {side} CRASHED ({result['error']})", file=sys.stderr)
        sys.exit(2)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="blstm", help="comma-separated run.py models (default: blstm)")
    parser.add_argument("--backends", default="torch,tf", help="comma-separated: torch, tf (default: both)")
    parser.add_argument("--steps", type=int, default=300, help="train steps per side (default 300)")
    parser.add_argument("--every", type=int, default=50, help="print the resident set every N steps (default 50)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, side, steps, every = args.child
        return child(name, side, int(steps), int(every))
    names = args.models.split(",")
    for name in names:
        get_model(name, "default")  # an unknown name stops here, before any process runs (as run.py)
    missed = False
    for name in names:
        for backend in args.backends.split(","):
            results = {side: run_side(name, side, args.steps, args.every) for side in (f"nc-{backend}",
                                                                                      f"hand-{backend}")}
            nc, hand = results[f"nc-{backend}"], results[f"hand-{backend}"]
            ratio = nc["peak"] / hand["peak"]
            missed |= ratio > GOAL
            print(f"\n{name} on {backend}: {args.steps} steps, resident MB at steps "
                  f"{', '.join(map(str, nc['resident']))}")
            for side, r in results.items():
                print(f"  {side:11s} {' '.join(f'{mb:6d}' for mb in r['resident'].values())}   peak {r['peak']} MB")
            print(f"  peak ratio {ratio:.2f} (goal <= {GOAL}: {'OK' if ratio <= GOAL else 'MISSED'})", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
