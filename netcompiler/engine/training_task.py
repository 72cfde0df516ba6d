"""The training task of a `Session` (`compile-net CONFIG`, task "train"): the epochs from where the model folder
left off (or from an imported checkpoint) to `num_epochs`, each trained, scored on the eval datasets, recorded by the
learning-rate control, checkpointed and summarised; with the network of each epoch when it changes per epoch
(`pretrain`, `get_network`) and `use_last_best_model`'s reloads."""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from typing import Dict, Optional

from ..errors import CheckpointError, InvalidOptionError


def train(session) -> None:
    """Trains the session's model epoch by epoch."""
    from ..config import writes_checkpoints
    from .batching import positive_int_setting
    from .checkpoint_cleanup import CleanupRules
    from .checkpoint_manager_base import NoCheckpoints
    from .epochs import format_duration, format_scores
    from .last_best_model import LastBestModel
    from .learning_curve import LearningCurve, learning_curve_path
    from .epoch_scores import score_names
    from .learning_rate import LearningRateControl

    values = session.config.values
    epochs = epoch_networks(session)  # None unless the network changes per epoch (pretrain, get_network)
    last_best = LastBestModel.from_config(values.get("use_last_best_model"),
                                          epochs.schedule.num_pretrain_epochs if epochs else 0, session.log)
    num_epochs = positive_int_setting(session.config.get("num_epochs", 5), "num_epochs")
    save_interval = positive_int_setting(session.config.get("save_interval", 1), "save_interval")
    writes = writes_checkpoints(values)  # model = None: no checkpoints, no history file, no lock
    learning_rates = LearningRateControl.from_config(values, session.model_prefix if writes else None)
    learning_rates.check_error_measure(  # before any work: a wrong key would end the first epoch
        score_names(list(session.model.loss_names()[0]), eval_names=list(session.eval_dataset_options("train"))))
    cleanup = CleanupRules.from_setting(values.get("cleanup_old_models"))
    follower, writes = writes and not session.workers.is_chief, writes and session.workers.is_chief
    if follower:  # another worker than the chief: reads the chief's files, writes none (distributed.py)
        learning_rates.filename, cleanup = None, None
    curve_path = learning_curve_path(values, session.model_prefix, writes)
    curve = LearningCurve(curve_path, session.log) if curve_path else None
    optimizer, set_learning_rate, trainer, step_rates, state = training_parts(session)
    # mistakes in the datasets are found before the lock makes the folder; a worker trains on its part
    train_data = session.workers.shard(session.dataset("train"))
    eval_data = session.eval_datasets("train")  # dev, eval, eval_datasets: scored after each epoch
    if eval_data and (values.get("max_seq_length") or values.get("min_seq_length")):
        print("notice: config keys 'max_seq_length'/'min_seq_length' limit the training batches only: "
              f"{', '.join(eval_data)} are scored on every sequence (RETURNN's TensorFlow engine drops long "
              "sequences from dev, its PyTorch engine from every eval dataset)", file=sys.stderr)
    if writes:
        session.lock_model("train")
    checkpoints = session.checkpoint_manager() if writes else NoCheckpoints(session.checkpoint_manager(clean=False))
    if follower:
        from .distributed import FollowerCheckpoints

        checkpoints = FollowerCheckpoints(session.checkpoint_manager(clean=False))
    start_epoch = resume_or_import(session, checkpoints, state)
    session.workers.copy_params_from_chief(session.model.trainable_params)
    # Rates chosen for epochs that never reached a checkpoint are not history: the config (perhaps changed
    # since, e.g. a lower learning_rate after a non-finite loss) decides them anew.
    learning_rates.forget_after(start_epoch - 1)
    loss_names, error_names = session.model.loss_names()
    last_checkpoint = checkpoints.latest_path()
    if start_epoch > num_epochs:
        print(f"all {num_epochs} epochs are done (checkpoint {last_checkpoint})", file=session.log)
        return
    summary = session.scalar_writer(enabled=not follower)  # TensorBoard; on PyTorch without TensorFlow
    with contextlib.closing(summary):  # the event file is closed also when training stops with an error
        for epoch in range(start_epoch, num_epochs + 1):
            started = time.monotonic()
            new_params = epochs is not None and epochs.change_for_epoch(session, epoch)  # this epoch's network
            if last_best is not None and last_best.reload_if_better(session, epoch, learning_rates, checkpoints):
                new_params = True  # the best epoch's parameters: the optimizer starts afresh, as in RETURNN
            if new_params:  # a new optimizer for the new parameters; the step count goes on
                optimizer, set_learning_rate, trainer, step_rates, state = training_parts(session, trainer)
                loss_names, error_names = session.model.loss_names()
            if epochs is not None:  # the epoch's batch settings and learning rate ('#config', pretraining)
                trainer.batching = session.batching(epochs.values)
                epochs.prepare_learning_rate(learning_rates, epoch)
            lr = learning_rates.learning_rate_for_epoch(epoch)
            set_learning_rate(optimizer, lr)
            if step_rates is not None:  # each step's rate comes from the epoch's
                trainer.before_train_step = lambda step, e=epoch, rate=lr: step_rates(step, e, rate)
            with _frozen_heap():
                train_scores = session.workers.reduce_scores(trainer.train_epoch(train_data, epoch, last_checkpoint))
            parts = format_scores("train", train_scores, loss_names, error_names)
            record = _score_record("train", train_scores)
            for name, data in eval_data.items():
                scores = trainer.evaluate(data, epoch)
                parts += format_scores(name, scores, loss_names, error_names)
                record.update(_score_record(name, scores))
            learning_rates.record(epoch, record)
            if epoch % save_interval == 0 or epoch == num_epochs:
                last_checkpoint = checkpoints.save(epoch, state, {"learning_rate": lr}) or last_checkpoint
                if cleanup is not None:
                    cleanup.apply(checkpoints, {e: s for e, (_, s) in learning_rates.history().items()}, num_epochs)
            summary.write(epoch, dict(record, learning_rate=lr))
            if curve is not None:
                curve.update(learning_rates.history(), epoch)
            print(f"epoch {epoch}  " + "  ".join(parts) + f"  lr {lr:g}  {format_duration(time.monotonic() - started)}",
                  file=session.log, flush=True)


@contextlib.contextmanager
def _frozen_heap():
    """Within: the objects that exist now (TF modules, the model, its graph) are left out of garbage collections,
    which the input pipeline's batches trigger often (a 12AX epoch's batches: 470k -> 580k frames per CPU-second).
    Afterwards they are collected as before (no leak when one process trains many times, as tests do)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def epoch_networks(session):
    """The per-epoch networks (`pretrain`, `get_network`; None without): the model becomes the network of the
    epoch whose checkpoint training resumes from (or of epoch 1)."""
    from .epoch_networks import EpochNetworks, network_epoch_for_task

    epochs = EpochNetworks.from_config(session.config, session.log)
    if epochs is not None:
        epochs.start(session, network_epoch_for_task(session.config, epochs.schedule, "train", session.model_prefix))
        print(f"network per epoch: {epochs.schedule.describe()}", file=session.log)
    return epochs


def training_parts(session, old_trainer=None):
    """A new optimizer for the model's parameters, its step runner (continuing `old_trainer`'s step count: when
    the network changed or the parameters were reloaded), the per-step rate hook (None without
    dynamic_learning_rate) and what checkpoints save, as (optimizer, set_learning_rate, trainer, step_rates,
    state)."""
    from .dynamic_learning_rate import per_step_learning_rate

    values = session.config.values
    if session.torch:
        from .torch_optimizers import make_torch_optimizer, set_torch_learning_rate as set_learning_rate

        optimizer = make_torch_optimizer(values, session.model.trainable_params)
    else:
        from .optimizers import make_optimizer, set_learning_rate

        optimizer = make_optimizer(values)
    trainer = session.step_runner(optimizer)  # on TensorFlow, builds the optimizer's slots (restored into)
    trainer.workers = session.workers
    state = dict(session.model_state(), optimizer=optimizer, step=trainer if session.torch else trainer.step_count)
    if old_trainer is not None:  # the step count goes on
        if session.torch:
            trainer.step_count = old_trainer.step_count
        else:
            trainer.step_count.assign(old_trainer.step_count)
    step_rates = per_step_learning_rate(values.get("dynamic_learning_rate"), session.model, optimizer,
                                        set_learning_rate)
    return optimizer, set_learning_rate, trainer, step_rates, state


def resume_or_import(session, checkpoints, state) -> int:
    """The first epoch to train: after the newest complete checkpoint, or 1 (optionally importing one)."""
    from .start_epoch import restore_for_start_epoch, start_epoch_setting

    from .preload import apply_preloads, parse_preloads

    preloads = parse_preloads(session.config.get("preload_from_files"))
    start = start_epoch_setting(session.config.get("start_epoch"))
    check_load_epoch_for_training(session, checkpoints, start)
    try:
        restored = restore_for_start_epoch(checkpoints, start, state)
    except CheckpointError as exc:
        raise checkpoints.with_previous_hint(exc, checkpoints.latest_path(), training=True) from None
    if restored is not None:
        epoch, _extra = restored
        apply_preloads(preloads, session.model.params, session.model.backend, task="train", from_scratch=False)
        if session.config.get("load_ignore_missing_vars"):
            print("notice: config key 'load_ignore_missing_vars' applies to load, load_epoch and "
                  "import_model_train_epoch1; resuming restores this training's own checkpoint, which is "
                  "complete", file=sys.stderr)
        print(f"resuming after epoch {epoch} from {checkpoints.latest_path()}", file=session.log)
        return epoch + 1
    preloaded = apply_preloads(preloads, session.model.params, session.model.backend, task="train")
    initial = session.config.get("import_model_train_epoch1") or session.config.get("load")
    if initial:
        writer = session.restore_params(checkpoints, initial, skip=preloaded)
        if writer is not None:
            print(f"notice: '{initial}' is a checkpoint of {writer}: only its parameters are loaded; the "
                  f"optimizer's state starts fresh on backend '{session.backend}'", file=sys.stderr)
        print(f"initialised the parameters from {initial}", file=session.log)
    return 1


def check_load_epoch_for_training(session, checkpoints, start: Optional[int]) -> None:
    """In training, `load_epoch` names the checkpoint training continues from, as in RETURNN: with
    start_epoch N it must be N - 1; with start_epoch 'auto' training resumes after the newest one anyway."""
    epoch = session.load_epoch_setting(checkpoints)
    if epoch is None:
        return
    if start is not None and epoch != start - 1:
        raise InvalidOptionError(f"load_epoch {epoch} with start_epoch {start}: continuing at epoch {start} loads "
                                 f"the checkpoint of epoch {start - 1}", subject="config key 'load_epoch'",
                                 suggestion=f"set start_epoch = {epoch + 1}, or use import_model_train_epoch1 "
                                            f"to start a new training from it")
    latest = checkpoints.latest_complete()
    if start is None and latest is not None and latest[0] != epoch:
        print(f"notice: config key 'load_epoch' is {epoch}, but training resumes after the newest checkpoint "
              f"(epoch {latest[0]}), as in RETURNN; to continue from epoch {epoch}, set start_epoch = "
              f"{epoch + 1}", file=sys.stderr)


def _score_record(prefix: str, scores) -> Dict[str, float]:
    record = {}
    for layer, values in scores.normalized().items():
        if values["loss"] is not None:  # None: an error only (a frontend loss marked as_error)
            record[f"{prefix}_score_{layer}"] = values["loss"]
        record[f"{prefix}_error_{layer}"] = values["error"]
    return record
