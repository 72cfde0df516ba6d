"""netcompiler: compiles layer-dict networks (RETURNN's layer language) to TensorFlow and trains them.

Configs import what they need from here, e.g. `from netcompiler import Dim, batch_dim, SpatialDim, FeatureDim`.
Importing this package does not import TensorFlow.
"""

from .tensor import Data, Dim, FeatureDim, SpatialDim, batch_dim

__all__ = ["Data", "Dim", "FeatureDim", "SpatialDim", "batch_dim"]
__version__ = "0.1.0"
