"""The PyTorch backend: raw tensors are eager `torch.Tensor`s; parameters are `torch.nn.Parameter`s."""

from .backend import TorchBackend

__all__ = ["TorchBackend"]
