"""Training with several worker processes: who this process is, which sequences it trains on, whether it writes
the files, and the sums across workers that keep every worker's parameters equal.

Switches (the names RETURNN uses):

* TensorFlow: ``distributed_tf = {}`` and the ``TF_CONFIG`` environment variable (JSON: ``{"cluster":
  {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": i}}``). A
  ``tf.distribute.MultiWorkerMirroredStrategy`` is made from it; it starts this worker's gRPC server and
  the collective ops, which then sum across workers. Options: ``timeout_sec`` (a collective that waits longer
  fails; default 1800), ``strategy`` ("multi_worker", the default and the only one: ``"mirrored"``, replicas on
  the devices of one process, is refused -- on a CPU-only machine TensorFlow lists one CPU device, so
  ``MirroredStrategy`` has one replica and trains exactly as one process does; several logical CPU devices would
  only split the same cores. Start one worker process per device with TF_CONFIG on 127.0.0.1 instead).
* PyTorch (``backend = "torch"``): ``torch_distributed = {}`` and torchrun's environment variables ``RANK``,
  ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``; a ``torch.distributed`` process group (gloo on CPU).
  Options: ``backend`` ("gloo"), ``timeout_sec``, ``reduce_type`` ("grad"; RETURNN's "param" and
  "grad_explicit" are refused).

The rules, the same for both backends:

* ``batch_size`` (and ``max_seqs``) are per worker. Of every epoch's sequences (in the epoch's order, which is
  the same on every worker: it depends on the epoch and the dataset's seed only), worker ``r`` of ``n`` trains on
  those at positions ``r, r + n, r + 2n, ...`` (`shard_indices`): disjoint, together all of them.
* Each step the workers' gradients are SUMMED (not averaged): the objective is a sum over the batch's frames,
  so the sum of the workers' gradients is the gradient of the combined batch, and one step of n workers
  equals one step of one process on the union of their batches. Exceptions, as the sum makes them: the L2 term
  and per-frame normalised losses (``use_normalized_loss``) count once per worker. The objective used for the
  non-finite check is the sum too, so all workers skip a bad step and stop together.
* Workers run in lockstep: a worker whose part of the epoch is used up takes steps with an empty batch (no
  sequences, no gradient of the loss) until the last worker is done.
* The epoch's train scores are summed over the workers (every worker then decides the same learning rate);
  dev sets are evaluated whole on every worker.
* Only worker 0 (the chief) takes the model's lock, writes checkpoints, the learning-rate file, TensorBoard
  logs and the learning curve; every worker resumes from the newest complete checkpoint (the model folder must
  be shared), and the chief's parameters are copied to all at the start.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from typing import Any, Dict, List, Mapping, Optional

from ..errors import ConfigError, InvalidOptionError
from ..limits import is_int

DEFAULT_TIMEOUT_SEC = 1800


def shard_indices(num_seqs: int, rank: int, size: int) -> range:
    """The positions in the epoch's order that worker `rank` of `size` trains on."""
    return range(rank, num_seqs, size)


class ShardedDataset:
    """A worker's part of a dataset's epoch (see `shard_indices`): sequence i here is sequence
    rank + i * size of the whole; everything else (init_epoch, data_spec, ...) is the whole dataset's."""

    _INDEXED = ("seq_length", "get_seq", "seq_tag", "corpus_index")

    def __init__(self, dataset, rank: int, size: int):
        self.dataset, self.rank, self.size = dataset, rank, size

    def num_seqs(self) -> int:
        return len(shard_indices(self.dataset.num_seqs(), self.rank, self.size))

    def __getattr__(self, name: str):
        attr = getattr(self.dataset, name)
        if name in self._INDEXED:
            return lambda index, *args, **kwargs: attr(self.rank + index * self.size, *args, **kwargs)
        return attr


def _options(value, key: str, allowed: Mapping[str, Any]) -> Dict[str, Any]:
    """The option dict of `key` with defaults filled in; a ConfigError for anything else."""
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise InvalidOptionError(f"expected a dict of options, got {value!r}", subject=f"config key '{key}'",
                                 suggestion=f"e.g. {key} = {{}}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise InvalidOptionError(f"unknown option(s) {', '.join(map(repr, unknown))} (known: "
                                 f"{', '.join(sorted(allowed)) or 'none'})", subject=f"config key '{key}'",
                                 suggestion="remove them")
    timeout = value.get("timeout_sec", DEFAULT_TIMEOUT_SEC)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise InvalidOptionError(f"option 'timeout_sec' must be a positive number of seconds, got {timeout!r}",
                                 subject=f"config key '{key}'", suggestion="e.g. 'timeout_sec': 1800")
    return {**allowed, **value}


def tf_config_identity(text: Optional[str]) -> Dict[str, Any]:
    """(rank, size, addresses) of this worker, from the TF_CONFIG environment variable's text; a ConfigError
    naming what is wrong with it."""
    example = ('TF_CONFIG=\'{"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:12346"]}, '
               '"task": {"type": "worker", "index": 0}}\'')
    if not text:
        raise ConfigError("distributed_tf is set, but the environment variable TF_CONFIG is not",
                          subject="config key 'distributed_tf'", suggestion=f"start each worker with {example}")
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the environment variable TF_CONFIG is no JSON ({exc})", subject="TF_CONFIG",
                          suggestion=example) from None
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    task = spec.get("task") if isinstance(spec, dict) else None
    workers = cluster.get("worker") if isinstance(cluster, dict) else None
    if not isinstance(workers, list) or not workers or not all(isinstance(w, str) for w in workers):
        raise ConfigError(f"expected a list of 'host:port' under cluster.worker, got {text}", subject="TF_CONFIG",
                          suggestion=example)
    other_jobs = sorted(set(cluster) - {"worker"})
    if other_jobs:
        raise ConfigError(f"only 'worker' jobs are supported (MultiWorkerMirroredStrategy), not "
                          f"{', '.join(other_jobs)}", subject="TF_CONFIG", suggestion=example)
    index = task.get("index") if isinstance(task, dict) else None
    if (not isinstance(task, dict) or task.get("type") != "worker" or not is_int(index)
            or not 0 <= index < len(workers)):
        raise ConfigError(f"expected task {{'type': 'worker', 'index': 0..{len(workers) - 1}}}, got {task!r}",
                          subject="TF_CONFIG", suggestion=example)
    return {"rank": index, "size": len(workers), "workers": workers}


def torch_env_identity(environ: Mapping[str, str]) -> Dict[str, int]:
    """(rank, size) from torchrun's environment variables; a ConfigError naming a missing or bad one."""
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not environ.get(k)]
    if missing:
        raise ConfigError(f"torch_distributed is set, but the environment variable(s) {', '.join(missing)} are not",
                          subject="config key 'torch_distributed'",
                          suggestion="start the workers with torchrun, or set RANK, WORLD_SIZE, MASTER_ADDR, "
                                     "MASTER_PORT for each")
    try:
        rank, size = int(environ["RANK"]), int(environ["WORLD_SIZE"])
    except ValueError:
        rank = size = -1
    if not 0 <= rank < size:
        raise ConfigError(f"RANK={environ['RANK']} and WORLD_SIZE={environ['WORLD_SIZE']} are not a worker of a "
                          f"group (0 <= RANK < WORLD_SIZE)", subject="config key 'torch_distributed'",
                          suggestion="e.g. RANK=0 WORLD_SIZE=2")
    return {"rank": rank, "size": size}


class SingleProcess:
    """No distribution: one worker, which is the chief; the sums are the values themselves."""

    rank, size, is_chief = 0, 1, True

    def shard(self, dataset):
        return dataset

    def reduce_step(self, objective, grads):
        """(objective, gradients) summed over the workers (TensorFlow, inside the train step)."""
        return objective, grads

    def reduce_objective(self, objective):
        return objective

    def reduce_gradients(self, params) -> None:
        """Sums the parameters' ``.grad`` over the workers (PyTorch)."""

    def reduce_scores(self, scores):
        return scores

    def copy_params_from_chief(self, params) -> None:
        """Sets every worker's parameters to the chief's."""

    def lockstep(self, batches):
        """The batches, and empty batches after them until every worker's are used up."""
        return batches


class _Workers(SingleProcess):
    """What both backends share: the lockstep of batches and the summed scores, on top of `_sum_floats`."""

    def __init__(self, rank: int, size: int):
        self.rank, self.size, self.is_chief = rank, size, rank == 0

    def _sum_floats(self, values: List[float], purpose: str) -> List[float]:
        """`values` summed over the workers. `purpose` ("lockstep": one flag, "scores": three per score name)
        says which sum this is: TensorFlow gives each its own collective instance (fixed shape each)."""
        raise NotImplementedError

    def shard(self, dataset):
        return ShardedDataset(dataset, self.rank, self.size)

    def lockstep(self, batches):
        last = None
        for batch in batches:
            self._sum_floats([1.0], "lockstep")
            last = batch
            yield batch
        while self._sum_floats([0.0], "lockstep")[0] > 0:
            if last is None:
                raise ConfigError(f"worker {self.rank} has no batch in this epoch while others have: the dataset "
                                  f"has too few sequences for {self.size} workers", subject="config key 'train'",
                                  suggestion="use fewer workers or a larger dataset")
            yield _empty_batch(last)

    def reduce_scores(self, scores):
        names = sorted(scores.frames)
        values = [scores.loss[n] or 0.0 for n in names] + [scores.error[n] for n in names] + \
            [scores.frames[n] for n in names]
        summed = self._sum_floats(values, "scores")
        k = len(names)
        for i, name in enumerate(names):
            if scores.loss[name] is not None:
                scores.loss[name] = summed[i]
            scores.error[name], scores.frames[name] = summed[k + i], summed[2 * k + i]
        return scores


def _empty_batch(batch):
    """A batch like `batch` with no sequences (each array's first axis sliced to 0)."""
    inputs, lengths = batch
    return {k: v[:0] for k, v in inputs.items()}, {k: v[:0] for k, v in lengths.items()}


class TfWorkers(_Workers):
    """Workers of a `tf.distribute.MultiWorkerMirroredStrategy` (from TF_CONFIG): sums by collective all-reduce."""

    _GROUP_KEY = 11
    _STEP, _SYNC, _SCORES, _PARAMS = 1, 2, 3, 4  # one collective instance per purpose (fixed shapes each)
    _FLOAT_SUMS = {"lockstep": _SYNC, "scores": _SCORES}  # _sum_floats' purpose -> its collective instance

    def __init__(self, identity: Dict[str, Any], timeout: float):
        import tensorflow as tf

        super().__init__(identity["rank"], identity["size"])
        self.tf, self.timeout = tf, float(timeout)
        self.strategy = tf.distribute.MultiWorkerMirroredStrategy()  # starts the server, enables collectives

    def _all_sum(self, tensor, instance_key: int):
        return self.tf.raw_ops.CollectiveReduceV2(
            input=tensor, group_size=self.size, group_key=self._GROUP_KEY, instance_key=instance_key,
            ordering_token=[], merge_op="Add", final_op="Id", timeout_seconds=self.timeout)

    def _sum_floats(self, values, purpose):
        summed = self._all_sum(self.tf.constant(values, self.tf.float64), self._FLOAT_SUMS[purpose])
        return [float(v) for v in summed.numpy()]

    def reduce_step(self, objective, grads):
        tf = self.tf
        present = [i for i, g in enumerate(grads) if g is not None]
        dense = [tf.convert_to_tensor(grads[i]) for i in present]
        flat = tf.concat([tf.reshape(objective, [1])] + [tf.reshape(g, [-1]) for g in dense], axis=0)
        summed = self._all_sum(flat, self._STEP)
        sizes = [1] + [tf.size(g) for g in dense]
        parts = tf.split(summed, tf.stack(sizes), num=len(sizes))
        out = list(grads)
        for i, g, part in zip(present, dense, parts[1:]):
            out[i] = tf.reshape(part, tf.shape(g))
        return tf.reshape(parts[0], []), out

    def copy_params_from_chief(self, params) -> None:
        tf = self.tf
        flat = tf.concat([tf.reshape(p, [-1]) for p in params], axis=0)
        summed = self._all_sum(flat if self.is_chief else tf.zeros_like(flat), self._PARAMS)
        offset = 0
        for p in params:
            n = int(tf.size(p))
            p.assign(tf.reshape(summed[offset:offset + n], p.shape))
            offset += n


class TorchWorkers(_Workers):
    """Workers of a `torch.distributed` process group (gloo): sums by all-reduce."""

    def __init__(self, identity: Dict[str, int], backend: str, timeout: float):
        import datetime

        import torch.distributed as dist

        super().__init__(identity["rank"], identity["size"])
        self.dist = dist
        if not dist.is_initialized():
            dist.init_process_group(backend=backend, init_method="env://", rank=self.rank, world_size=self.size,
                                    timeout=datetime.timedelta(seconds=timeout))
            # taken down while the interpreter is alive: left to interpreter exit, gloo's threads sometimes end the
            # finished run with SIGABRT ("terminate called without an active exception"; pytorch issue #190489)
            atexit.register(_destroy_process_group, dist)
            global _TORCH_GROUPS_STARTED
            _TORCH_GROUPS_STARTED += 1

    def _sum_floats(self, values, purpose):
        import torch

        tensor = torch.tensor(values, dtype=torch.float64)
        self.dist.all_reduce(tensor)
        return tensor.tolist()

    def reduce_objective(self, objective):
        total = objective.detach().clone().reshape(1)
        self.dist.all_reduce(total)
        return total.reshape(())

    def reduce_gradients(self, params) -> None:
        import torch

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self.dist.all_reduce(flat)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset:offset + n].view_as(p).clone()
            offset += n

    def copy_params_from_chief(self, params) -> None:
        import torch

        with torch.no_grad():
            for p in params:
                self.dist.broadcast(p.data, src=0)


def _destroy_process_group(dist) -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


_TORCH_GROUPS_STARTED = 0
"""torch.distributed process groups this process started (`TorchWorkers`)."""


def torch_groups_started() -> int:
    return _TORCH_GROUPS_STARTED


def end_worker_process(code: int) -> None:
    """Ends this process with exit status `code` after its exit handlers (the process group's destruction among
    them), skipping the interpreter's teardown: there gloo's C++ objects still sometimes abort a finished worker
    with SIGABRT ("terminate called without an active exception"), also after the group was destroyed (seen
    in 1 of 8 two-worker runs on a loaded machine; none in 16 with this exit). A job scheduler would count such
    a run as failed."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def workers_from_config(values: Mapping[str, Any], backend: str, task: str, environ=None):
    """The worker group the config and environment ask for (`SingleProcess` without one). Call before anything
    runs on TensorFlow: its collective ops must be set up first."""
    environ = os.environ if environ is None else environ
    tf_opts, torch_opts = values.get("distributed_tf"), values.get("torch_distributed")
    if tf_opts is not None and torch_opts is not None:
        raise ConfigError("both distributed_tf and torch_distributed are set", subject="config key 'distributed_tf'",
                          suggestion="keep the one of your backend")
    if backend == "torch" and tf_opts is not None:
        raise ConfigError("distributed_tf is TensorFlow's; this config's backend is 'torch'",
                          subject="config key 'distributed_tf'", suggestion="use torch_distributed = {}")
    if backend != "torch" and torch_opts is not None:
        raise ConfigError(f"torch_distributed needs backend = 'torch' (this config's backend is '{backend}')",
                          subject="config key 'torch_distributed'",
                          suggestion="use distributed_tf = {} with TF_CONFIG, or set backend = 'torch'")
    opts = tf_opts if tf_opts is not None else torch_opts
    if opts is None or opts is False:
        if environ.get("TF_CONFIG") and backend != "torch":
            print("notice: the environment variable TF_CONFIG is set, but the config has no distributed_tf: "
                  "training on this process alone", file=sys.stderr)
        if environ.get("WORLD_SIZE", "1") != "1" and backend == "torch":
            print(f"notice: the environment variable WORLD_SIZE is {environ['WORLD_SIZE']} (torchrun?), but the "
                  f"config has no torch_distributed: training on this process alone", file=sys.stderr)
        return SingleProcess()
    if backend == "torch":
        opts = _options(opts, "torch_distributed", {"backend": "gloo", "timeout_sec": DEFAULT_TIMEOUT_SEC,
                                                    "reduce_type": "grad"})
        if opts["reduce_type"] != "grad" or opts["backend"] != "gloo":
            raise InvalidOptionError(f"only backend 'gloo' and reduce_type 'grad' (summed gradients every step) "
                                     f"are implemented, got {opts['backend']!r}, {opts['reduce_type']!r}",
                                     subject="config key 'torch_distributed'", suggestion="remove these options")
        identity = torch_env_identity(environ)
    else:
        opts = _options(opts, "distributed_tf", {"timeout_sec": DEFAULT_TIMEOUT_SEC, "strategy": "multi_worker"})
        if opts["strategy"] != "multi_worker":
            raise InvalidOptionError(f"strategy {opts['strategy']!r} is not implemented: only 'multi_worker' "
                                     f"(MultiWorkerMirroredStrategy, one process per worker); a one-process "
                                     f"MirroredStrategy has one replica per device, and a CPU-only machine has one",
                                     subject="config key 'distributed_tf'",
                                     suggestion="start one worker process per device with TF_CONFIG on 127.0.0.1")
        identity = tf_config_identity(environ.get("TF_CONFIG"))
    if task != "train":
        print(f"notice: only training is distributed; task '{task}' runs on worker {identity['rank']} alone",
              file=sys.stderr)
        return SingleProcess()
    if values.get("maximize_grad_norm"):
        raise ConfigError("maximize_grad_norm is not implemented with several workers (its norm would be the "
                          "worker's, not the combined batch's)", subject="config key 'maximize_grad_norm'",
                          suggestion="remove it, or train on one process")
    if backend != "torch" and values.get("tf_jit"):
        raise ConfigError("tf_jit is not possible with distributed_tf: TensorFlow's XLA does not compile collective "
                          "ops for CPU devices ('Collectives are not yet implemented for CPU devices when compiling "
                          "with XLA')", subject="config key 'tf_jit'", suggestion="remove tf_jit")
    if backend == "torch":
        return TorchWorkers(identity, opts["backend"], opts["timeout_sec"])
    return TfWorkers(identity, opts["timeout_sec"])


class FollowerCheckpoints:
    """The checkpoints as a worker other than the chief sees them: it restores like the chief (from the shared
    model folder) and writes nothing."""

    def __init__(self, manager):
        self.manager = manager

    def __getattr__(self, name: str):
        return getattr(self.manager, name)

    def save(self, epoch: int, objects, extra=None, *, overwrite: bool = False) -> None:
        return None
