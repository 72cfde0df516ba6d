"""Input-pipeline speed (issue 12, goal 6), measured in a child process of `run.py`: one epoch of a dataset batched
and fed through compile-net's feed (`feeding.tf_batches`: a prefetching thread, what `Trainer.batches` gives the
epoch loop), with the train step replaced by a no-op. run.py compares the frames per CPU-second with what the train step
consumes (netcompiler's TF step of the model that trains on such data).

* 12ax: the demo's training data (configs/demo-12ax-lstm.py: Task12AXDataset of 1000 sequences of 10..99 frames,
  generated while batching) with the demo's batching (batch_size 5000, max_seqs 10).
* hdf: an HDF file written by netcompiler's HDF writer into a temporary folder (random 40-dim features and
  1000-class targets, 200-frame sequences, as the conv front-end reads), HDFDataset, batches of 16 x 200 frames.

The first epoch (set-up, file opening) is not timed; the next `reps` epochs are (each its own data: 12AX generates
every epoch anew), and the median epoch is reported.

Standalone (the feed alone, no train step measured; the ratio is against --consumes, e.g. the frames per CPU-second
of the last run.py table):

    python benchmarks/pipeline.py                     # both pipelines, default size, 5 timed epochs
    python benchmarks/pipeline.py 12ax --reps 9 --consumes 353189
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from measure import RESULT_MARK, status_mb

HDF_SEQS = {"quick": 64, "default": 400, "full": 800}


def write_hdf_corpus(path, seqs, frames=200, dim=40, classes=1000):
    from netcompiler.hdf_format.writing import write_hdf

    rng = np.random.RandomState(0)
    write_hdf(path, [{"data": rng.randn(frames, dim).astype(np.float32),
                      "classes": rng.randint(0, classes, frames).astype(np.int32)} for _ in range(seqs)],
              dims={"classes": classes})


def dataset_and_config(name, size, folder):
    """(dataset, config, batch settings) of the pipeline `name`."""
    from netcompiler.config import load_config
    from netcompiler.engine.batching import parse_batching
    from netcompiler.engine.datasets import make_dataset
    from models import ROOT, get_model

    if name == "12ax":
        config = load_config(os.path.join(ROOT, "configs", "demo-12ax-lstm.py"))
        opts, batch_size, max_seqs = config.values["train"], config.values["batch_size"], config.values["max_seqs"]
        description = "Task12AXDataset, 1000 seqs, the demo's batching"
    else:
        config = get_model("conv", size).config()
        path = os.path.join(folder, "train.hdf")
        write_hdf_corpus(path, HDF_SEQS[size])
        opts, batch_size, max_seqs = {"class": "HDFDataset", "files": [path]}, 16 * 200, 16
        description = f"HDFDataset, {HDF_SEQS[size]} seqs x 200 frames, 16 x 200-frame batches"
    settings = parse_batching(batch_size=batch_size, max_seqs=max_seqs)
    return make_dataset(opts, "train"), config, settings, description


def epoch(feed):
    """The "data" lengths of every batch of one pass over the feed, doing nothing else with the batches: they are
    counted after the timer stops (a NumPy sum per batch cost the consumer ~3% of the feed's time, and the
    epoch loop does no such thing)."""
    return [lengths["data"] for _inputs, lengths in feed]


def frames_of(lengths):
    return sum(int(np.sum(batch)) for batch in lengths)


def measure(name, size, reps=5):
    """The result dict of pipeline `name` (see the module docstring): the median of `reps` timed epochs."""
    from netcompiler.builtin import load_builtin_layers
    from netcompiler.emit.model import CompiledNetwork
    from netcompiler.engine.feeding import tf_batches
    from netcompiler.engine.session import set_up_process
    from netcompiler.network import build_network

    set_up_process()  # as compile-net's Session
    load_builtin_layers()
    with tempfile.TemporaryDirectory() as folder:
        dataset, config, settings, description = dataset_and_config(name, size, folder)
        model = CompiledNetwork(build_network(config))
        feed = tf_batches(dataset, model.input_signature(keys=model.input_keys()), settings)
        dataset.init_epoch(1)
        epoch(feed)
        passes = []
        for rep in range(reps):
            dataset.init_epoch(2 + rep)
            wall, cpu = time.perf_counter(), time.process_time()
            lengths = epoch(feed)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            batches, frames = len(lengths), frames_of(lengths)
            passes.append((frames / cpu, frames / wall, batches, frames))
    per_cpu_s, per_s, batches, frames = sorted(passes)[len(passes) // 2]
    return {"description": description, "batches": batches, "frames": frames, "reps": reps,
            "batches_per_s": per_s * batches / frames, "frames_per_s": per_s, "frames_per_cpu_s": per_cpu_s,
            "frames_per_cpu_s_all": [p[0] for p in passes], "peak_mb": status_mb("VmHWM")}


def pipeline_main(name, size, reps=5):
    """run.py's child: prints the result line run.py reads and exits."""
    print(RESULT_MARK + json.dumps(measure(name, size, reps)), flush=True)
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="PIPELINE", help="12ax and/or hdf (default: both)")
    parser.add_argument("--size", default="default", choices=sorted(HDF_SEQS), help="HDF corpus size")
    parser.add_argument("--reps", type=int, default=5, help="timed epochs (median reported; default 5)")
    parser.add_argument("--consumes", type=float, default=None,
                        help="frames per CPU-second the train step consumes (one PIPELINE named): prints the ratio")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in ("12ax", "hdf")]
    if unknown:
        parser.error(f"unknown pipeline(s) {', '.join(unknown)}: choose from 12ax, hdf")
    if args.consumes and len(args.names) != 1:
        parser.error("--consumes is the rate of one train step: name one pipeline (12ax or hdf)")
    for name in args.names or ["12ax", "hdf"]:
        r = measure(name, args.size, args.reps)
        ratio = f", ratio {r['frames_per_cpu_s'] / args.consumes:.2f} (goal >= 5)" if args.consumes else ""
        print(f"{name} ({r['description']}): {r['batches']} batches, {r['frames']} frames; frames per CPU-s "
              f"{r['frames_per_cpu_s']:.0f} (median of {', '.join(f'{v:.0f}' for v in r['frames_per_cpu_s_all'])})"
              f"; frames/s {r['frames_per_s']:.0f}{ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
