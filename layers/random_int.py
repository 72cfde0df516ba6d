"""rand_int: uniformly drawn random integers of a given shape (RETURNN's RandIntLayer: a uniform draw)."""

from typing import List

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.tensor import FEATURE, SPATIAL, Data, Dim

from .constant import check_dtype
from .axis_options import is_int


class RandIntLayer(LayerBase):
    """Random values drawn uniformly from [minval, maxval) (ints; a float dtype gives floats), laid out as
    `shape`; new values at every run.

    Options: `shape` (required: a list of ints and Dims; an int is a new static axis, the last one the feature
    axis as in RETURNN; `batch_dim` or dynamic Dims take their sizes from the run), `maxval` (required: an int
    or a scalar layer), `minval` (0: an int or a scalar layer), `dtype` ("int32"), `sparse_dim` (None: a Dim the
    values index), `seed` (None: the run's random state; an int: a random stream of its own, restarted with the
    network's random seed, so that the same seed gives the same values). Emission: `rf.random` (uniform).
    Deliberate departure: without `seed`, RETURNN draws an op seed from the network's random generator; here the
    values come from the backend's random state (seeded by the config's `random_seed`).
    """

    layer_class = "rand_int"
    default_from = ()
    options = {
        "shape": Option(types=(list, tuple)),
        "maxval": Option(types=(int, str), ref="layer_or_value"),
        "minval": Option(0, (int, str), ref="layer_or_value"),
        "dtype": Option("int32", (str,)),
        "sparse_dim": Option(None, (Dim, NONE_TYPE)),
        "seed": Option(None, (int, NONE_TYPE)),
    }

    def _dims(self) -> List[Dim]:
        shape = self.opts["shape"]
        dims = []
        for i, entry in enumerate(shape):
            if isinstance(entry, Dim):
                dims.append(entry)
            elif is_int(entry) and entry >= 0:
                last = i == len(shape) - 1
                dims.append(self.new_dim(entry, FEATURE if last else SPATIAL, f"{self.name}:static:{i}"))
            else:
                raise self.error(f"'shape' must list ints >= 0 and Dims, but position {i} is {entry!r}",
                                 option="shape")
        if len(set(dims)) != len(dims):
            raise self.error(f"'shape' names the same dim twice: {[d.short_repr() for d in dims]}", option="shape")
        return dims

    def _bound(self, option: str):
        value = self.opts[option]
        if isinstance(value, LayerBase):
            data = value.output
            if data.dims or data.dtype != self.opts["dtype"]:
                raise self.error(f"'{option}' layer '{value.name}' {data.describe()} {data.dtype} must be a scalar "
                                 f"(RETURNN's condition) of the layer's dtype {self.opts['dtype']}", option=option,
                                 suggestion=f"cast it: {{'class': 'cast', 'dtype': '{self.opts['dtype']}'}}")
        return value

    def make_output(self) -> Data:
        dtype = check_dtype(self, self.opts["dtype"])
        if not dtype.startswith(("int", "uint", "float")):
            raise self.error(f"'dtype' {dtype!r} is no number type", option="dtype", suggestion="e.g. 'int32'")
        minval, maxval = self._bound("minval"), self._bound("maxval")
        if is_int(minval) and is_int(maxval) and maxval <= minval:
            raise self.error(f"'maxval' {maxval} must be greater than 'minval' {minval} (the range [minval, maxval) "
                             f"is empty)", option="maxval")
        sparse_dim = self.opts["sparse_dim"]
        if sparse_dim is not None and not dtype.startswith("int"):
            raise self.error(f"'sparse_dim' needs an int dtype, not {dtype!r}", option="sparse_dim")
        return Data(self.name, self._dims(), dtype, sparse_dim=sparse_dim)

    def makes_batch_axis(self) -> bool:
        return self.output.has_batch

    def emit(self, inputs):
        bounds = {}
        for option in ("minval", "maxval"):
            value = self.opts[option]
            bounds[option] = inputs.value(value).raw if isinstance(value, LayerBase) else value
        y = rf.random(self.output.dims, distribution="uniform", dtype=self.output.dtype, seed=self.opts["seed"],
                      **bounds)
        return y.with_data(self.output)
