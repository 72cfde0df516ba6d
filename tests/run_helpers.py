"""Running compile-net's tasks in a test: `run` (the log it prints), `eval_scores` (the scores eval computes) and
`task_12ax_config` (the data lines of a small 12AX training config)."""

import io

from netcompiler.engine import epochs
from netcompiler.engine.main import run_task


def run(path, *overrides, task=None):
    """Runs config `path` with `++key value` overrides; returns what it printed to its log."""
    log = io.StringIO()
    assert run_task(path, list(overrides), task=task, log=log) == 0
    return log.getvalue()


def eval_scores(monkeypatch, path, *overrides):
    """The dev scores (per loss: loss and error per frame) that `--task eval` computes, unrounded."""
    seen = []
    original = epochs.format_scores

    def recording(prefix, scores, *args):
        seen.append(scores.normalized())
        return original(prefix, scores, *args)

    monkeypatch.setattr(epochs, "format_scores", recording)
    run(path, *overrides, task="eval")
    monkeypatch.setattr(epochs, "format_scores", original)
    assert len(seen) == 1, seen
    return seen[0]


def task_12ax_config(train_seqs, dev_seqs=None, batch_size=2000):
    """Config lines of the 12AX task: Task12AXDataset train (and, with `dev_seqs`, a seeded dev) of these sizes, its
    extern_data, batches of `batch_size` frames and at most 10 sequences."""
    lines = ['train = {"class": "Task12AXDataset", "num_seqs": %d}' % train_seqs]
    if dev_seqs is not None:
        lines.append('dev = {"class": "Task12AXDataset", "num_seqs": %d, "fixed_random_seed": 1}' % dev_seqs)
    lines += ['extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}',
              "batch_size = %d" % batch_size, "max_seqs = 10"]
    return "\n".join(lines) + "\n"
