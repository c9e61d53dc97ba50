"""PyTorch reference for `icl bench`: the he2025 recipe, timed.

Query-only one-layer multi-head softmax attention with full Q, K, V per head (nn.Linear, no bias,
default init), an output projection O, scores scaled by 1/sqrt(d+1), strict causal mask (the
query attends to the L context tokens), MSE loss on the query's y slot, Adam(lr=1e-3), batch 256,
fresh data each step (x ~ N(0, I_d), beta ~ N(0, I_d/d), y = beta.x + sigma eps, sigma^2 = 0.1).

Prints one JSON line: {"engine": "torch", "steps_per_s": ..., ...}. `--device cuda` (bench/gpu.sh
on a GPU) draws the batches on the GPU too and synchronises it before the clock stops.
"""
import argparse
import json
import math
import time

import torch
from torch import nn


class QueryAttention(nn.Module):
    def __init__(self, e, heads):
        super().__init__()
        self.e, self.h = e, heads
        self.q = nn.Linear(e, heads * e, bias=False)
        self.k = nn.Linear(e, heads * e, bias=False)
        self.v = nn.Linear(e, heads * e, bias=False)
        self.o = nn.Linear(heads * e, 1, bias=False)
        self.scale = 1.0 / math.sqrt(e)

    def forward(self, z):
        # z: [B, L+1, E]; the query is the last token
        b, t, e = z.shape
        keys, zq = z[:, :-1], z[:, -1:]
        q = self.q(zq).view(b, 1, self.h, e).transpose(1, 2)  # [B, H, 1, E]
        k = self.k(keys).view(b, t - 1, self.h, e).transpose(1, 2)  # [B, H, L, E]
        v = self.v(keys).view(b, t - 1, self.h, e).transpose(1, 2)
        w = torch.softmax((q @ k.transpose(-1, -2)) * self.scale, dim=-1)  # [B, H, 1, L]
        a = (w @ v).transpose(1, 2).reshape(b, self.h * e)
        return self.o(a).squeeze(-1)


def batch(gen, n, length, d, sigma):
    dev = gen.device
    x = torch.randn(n, length + 1, d, generator=gen, device=dev)
    beta = torch.randn(n, d, 1, generator=gen, device=dev) / math.sqrt(d)
    y = (x @ beta).squeeze(-1) + sigma * torch.randn(n, length + 1, generator=gen, device=dev)
    z = torch.cat([x, y.unsqueeze(-1)], dim=-1)
    target = y[:, -1].clone()
    z[:, -1, -1] = 0.0
    return z, target


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--d", type=int, default=5)
    p.add_argument("--len", type=int, default=40)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dt = torch.float32 if a.dtype == "f32" else torch.float64
    torch.set_default_dtype(dt)
    dev = torch.device(a.device)
    gen = torch.Generator(device=dev).manual_seed(1)
    model = QueryAttention(a.d + 1, a.heads).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    def step():
        z, y = batch(gen, a.batch, a.len, a.d, math.sqrt(0.1))
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(z), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(20):  # warm-up
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt_s = time.perf_counter() - t0
    print(json.dumps({
        "engine": "torch", "torch": torch.__version__, "heads": a.heads, "len": a.len, "batch": a.batch,
        "dtype": a.dtype, "threads": a.threads, "device": a.device, "steps": a.steps, "seconds": dt_s,
        "steps_per_s": a.steps / dt_s, "final_loss": float(loss),
    }))


if __name__ == "__main__":
    main()
