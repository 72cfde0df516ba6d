"""Python's garbage collector is paused while compile-net builds a model and traces its step
(engine/collector_pause.py): inside the pause only, restored after errors, and used by Session and the step's
first call."""

import gc

import numpy as np
import pytest

from netcompiler.engine.collector_pause import collector_paused
from netcompiler.engine.graph_passes import SizedStep


def test_paused_inside_and_restored_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer pause ends it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_after_an_error():
    with pytest.raises(KeyError):
        with collector_paused():
            raise KeyError("x")
    assert gc.isenabled()


def test_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("reduce", [True, False])
def test_only_the_steps_first_call_runs_paused(reduce):
    import tensorflow as tf

    function = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec([None], tf.float32)],
                           autograph=False)
    enabled = []

    def step(x):
        enabled.append(gc.isenabled())
        return function(x)

    sized = SizedStep(step, function, reduce=reduce, threshold=10 ** 6)
    for _ in range(3):
        assert float(sized(np.array([1.5], np.float32))[0]) == 3.0
    assert enabled == [False, True, True]
    assert gc.isenabled()


def test_a_failing_first_call_restores_the_collector():
    def step(x):
        raise ValueError("bad batch")

    sized = SizedStep(step, None, reduce=False)
    with pytest.raises(ValueError, match="bad batch"):
        sized(1)
    assert gc.isenabled()


def test_session_builds_model_and_trainer_paused(monkeypatch, tmp_path):
    from netcompiler.config import load_config
    from netcompiler.emit import model as emit_model
    from netcompiler.engine import trainer as trainer_module
    from netcompiler.engine.optimizers import make_optimizer
    from netcompiler.engine.session import Session
    from netcompiler.network import build_network

    enabled = {}

    def recording(cls, key):
        original = cls.__init__

        def init(self, *args, **kwargs):
            enabled[key] = gc.isenabled()
            original(self, *args, **kwargs)
        monkeypatch.setattr(cls, "__init__", init)

    recording(emit_model.CompiledNetwork, "model")
    recording(trainer_module.Trainer, "trainer")
    path = tmp_path / "c.py"
    path.write_text('extern_data = {"data": {"dim": 3}, "classes": {"dim": 4, "sparse": True}}\n'
                    'network = {"output": {"class": "softmax", "from": "data", "loss": "ce"}}\n'
                    'optimizer = {"class": "adam"}\nlearning_rate = 0.01\n')
    config = load_config(str(path))
    session = Session(config, build_network(config), log=None, task="train")
    session.step_runner(make_optimizer(config.values))
    assert enabled == {"model": False, "trainer": False}
    assert gc.isenabled()


def test_forward_and_search_trace_paused():
    import tensorflow as tf

    from netcompiler.engine import feeding

    enabled = []

    def fn(inputs, lengths):
        enabled.append(gc.isenabled())  # runs while tracing: once, in the first call
        return inputs["data"] * 2.0

    signature = ({"data": tf.TensorSpec([None, None], tf.float32)}, {"data": tf.TensorSpec([None], tf.int32)})
    model = type("Model", (), {"backend": type("Backend", (), {"name": "tensorflow"})})()
    run = feeding.inference_runner(model, fn, signature)
    for _ in range(2):
        out = run({"data": np.ones((1, 2), np.float32)}, {"data": np.array([2], np.int32)})
        assert out.numpy().tolist() == [[2.0, 2.0]]
    assert enabled == [False] and gc.isenabled()


def test_torch_optimizer_made_paused(monkeypatch):
    """torch's first optimizer imports torch._dynamo (~0.7 s): with a large model's objects on the heap, the
    collections that import starts walk them all (the 5000-layer chain's build: ~0.5 s of its ~3 s).
    `make_torch_optimizer` (compile-net's and the benchmarks' one maker) constructs it paused."""
    torch = pytest.importorskip("torch")
    from netcompiler.engine.torch_optimizers import make_torch_optimizer

    enabled = []

    class RecordingAdam(torch.optim.Adam):
        def __init__(self, *args, **kwargs):
            enabled.append(gc.isenabled())
            super().__init__(*args, **kwargs)
    monkeypatch.setattr(torch.optim, "Adam", RecordingAdam)
    optimizer = make_torch_optimizer({"optimizer": {"class": "adam"}, "learning_rate": 0.01},
                                     [torch.nn.Parameter(torch.zeros(3))])
    assert isinstance(optimizer, RecordingAdam)
    assert enabled == [False]
    assert gc.isenabled()
