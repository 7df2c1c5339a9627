"""Two optimizers (GAN): discriminator step, then generator step, every iteration."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, iterations

torch.manual_seed(0)
gen = nn.Sequential(nn.Linear(8, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH)).to(DEVICE)
disc = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.LeakyReLU(0.2), nn.Linear(WIDTH, 1)).to(DEVICE)
opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for _ in iterations():
    real = torch.randn(16, WIDTH, device=DEVICE)
    fake = gen(torch.randn(16, 8, device=DEVICE))
    ones, zeros = torch.ones(16, 1, device=DEVICE), torch.zeros(16, 1, device=DEVICE)
    d_loss = bce(disc(real), ones) + bce(disc(fake.detach()), zeros)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(disc(fake), ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
print("done")
