"""How `dump-net` time grows with the number of layers.

Generates two network shapes of N layers (N = 100, 300, 1000, 3000):

* chain: residual blocks, each layer reading the previous one
  (linear -> activation -> copy -> combine add with the block's linear);
* tree:  a DAG where each layer reads 1-3 earlier layers: linear (concatenating
  its inputs), combine add/mul, activation, copy of several layers
  (concatenation), and every 25th layer a small subnetwork reading "base:".

Each is written as a config file and timed two ways: `dump-net CONFIG` as a
separate process (wall time including Python start-up and imports; median of
several runs), and `build_network` + `format_text` in this process (median CPU
time: other processes on a shared machine inflate wall time, not CPU time).
Also shows which imports `import netcompiler, layers` spends its time on.

Targets: a 1000-layer network dumps in well under 1 s of process wall time,
and time grows linearly with N (about 3x per 3x N). The exit status is 1 when
a target is missed (not with --quick: one repetition is too noisy to judge).

    python benchmarks/dump_scaling.py            # full run
    python benchmarks/dump_scaling.py --quick    # N up to 1000, 1 repetition (CI smoke)
"""

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from netcompiler.builtin import load_builtin_layers
from netcompiler.config import load_config
from netcompiler.dump import format_text
from netcompiler.network import build_network

HEADER = 'from netcompiler import FeatureDim\nhidden = FeatureDim("hidden", 256)\n' \
         'extern_data = {"data": {"dim": 40}}\n'
PROCESS_TARGET_S = 1.0   # 1000 layers, process wall time (the margin is printed: "well under")
GROWTH_LIMIT = 3.6       # per 3x N; 3.0 is exactly linear, 20% slack for noise


def chain_net(n):
    """Residual blocks; every layer reads the one before it."""
    net, prev = {}, "data"
    for i in range(n):
        step = i % 4
        name = "output" if i == n - 1 else f"l{i}"
        if step == 0:
            d = {"class": "linear", "activation": None, "n_out": 256, "from": prev}
            lin = name
        elif step == 1:
            d = {"class": "activation", "activation": "relu", "from": prev}
        elif step == 2:
            d = {"class": "copy", "dropout": 0.1, "from": prev}
        else:
            d = {"class": "combine", "kind": "add", "from": [prev, lin]}
        net[name], prev = d, name
    return net


def tree_net(n, seed=0):
    """Each layer reads the previous one plus 0-2 random earlier ones; all are needed by "output"."""
    rng = random.Random(seed)
    net = {"l0": {"class": "linear", "activation": "tanh", "out_dim": "hidden", "from": "data"}}
    hidden = ["l0"]  # layers whose feature dim is `hidden` (combine/activation need that)
    prev = "l0"
    for i in range(1, n):
        name = "output" if i == n - 1 else f"l{i}"
        extra = rng.sample(hidden[:-1], min(len(hidden) - 1, rng.randint(0, 2)))
        pick = rng.random()
        if prev not in hidden or pick < 0.3 or name == "output":  # concatenating linear
            d = {"class": "linear", "activation": "relu", "out_dim": "hidden", "from": [prev] + extra}
        elif i % 25 == 0:
            d = {"class": "subnetwork", "from": prev, "subnetwork": {
                "lin": {"class": "linear", "activation": "relu", "out_dim": "hidden", "from": "data"},
                "act": {"class": "activation", "activation": "tanh", "from": "lin"},
                "output": {"class": "combine", "kind": "add", "from": ["act", f"base:{rng.choice(hidden)}"]}}}
        elif pick < 0.6:
            d = {"class": "combine", "kind": rng.choice(["add", "mul"]), "from": [prev] + (extra or hidden[-2:-1])}
        elif pick < 0.8:
            d = {"class": "activation", "activation": rng.choice(["relu", "tanh", "sigmoid"]), "from": prev}
        else:  # copy of several layers: a wider feature dim, read by the next linear
            d = {"class": "copy", "from": [prev] + (extra or hidden[-2:-1])}
        net[name] = d
        if d["class"] != "copy" or len(d["from"]) == 1:
            hidden.append(name)
        prev = name
    return net


def write_config(path, net):
    text = repr(net).replace("'out_dim': 'hidden'", "'out_dim': hidden")
    with open(path, "w") as f:
        f.write(HEADER + "network = " + text.replace("}, '", "},\n    '") + "\n")


def dump_command():
    """`dump-net` next to this interpreter (a pyenv shim on PATH would add a bash start-up)."""
    local = os.path.join(os.path.dirname(sys.executable), "dump-net")
    return [local] if os.path.exists(local) else [sys.executable, "-m", "netcompiler.cli"]


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_process(path, reps):
    """`dump-net path`: median wall s, median CPU s (user + sys), and the layer count it prints."""
    walls, cpus = [], []
    for _ in range(reps):
        start, cpu = time.perf_counter(), _children_cpu()
        out = subprocess.run(dump_command() + [path], capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        if out.returncode != 0:
            sys.exit(f"dump-net {path} failed:\n{out.stderr}")
    layers = int(out.stdout.strip().rsplit("\n", 1)[-1].split()[0])  # "N layers, P parameters"
    return statistics.median(walls), statistics.median(cpus), layers


def time_in_process(path, reps):
    """Median CPU ms of build_network + format_text (the config is loaded once, outside)."""
    config = load_config(path)
    times = []
    for _ in range(max(reps, 3)):
        start = time.process_time()
        format_text(build_network(config))
        times.append(time.process_time() - start)
    return 1000 * statistics.median(times)


def import_report(top=6):
    """The modules `import netcompiler, layers` spends most on (python -X importtime)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import netcompiler, layers"],
                         capture_output=True, text=True).stderr.splitlines()
    rows = [line.split("|") for line in err if line.startswith("import time:") and "cumulative" not in line]
    total = sum(int(cum) for _, cum, name in rows if not name[1:].startswith(" "))
    nested = sorted((int(cum), name.strip()) for _, cum, name in rows if name.strip() not in ("netcompiler", "layers"))
    print(f"import netcompiler, layers: {total / 1000:.0f} ms; biggest modules (cumulative ms, nested "
          f"included): " + ", ".join(f"{name} {us / 1000:.0f}" for us, name in nested[::-1][:top]))


def main():
    load_builtin_layers()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N up to 1000, 1 repetition, exit 0 on missed targets")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per measurement (default 5)")
    args = parser.parse_args()
    sizes = [100, 300, 1000] if args.quick else [100, 300, 1000, 3000]
    reps = args.reps or (1 if args.quick else 5)

    runs = {}  # (shape, n) -> dict(wall, cpu, layers, ms)
    with tempfile.TemporaryDirectory() as tmp:
        write_config(os.path.join(tmp, "tiny.py"), chain_net(1))
        start_wall, start_cpu, _ = time_process(os.path.join(tmp, "tiny.py"), reps)
        print(f"{' '.join(dump_command())}, 1-layer network (start-up + imports): {start_wall:.3f} s wall, "
              f"{start_cpu:.3f} s CPU")
        import_report()
        print("process: dump-net wall/CPU s; in-process: build_network + format_text, CPU ms\n"
              f"{'N':>5} {'layers c/t':>11} {'chain s':>12} {'tree s':>12} {'in-proc ms c/t':>15} {'ms/layer c/t':>13}")
        for n in sizes:
            for shape, make in (("chain", chain_net), ("tree", tree_net)):
                path = os.path.join(tmp, f"{shape}{n}.py")
                write_config(path, make(n))
                wall, cpu, layers = time_process(path, reps)
                runs[shape, n] = dict(wall=wall, cpu=cpu, layers=layers, ms=time_in_process(path, reps))
            c, t = runs["chain", n], runs["tree", n]
            print(f"{n:>5} {c['layers']:>5}/{t['layers']:<5} {c['wall']:>6.3f}/{c['cpu']:.3f} "
                  f"{t['wall']:>6.3f}/{t['cpu']:.3f} {c['ms']:>7.1f}/{t['ms']:<7.1f} "
                  f"{c['ms'] / c['layers']:>6.3f}/{t['ms'] / t['layers']:.3f}", flush=True)

    ok = True
    print("\ngrowth per 3x N (linear = 3.0): process wall | process CPU minus start-up | in-process "
          "| in-process per layer x3")
    for small, big in [(300, 1000), (1000, 3000)]:
        for shape in ("chain", "tree") if big in sizes else ():
            a, b = runs[shape, small], runs[shape, big]
            net_cpu = (b["cpu"] - start_cpu) / max(a["cpu"] - start_cpu, 1e-3)
            per_layer = 3 * (b["ms"] / b["layers"]) / (a["ms"] / a["layers"])  # a subnetwork adds inner layers
            verdict = "ok" if per_layer <= GROWTH_LIMIT else f"FAIL: super-linear (> {GROWTH_LIMIT})"
            ok &= per_layer <= GROWTH_LIMIT
            print(f"  t({big})/t({small}) {shape:<5}  {b['wall'] / a['wall']:5.2f} | {net_cpu:5.2f} | "
                  f"{b['ms'] / a['ms']:5.2f} | {per_layer:5.2f}  {verdict}")
    for shape in ("chain", "tree"):
        wall, cpu = runs[shape, 1000]["wall"], runs[shape, 1000]["cpu"]
        verdict = "ok" if wall < PROCESS_TARGET_S else "FAIL" + (
            " (busy machine? its CPU time is within budget)" if cpu < PROCESS_TARGET_S else "")
        ok &= wall < PROCESS_TARGET_S
        print(f"target: 1000-layer {shape} dumps in < {PROCESS_TARGET_S:.1f} s process wall: {wall:.3f} s "
              f"({wall / PROCESS_TARGET_S:.0%} of budget; CPU {cpu:.3f} s) {verdict}")
    print("targets hold" if ok else "TARGETS MISSED")
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
