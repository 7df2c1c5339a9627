from torch.optim import optimizer  # noqa: F401
from torch.optim.optimizer import SGD, Optimizer  # noqa: F401
