"""The Markdown report of `run.py`: the ratio table (netcompiler / hand-written, goal and OK/MISSED beside each),
the build-time growth exponent, the 5000-layer chain and the input pipeline. `render` also says whether a goal was
missed and whether a measurement crashed."""


GOALS = {  # measure: (goal text, test of the ratio)
    "build": ("<= 1.2", lambda r: r <= 1.2),
    "throughput": (">= 1.0", lambda r: r >= 1.0),
    "memory": ("<= 1.1", lambda r: r <= 1.1),
}
GROWTH_GOAL = 1.1
SCALING_GOALS = {"build_wall": 60.0, "peak_mb": 2048.0}
PIPELINE_GOAL = 5.0
BACKENDS = (("TF", "nc-tf", "hand-tf", "TF2"), ("torch", "nc-torch", "hand-torch", "PyTorch"))
"""Each backend's label, its netcompiler and hand-written sides, and the hand-written side's name."""
# the train step that consumes each pipeline's batches (its netcompiler TF frames per CPU-second)
PIPELINE_CONSUMER = {"12ax": "12ax", "hdf": "conv"}


QUICK_VERDICTS = ("At --quick sizes the steps are a few milliseconds of Python, timed in one pass of one process: "
                  "a verdict there is a smoke check, not a measurement, and never fails the run. The goals are "
                  "judged at the default sizes (benchmarks/README.md).")


class Verdicts:
    """Collects OK/MISSED verdicts and crashes while the report is written."""

    def __init__(self):
        self.missed, self.crashed = [], []

    def judge(self, what, ok):
        if not ok:
            self.missed.append(what)
        return "OK" if ok else "**MISSED**"


def ratio_cells(verdicts, label, measure, nc, hand):
    """`nc / hand` values, the ratio, the goal and the verdict (four cells)."""
    goal, test = GOALS[measure]
    if nc is None or hand is None:
        return ["n/a", "", goal, ""]
    fmt = "{:.0f}" if max(nc, hand) >= 100 else "{:.2f}"
    ratio = nc / hand
    return [f"{fmt.format(nc)} / {fmt.format(hand)}", f"{ratio:.2f}", goal,
            verdicts.judge(f"{label} {measure}", test(ratio))]


def model_rows(verdicts, name, entry):
    rows = []
    for backend, nc_side, hand_side, _hand_name in BACKENDS:
        if nc_side not in entry:
            continue
        nc, hand = entry[nc_side], entry[hand_side]
        failed = [f"{side}: {r['error']}" for side, r in ((nc_side, nc), (hand_side, hand)) if "error" in r]
        if failed:
            verdicts.crashed.extend(f"{name} {f}" for f in failed)
            rows.append([name, backend, "CRASHED"] + [""] * 12)
            continue
        if nc["params"] != hand["params"]:
            verdicts.crashed.append(f"{name} {backend}: parameter counts differ ({nc['params']} vs {hand['params']})")
        label = f"{name} {backend}"
        rows.append([name, backend, f"{nc['params']:,}"]
                    + ratio_cells(verdicts, label, "build", nc["build_cpu"], hand["build_cpu"])
                    + ratio_cells(verdicts, label, "throughput", nc.get("frames_per_cpu_s"), hand.get("frames_per_cpu_s"))
                    + ratio_cells(verdicts, label, "memory", nc["peak_mb"], hand["peak_mb"]))
    return rows


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def details(models):
    """Per side: build wall and CPU, frames per wall-second, RSS after the imports, peak."""
    rows = []
    for name, entry in models.items():
        for side in ("nc-tf", "hand-tf", "nc-torch", "hand-torch"):
            r = entry.get(side)
            if r and "error" not in r:
                rows.append([name, side, f"{r['build_wall']:.2f}", f"{r['build_cpu']:.2f}",
                             f"{r.get('frames_per_s', 0):.0f}", f"{r.get('frames_per_cpu_s', 0):.0f}",
                             f"{r['rss_imports_mb']:.0f}", f"{r['peak_mb']:.0f}",
                             "yes" if r.get("tensorflow_loaded") else "no"])
    return table(["model", "side", "build wall s", "build CPU s", "frames/s", "frames/CPU-s", "RSS after imports MB",
                  "peak MB", "TF loaded"], rows)


def growth_lines(verdicts, growth):
    if not growth:
        return []
    lines = [f"Build-time growth from {growth['layers'][0]} to {growth['layers'][1]} linear layers "
             f"(exponent of N; goal for netcompiler <= {GROWTH_GOAL}):"]
    for side, exp in ((s, e) for s, e in growth.items() if s != "layers"):
        verdict = f": {verdicts.judge(f'growth {side}', exp['cpu'] <= GROWTH_GOAL)}" if side.startswith("nc") else ""
        lines.append(f"* {side}: {exp['cpu']:.2f} by CPU time, {exp['wall']:.2f} by wall time{verdict}")
    return lines


def scaling_lines(verdicts, scaling):
    """The --scaling chain: netcompiler's build to first step against the absolute goals, and both sides' build
    time and peak memory with their ratios (the first step is one 10-frame sequence: the peak is the build's), for
    each backend measured."""
    if scaling is None:
        return []
    layers, lines = scaling["layers"], []
    for backend, nc_side, hand_side, hand_name in BACKENDS:
        if nc_side not in scaling:
            continue
        nc, hand, label = scaling[nc_side], scaling.get(hand_side), f"scaling {backend}"
        if "error" in nc:
            verdicts.crashed.append(f"{label}: {nc['error']}")
            lines.append(f"{layers}-layer chain, netcompiler {backend}: CRASHED")
            continue
        ok_time = verdicts.judge(f"{label} build", nc["build_wall"] < SCALING_GOALS["build_wall"])
        ok_mem = verdicts.judge(f"{label} memory", nc["peak_mb"] < SCALING_GOALS["peak_mb"])
        lines.append(f"{layers}-layer chain (width 64, first step on one 10-frame sequence), netcompiler {backend}: "
                     f"build to first step {nc['build_wall']:.1f} s wall ({nc['build_cpu']:.1f} s CPU; goal < 60 s: "
                     f"{ok_time}), peak {nc['peak_mb']:.0f} MB (goal < 2 GB: {ok_mem})")
        if hand is None:
            continue
        if "skipped" in hand:
            lines.append(f"hand-written {hand_name}: {hand['skipped']}")
            continue
        if "error" in hand:  # the reference failing (e.g. out of memory) is reported, not a crash of netcompiler's
            lines.append(f"hand-written {hand_name}: {hand['error'].splitlines()[-1]}")
            continue
        build = ratio_cells(verdicts, label, "build", nc["build_cpu"], hand["build_cpu"])
        memory = ratio_cells(verdicts, label, "memory", nc["peak_mb"], hand["peak_mb"])
        lines.append(f"hand-written {hand_name}: {hand['build_wall']:.1f} s wall, peak {hand['peak_mb']:.0f} MB; "
                     f"build CPU s {build[0]}: ratio {build[1]} ({build[2]}: {build[3]}), peak MB {memory[0]}: "
                     f"ratio {memory[1]} ({memory[2]}: {memory[3]})")
    return lines


def pipeline_lines(verdicts, pipeline, models):
    if not pipeline:
        return []
    rows = []
    for name, r in pipeline.items():
        if "error" in r:
            verdicts.crashed.append(f"pipeline {name}: {r['error']}")
            rows.append([name, "CRASHED", "", "", "", "", ""])
            continue
        consumer = models.get(PIPELINE_CONSUMER[name], {}).get("nc-tf", {})
        step = consumer.get("frames_per_cpu_s")
        ratio = r["frames_per_cpu_s"] / step if step else None
        verdict = verdicts.judge(f"pipeline {name}", ratio >= PIPELINE_GOAL) if ratio else "n/a (model not run)"
        rows.append([f"{name}: {r['description']}", f"{r['batches_per_s']:.1f}", f"{r['frames_per_s']:.0f}",
                     f"{r['frames_per_cpu_s']:.0f}",
                     f"{step:.0f} ({PIPELINE_CONSUMER[name]})" if step else "n/a",
                     f"{ratio:.1f}" if ratio else "", f">= {PIPELINE_GOAL:.0f}: {verdict}"])
    return table(["pipeline (train step a no-op)", "batches/s", "frames/s", "frames/CPU-s",
                  "train step frames/CPU-s (model)", "ratio", "goal"], rows)


def render(results):
    """(Markdown text, missed goals, crashes) of run.py's results."""
    verdicts = Verdicts()
    meta = results["meta"]
    rows = []
    for name, entry in results["models"].items():
        rows.extend(model_rows(verdicts, name, entry))
    header = ["model", "backend", "params", "build CPU s nc / hand", "ratio", "goal", "",
              "frames/CPU-s nc / hand", "ratio", "goal", "", "peak MB nc / hand", "ratio", "goal", ""]
    end = f"{meta['load_end']:.1f} at the end" if "load_end" in meta else "the run did not finish"
    machine = f" ({meta['machine']})" if "machine" in meta else ""  # (runs before session 19 did not record it)
    more = [f"{name} {entry['rounds']}" for name, entry in results["models"].items() if "rounds" in entry]
    rounds = f"{meta['rounds']} process(es) per side" + (f" ({', '.join(more)})" if more else "")
    lines = [f"Size {meta['size']}, {meta['reps']} timed passes per side, {rounds}; "
             f"{meta['cpus']} CPUs{machine} shared with other sessions (load average {meta['load_start']:.1f} at the "
             f"start, {end}), {meta['started']}. CPU times are process user+sys (all threads): the machine is shared, wall "
             "time measures the others too.", ""]
    lines += table(header, rows) + [""]
    lines += growth_lines(verdicts, results.get("growth")) + [""]
    lines += scaling_lines(verdicts, results.get("scaling"))
    lines += pipeline_lines(verdicts, results.get("pipeline"), results["models"]) + [""]
    lines += ["Per side:", ""] + details(results["models"]) + [""]
    checked = [n for n, e in results["models"].items() if e.get("hand-tf", {}).get("agree")]
    if checked:
        lines.append(f"Same parameter count, eval loss and gradient norm (weights copied, rel. 1e-3): {', '.join(checked)}")
    if verdicts.crashed:
        lines += ["", "CRASHED:"] + [f"* {c}" for c in verdicts.crashed]
    lines.append(f"\nGoals missed: {len(verdicts.missed)}" + (f" ({', '.join(verdicts.missed)})" if verdicts.missed else ""))
    if verdicts.missed and meta["size"] == "quick":
        lines.append(QUICK_VERDICTS)
    return "\n".join(lines), verdicts.missed, verdicts.crashed
