from torch.optim import optimizer  # noqa: F401
from torch.optim.optimizer import Optimizer, SGD  # noqa: F401
