from torch.nn import modules  # noqa: F401
from torch.nn.modules.module import Module  # noqa: F401


class Linear(Module):
    """y = w * x + b on floats."""

    def __init__(self, *shape):
        super().__init__()
        import torch
        self.weight = torch.tensor(0.5, requires_grad=True)
        self.bias = torch.tensor(0.0, requires_grad=True)

    def forward(self, x):
        return self.weight * x + self.bias

    def parameters(self):
        return [self.weight, self.bias]


class MSELoss(Module):
    def forward(self, y, target):
        d = y - target
        return d * d
