"""The real lightning.Trainer (pytorch_lightning as a fallback) with a tiny LightningModule: max_steps from
argv[1], progress bar on (its metric sync), no logger, no checkpoints."""
import sys

import torch
from torch import nn

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


data = torch.utils.data.TensorDataset(torch.randn(4096, 512), torch.randint(0, 10, (4096,)))
loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True)
trainer = L.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_model_summary=False,
                    accelerator="auto", devices=1, num_sanity_val_steps=0)
trainer.fit(Tiny(), loader)
print("done")
