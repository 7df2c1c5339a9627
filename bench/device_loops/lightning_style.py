"""Lightning's automatic optimisation without lightning: the trainer wraps training_step + backward in a
closure and calls optimizer.step(closure=closure)."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, batch, iterations


class LitModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1))
        self.logged = {}

    def training_step(self, b):
        x, y = b
        loss = nn.functional.mse_loss(self.net(x), y)
        self.logged["loss"] = loss.detach()
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class MiniTrainer:
    def fit(self, module):
        module.to(DEVICE)
        opt = module.configure_optimizers()
        for _ in iterations():
            b = batch()

            def closure(b=b):  # this iteration's batch
                loss = module.training_step(b)
                opt.zero_grad()
                loss.backward()
                return loss
            opt.step(closure=closure)
            self.progress = {k: float(v) for k, v in module.logged.items()}  # the progress bar's sync


if __name__ == "__main__":
    MiniTrainer().fit(LitModel())
    print("done")
