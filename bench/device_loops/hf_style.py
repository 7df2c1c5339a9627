"""The Hugging Face Trainer's loop shape without transformers: accumulation, clipping, lr scheduler,
logging with .item(), model.zero_grad(), an evaluation loop at the end."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, batch, iterations


class Trainer:
    def __init__(self, model, accum=2, logging_steps=3):
        self.model = model.to(DEVICE)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: 1.0 / (1 + s))
        self.accum, self.logging_steps = accum, logging_steps

    def training_step(self, inputs):
        x, y = inputs
        loss = nn.functional.mse_loss(self.model(x), y) / self.accum
        loss.backward()  # accelerator.backward(loss)
        return loss.detach()

    def train(self):
        tr_loss = torch.tensor(0.0, device=DEVICE)
        global_step = 0
        for _ in iterations():
            for _micro in range(self.accum):
                tr_loss += self.training_step(batch())
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.lr_scheduler.step()
            self.model.zero_grad()
            global_step += 1
            if global_step % self.logging_steps == 0:
                print({"loss": round(tr_loss.item() / self.logging_steps, 4), "step": global_step})
                tr_loss -= tr_loss
        self.evaluate()

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        for _ in range(3):
            x, y = batch()
            nn.functional.mse_loss(self.model(x), y)


if __name__ == "__main__":
    Trainer(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, 1))).train()
    print("done")
