"""A language-model-style loop that updates parameters by hand (no torch.optim): p.data.add_(p.grad)."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, iterations

torch.manual_seed(0)
vocab = 100
model = nn.Sequential(nn.Embedding(vocab, WIDTH), nn.Linear(WIDTH, vocab)).to(DEVICE)
lr = 0.1
for i in iterations():
    tokens = torch.randint(0, vocab, (8, 17), device=DEVICE)
    logits = model(tokens[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    if i % 4 == 0:
        print(f"step {i} loss {loss.item():.3f}")
print("done")
