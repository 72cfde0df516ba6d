"""`Session`: everything one compile-net run sets up for the config's backend (model, trainer, datasets,
optimizer, checkpoints, the model folder's lock) and the tasks it runs: train (resuming where a run stopped),
eval, forward, search."""

from __future__ import annotations

import os
import sys
from typing import Dict, Optional

from ..config import Config
from ..errors import CheckpointError, ConfigError, InvalidOptionError, ModelFolderError
from ..lazy_tf import tf  # imported at first use: a PyTorch run does not load it (~500 MB)
from .checkpoint_interchange import TORCH_SUFFIX as _TORCH_SUFFIX  # (imports neither PyTorch nor TensorFlow)
from .collector_pause import collector_paused
from .host_memory import bound_primitive_cache, set_up_host_memory


# settings that only the TensorFlow backend reads or that only make sense there
_TF_ONLY_KEYS = ("tf_session_opts", "tf_log_memory_usage", "debug_add_check_numerics_ops",
                 "debug_add_check_numerics_on_output", "tf_equal_layers_min")


def backend_name(config: Config) -> str:
    """The config's `backend` ("tensorflow", the default, or "torch"), checked by `get_backend`."""
    from ..backends import get_backend

    name = config.get("backend", "tensorflow")
    if not isinstance(name, str):
        raise InvalidOptionError(f"expected a backend name such as 'torch', got {name!r}",
                                 subject="config key 'backend'", suggestion="use 'tensorflow' or 'torch'")
    return get_backend(name).name


def set_up_process() -> None:
    """What a compile-net run sets in its process before anything else: TensorFlow's C++ log level (warnings and
    errors only, unless the environment says otherwise), malloc's thresholds, PyTorch's large tensors in huge pages
    and oneDNN's primitive cache bounded (`host_memory`). `Session` calls it before the model's first tensor; code
    that builds and steps a model without a Session does too (the benchmarks' netcompiler sides)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    set_up_host_memory()
    bound_primitive_cache()


class Session:
    """Everything one compile-net run sets up, for the config's backend: model, step runner (trainer), datasets,
    optimizer, checkpoints."""

    def __init__(self, config: Config, network, log, task: str = "train"):
        set_up_process()
        from ..emit.equal_layers import min_layers_setting
        from ..emit.model import CompiledNetwork

        self.config = config
        self.log = log
        self.backend = backend_name(config)
        self.torch = self.backend == "torch"
        from .distributed import workers_from_config

        self.workers = workers_from_config(config.values, self.backend, task)  # before TF runs anything
        seed = config.get("random_seed", 42)
        self._denormals_flushed_before: Optional[bool] = None
        """The floating-point mode a torch run found (`configure_torch`), given back by `close`."""
        if self.torch:
            from .torch_trainer import configure_torch

            self._denormals_flushed_before = configure_torch(seed, config.get("torch_num_threads"))
            for key in _TF_ONLY_KEYS:
                if key in config:
                    print(f"notice: config key '{key}' is a TensorFlow setting; it has no effect with "
                          f"backend 'torch'", file=sys.stderr)
        else:
            tf.random.set_seed(seed)
        self.model_prefix = self._model_prefix()
        with collector_paused():  # parameters of thousands of layers: see collector_pause.py
            if network is None:  # a frontend config: on TF its layer dict, else get_model() run directly
                from .frontend_layers import frontend_step_model
                from .frontend_model import get_model_epoch

                epoch = get_model_epoch(self.checkpoint_manager(clean=False, task=task), config, task)
                self.model = frontend_step_model(config, self.backend, seed=seed, epoch=epoch)
            else:
                equal_layers_min = 0 if self.torch else min_layers_setting(config.values, sys.stderr)
                self.model = CompiledNetwork(network, seed=seed, backend=self.backend,
                                             equal_layers_min=equal_layers_min)
        self.lock = None

    def scalar_writer(self, enabled: bool = True):
        """The writer of training's per-epoch TensorBoard scalars (`summaries.py`; `tf_log_dir`)."""
        from ..config import tensorboard_dir
        from .summaries import scalar_writer

        return scalar_writer(self.backend, tensorboard_dir(self.config.values, self.model_prefix), enabled)

    def close(self) -> None:
        """Ends the run: releases the model's lock; on PyTorch, denormal floats are no longer flushed to zero unless
        they were before the run (a process that goes on, e.g. a notebook, gets its floating-point mode back)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if self._denormals_flushed_before is not None:
            from .torch_trainer import end_denormal_flush

            end_denormal_flush(self._denormals_flushed_before)
            self._denormals_flushed_before = None

    def lock_model(self, task: str, read_only_ok: bool = False) -> bool:
        """Takes the model's lock for the rest of the run (see `lock.py`); returns whether it holds it.

        With `read_only_ok` (eval, forward), a model folder that does not exist or cannot be written is used
        without a lock: such a run writes nothing there (and does not clean up leftovers)."""
        from .lock import ModelLock

        directory = os.path.dirname(self.model_prefix) or "."
        if read_only_ok and not os.path.isdir(directory):
            return False
        lock = ModelLock(self.model_prefix, task)
        try:
            lock.acquire()
        except ModelFolderError as exc:
            if read_only_ok and exc.reason in ("not writable", "disk full"):
                print(f"notice: {exc}; reading the checkpoints without a lock and without cleaning up",
                      file=sys.stderr)
                return False
            raise
        if lock.took_over:
            print(f"took over the lock '{lock.path}' left by a process that ended "
                  f"(pid {lock.took_over.get('pid', '?')})", file=self.log)  # like "resuming after": not a warning
        self.lock = lock
        return True

    # --- settings ------------------------------------------------------------------------
    def _model_prefix(self) -> str:
        return model_prefix_of(self.config)

    def batching(self, values=None):
        """The batch settings of the config (or of `values`: one epoch's settings, see epoch_networks.py)."""
        from .batching import parse_batching

        get = self.config.get if values is None else values.get
        settings = parse_batching(batch_size=get("batch_size", 5000), max_seqs=get("max_seqs", -1),
                                  chunking=get("chunking"), max_seq_length=get("max_seq_length"),
                                  min_seq_length=get("min_seq_length"))
        settings.check_data_keys(self._extern_data())
        return settings

    def _extern_data(self):
        """The network's extern_data: data key -> its description."""
        return self.model.extern_data if hasattr(self.model, "extern_data") else self.model.network.extern_data

    def dataset(self, key: str, required: bool = True, opts=None):
        """The dataset of config key `key` (or, with `opts`, of these options, named `key`)."""
        from .datasets import make_dataset

        opts = self.config.get(key) if opts is None else opts
        if opts is None:
            if required:
                raise ConfigError(f"the config has no '{key}' dataset", subject="config",
                                  suggestion=f"add {key} = {{'class': 'HDFDataset', 'files': [...]}}")
            return None
        if isinstance(opts, dict) and key == "train" and "seq_ordering" not in opts and self.config.get("batching"):
            opts = dict(opts, seq_ordering=self.config.get("batching"))
        dataset = make_dataset(opts, key)
        # class indices are checked against the network's dims (extern_data), which is what TF indexes with
        dataset.expect_dims({k: d.dim for k, d in self._extern_data().items() if d.sparse})
        return dataset

    def checkpoint_manager(self, clean: bool = True, task: str = "train"):
        """The backend's checkpoint manager for the model; a model whose checkpoints are all of the other
        backend is refused (training cannot resume there: the optimizer's state is the other backend's), except
        for eval/forward/search that name the checkpoint to load."""
        from .checkpoint_files import complete_checkpoints

        if self.torch:  # (its module does not load TensorFlow)
            from .torch_checkpoints import TorchCheckpointManager

            manager, other, other_name = TorchCheckpointManager(self.model_prefix, clean=clean), \
                complete_checkpoints(self.model_prefix), "tensorflow"
        else:
            from .checkpoints import CheckpointManager

            manager, other, other_name = CheckpointManager(self.model_prefix, clean=clean), \
                complete_checkpoints(self.model_prefix, _TORCH_SUFFIX), "torch"
        if other and manager.latest_complete() is None and not (
                task != "train" and (self.config.get("load") or self.config.get("load_epoch"))):
            raise ConfigError(f"the model '{self.model_prefix}' has checkpoints of backend '{other_name}' "
                              f"({other[-1][1]}), but this run's backend is '{self.backend}'",
                              subject="config key 'backend'",
                              suggestion=f"set backend = '{other_name}'; or, to continue on '{self.backend}' from "
                                         f"its parameters, set import_model_train_epoch1 = '{other[-1][1]}' and "
                                         f"another 'model' path (eval/forward/search: load = '{other[-1][1]}')")
        return manager

    def model_state(self):
        """What checkpoints hold of the model: TF's trackable root, or PyTorch's parameters by checkpoint name."""
        return {"model": self.model.params if self.torch else self.model.checkpoint_root}

    def step_runner(self, optimizer=None):
        """The backend's trainer for the model (with `optimizer` None: for evaluation only)."""
        from .epochs import accum_grad_steps
        from .optimizers import clip_gradients_fn, maximize_grad_norm

        from .precision import step_compute

        get = self.config.get
        if optimizer is None:
            settings = dict(optimizer=None, batching=self.batching(), log=self.log)
        else:
            settings = dict(optimizer=optimizer, batching=self.batching(),
                            stop_on_nonfinite=bool(get("stop_on_nonfinite_train_score", True)), log=self.log,
                            accum_grad_steps=accum_grad_steps(get("accum_grad_multiple_step", 1)),
                            maximize_grad_norm=maximize_grad_norm(self.config.values))
        settings["compute"] = step_compute(self.config.values, self.backend)  # tf_amp/torch_amp, tf_jit/torch_compile
        if self.torch:
            from .torch_optimizers import process_gradients_fn
            from .torch_trainer import TorchTrainer

            if optimizer is not None:
                settings["process_gradients"] = process_gradients_fn(self.config.values)
            return TorchTrainer(self.model, **settings)
        from .trainer import Trainer

        if optimizer is not None:
            settings.update(clip_gradients=clip_gradients_fn(self.config.values))
        with collector_paused():  # the optimizer's slot variables (see collector_pause.py)
            return Trainer(self.model, **settings)

    # --- tasks -----------------------------------------------------------------------------
    def train(self) -> None:
        from .training_task import train

        train(self)

    def restore_params(self, checkpoints, path: str, skip=()) -> Optional[str]:
        """Restores the model from checkpoint `path` (except the parameters in `skip`, preloaded): of this backend
        through `checkpoints` (strictly, optimizer included where asked), else its parameters only, by name.
        Returns None, or who wrote it when that was not this backend ("RETURNN", "the other backend")."""
        from .checkpoint_interchange import RETURNN, checkpoint_format, checkpoint_stem, load_params

        path = checkpoint_stem(path)
        fmt = checkpoint_format(path)
        ignore_missing = self.config.get("load_ignore_missing_vars", False)
        if not isinstance(ignore_missing, bool):
            raise InvalidOptionError(f"expected True or False, got {ignore_missing!r}",
                                     subject="config key 'load_ignore_missing_vars'",
                                     suggestion="set it to True to keep the initial values of parameters the "
                                                "checkpoint lacks")
        if (fmt is None or fmt == self.backend) and not skip and not ignore_missing:
            checkpoints.restore(path, self.model_state())
            return None
        load_params(path, self.model.params, self.model.backend, skip=skip, ignore_missing=ignore_missing)
        return None if fmt == self.backend else "RETURNN" if fmt == RETURNN else "the other backend"

    def load_epoch_setting(self, checkpoints) -> Optional[int]:
        """RETURNN's `load_epoch` (None when unset or <= 0), checked: a complete checkpoint of that epoch exists."""
        value = self.config.get("load_epoch")
        if value is None or (isinstance(value, int) and not isinstance(value, bool) and value <= 0):
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidOptionError(f"expected an epoch number, got {value!r}", subject="config key 'load_epoch'",
                                     suggestion="set load_epoch = N for the checkpoint '<model>.NNN', or remove it")
        from .checkpoint_interchange import checkpoint_format
        from .checkpoint_files import checkpoint_path, complete_checkpoints

        if checkpoint_format(checkpoint_path(self.model_prefix, value)) is None:  # any writer's (RETURNN's too)
            have = sorted({e for marker in (".index", _TORCH_SUFFIX)
                           for e, _ in complete_checkpoints(self.model_prefix, marker)})
            raise InvalidOptionError(
                f"there is no checkpoint of epoch {value} ('{checkpoint_path(self.model_prefix, value)}'; "
                f"checkpoints of epochs: {', '.join(map(str, have)) or 'none'})", subject="config key 'load_epoch'",
                suggestion="give an epoch that has a checkpoint, or the checkpoint itself with 'load'")
        return value

    def _restore_for_inference(self, task: str):
        from .checkpoint_files import checkpoint_path
        from .preload import apply_preloads, parse_preloads

        preloads = parse_preloads(self.config.get("preload_from_files"))
        locked = self.lock_model(task, read_only_ok=True)
        checkpoints = self.checkpoint_manager(clean=locked, task=task)
        load_epoch = None if self.config.get("load") else self.load_epoch_setting(checkpoints)
        path = self.config.get("load") or (checkpoint_path(self.model_prefix, load_epoch) if load_epoch
                                           else checkpoints.latest_path())
        random_init = self.config.get("allow_random_model_init", False)
        if path is None and random_init is not True:
            raise CheckpointError(f"no checkpoint to load: none found at '{self.model_prefix}.NNN' and 'load' "
                                  f"is not set (allow_random_model_init = True runs with the initial parameters "
                                  f"and those of preload_from_files)")
        preloaded = apply_preloads(preloads, self.model.params, self.model.backend, task=task)
        if path is None:
            print(f"notice: no checkpoint to load and allow_random_model_init is True: the parameters not preloaded "
                  f"({len(self.model.params) - len(preloaded)} of {len(self.model.params)}) keep their initial "
                  f"values", file=sys.stderr)
            return "the initial parameters" + (" and preload_from_files" if preloaded else "")
        try:
            self.restore_params(checkpoints, path, skip=preloaded)
        except CheckpointError as exc:
            raise checkpoints.with_previous_hint(exc, path, training=False) from None
        return path

    def evaluate(self) -> None:
        from .epochs import format_scores

        path = self._restore_for_inference("eval")
        trainer = self.step_runner()
        loss_names, error_names = self.model.loss_names()
        for name, dataset in self.eval_datasets("eval").items():
            scores = trainer.evaluate(dataset, epoch=1)
            print(f"{path}  " + "  ".join(format_scores(name, scores, loss_names, error_names)), file=self.log)

    def eval_datasets(self, task: str) -> Dict[str, object]:
        """The datasets that training scores after each epoch and `--task eval` scores, by name (see
        `eval_dataset_options`)."""
        return {name: self.dataset(name, opts=opts) for name, opts in self.eval_dataset_options(task).items()}

    def eval_dataset_options(self, task: str) -> Dict[str, dict]:
        """Name -> dataset options of the datasets to score, as RETURNN: 'dev' and 'eval' when set, then the
        entries of `eval_datasets` (a dict name -> dataset options; a name given again takes its entry). As a
        list, `eval_datasets` names config keys of datasets instead (e.g. ['dev', 'train']): only those."""
        from .eval_datasets import eval_dataset_options

        return eval_dataset_options(self.config.get, task)

    def forward(self) -> None:
        from .forwarding import forward_to_hdf

        keys = [k for k in ("eval", "dev", "train") if self.config.get(k) is not None]
        if not keys:
            raise ConfigError("nothing to forward: the config has none of 'eval', 'dev', 'train'",
                              subject="config", suggestion="add eval = {'class': 'HDFDataset', 'files': [...]}")
        key = keys[0]
        path = self._restore_for_inference("forward")
        layer_name = self.config.get("forward_output_layer", "output")
        output_file = self.config.get("output_file") or f"{self.model_prefix}.forward.hdf"
        if hasattr(self.model, "forward_outputs"):  # a frontend model: what its forward_step marks as output
            from .frontend_forward import forward_frontend_to_hdf

            count = forward_frontend_to_hdf(self.model, self.dataset(key), output_file, self.batching())
            print(f"wrote the default output of forward_step for {count} sequences of '{key}' to {output_file} "
                  f"(parameters from {path})", file=self.log)
            return
        count = forward_to_hdf(self.model, self.dataset(key), layer_name, output_file, self.batching())
        print(f"wrote the outputs of layer '{layer_name}' for {count} sequences of '{key}' to {output_file} "
              f"(parameters from {path})", file=self.log)

    def export(self) -> None:
        from .exporting import check_export_path, default_export_path, export_saved_model

        path = check_export_path(self.config.get("export_path") or default_export_path(self.model_prefix))
        source = self._restore_for_inference("export")
        layer_name = self.config.get("forward_output_layer", "output")
        names = export_saved_model(self.model, layer_name, path)
        print(f"exported layer '{layer_name}' (parameters from {source}) as a TensorFlow SavedModel to {path}: "
              f"signature 'serving_default', inputs {', '.join(names['inputs'])}; outputs "
              f"{', '.join(names['outputs'])}", file=self.log)

    def search(self) -> None:
        from .searching import (
            check_search_output, record_search_score, run_search, search_output_layer, write_search_output,
        )

        get = self.config.get
        key = get("search_data", "eval" if get("eval") is not None or get("dev") is None else "dev")
        if key not in ("train", "dev", "eval"):
            raise InvalidOptionError(f"search_data {key!r} is not a dataset of the config",
                                     subject="config key 'search_data'", suggestion="use 'eval', 'dev' or 'train'")
        dataset = self.dataset(key)
        layer = search_output_layer(self.model.network, get("search_output_layer", "output"))
        output_file = get("search_output_file") or None
        file_format = get("search_output_file_format", "txt")
        if output_file is not None:
            check_search_output(output_file, file_format)
        path = self._restore_for_inference("search")
        target = layer.opts.get("target") or "classes"
        do_eval = bool(get("search_do_eval", True))
        network = self.model.network
        registered = network.registered_extern_data().get(target) if target not in dataset.data_keys() else None
        target_layer = network.get_layer(registered, None, "target") if registered else None
        if do_eval and target not in dataset.data_keys() and target_layer is None:
            print(f"notice: search_do_eval: '{key}' has no data '{target}' (the target of layer '{layer.name}'); "
                  f"no error is computed", file=sys.stderr)
            do_eval = False
        result = run_search(self.model, dataset, layer, self.batching(), target_key=target, do_eval=do_eval,
                            target_layer=target_layer)
        line = f"search of '{key}' with the parameters of {path}: {len(result.hyps)} sequences"
        if do_eval:
            scores = record_search_score(self.model_prefix, path, key, result)
            line += (f", edit-distance error {result.error:.4f} ({result.edits} edits / {result.ref_labels} "
                     f"labels of '{target}'; recorded in {scores})")
        if output_file is not None:
            write_search_output(result, output_file, file_format)
            line += f"; hypotheses written to {output_file}"
        print(line, file=self.log)


def model_prefix_of(config: Config) -> str:
    """The config's `model` (checkpoint prefix), by default `out/<config name>/model`."""
    model = config.get("model")
    if model is None:
        base = os.path.splitext(os.path.basename(config.path))[0]
        model = os.path.join("out", base, "model")
    if not isinstance(model, str):
        raise InvalidOptionError(f"must be a path prefix string, not {model!r}", subject="config key 'model'",
                                 suggestion="set model = 'out/NAME/model' (checkpoints are written as <model>.NNN)")
    return model
