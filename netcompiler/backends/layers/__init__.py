"""The layer-dict backend (seed 001): a frontend model's calls become the layers of a network dict.

How it works: the model's `train_step` runs once on a small probe batch on TensorFlow (eager) while an
`OpRecorder` (`recorder.py`) is set as the frontend's op recorder (`frontend._dispatch.set_op_recorder`). Every
outermost frontend op call on Tensors becomes one recorded layer with the output template the op computed;
ops called inside an op are not layers. `dict_builder.py` turns the records into a network dict: a catalogue
layer (`catalogue.py`: activation, combine, eval, compare, cast, dropout, dot, reduce, softmax_over_spatial)
where one gives the very template the op gave, else the generic `frontend_op` layer (`layers/frontend_op.py`)
that calls the same op again on its inputs; parameters become `variable` layers (names: `param_layer_name`),
marked losses loss layers. The network builder is handed in as a function (this package does not import
`network.py`). `rf.scan` becomes a `rec` layer with the step's ops as its unit (`loop_recorder.py`); `rf.while_loop`,
`rf.cond` and in-place updates (`rf.parameter_assign`) are refused (`LayerDictUnsupported`).
"""

from .dict_builder import LayerDict, build_layer_dict, param_checkpoint_name, param_layer_name
from .recorder import InputRef, LayerDictUnsupported, OpRecorder, RecordedOp

__all__ = ["InputRef", "LayerDict", "LayerDictUnsupported", "OpRecorder", "RecordedOp", "build_layer_dict",
           "param_checkpoint_name", "param_layer_name"]
