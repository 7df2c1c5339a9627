"""The real transformers.Trainer on a tiny GPT-2 built from a config (no download, no internet): synthetic
token batches, max_steps from argv[1], logging every 5 steps (its .item() syncs live in transformers)."""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 2048, (128,), generator=g)
        return {"input_ids": ids, "labels": ids}


model = GPT2LMHeadModel(GPT2Config(vocab_size=2048, n_positions=128, n_embd=256, n_layer=4, n_head=4))
args = TrainingArguments(output_dir="/tmp/hf_out", max_steps=steps, per_device_train_batch_size=16,
                         gradient_accumulation_steps=1, logging_steps=5, save_strategy="no", report_to=[],
                         dataloader_num_workers=0, disable_tqdm=True, bf16=torch.cuda.is_available())
Trainer(model=model, args=args, train_dataset=Tokens()).train()
print("done")
