"""PyTorch reference for the multilayer paper's hot path, timed (same architecture as icl's).

T-layer looped softmax transformer on the (d+1) x (L+1) embedding (spec §2): per head full
(d+1)x(d+1) K, Q, V, O (nn.Linear, no bias), scores scaled by 1/sqrt(d+1), every column attends to
the L context tokens (the query is never a key), residual Z <- Z + sum_h O_h V_h Z softmax(...),
no LayerNorm/MLP, readout Z[d+1, L+1]; MSE on the query's y slot, Adam(lr=1e-3), batch 256, fresh
data each step with a covariance resampled per sequence (U Haar by QR, lambda_i ~ U(0.8, 1.2),
beta ~ N(0, I_d), sigma^2 = 0.1).

Prints one JSON line: {"engine": "torch", "steps_per_s": ..., "gflops": ...}. `--device cuda`
(bench/gpu.sh on a GPU) draws the batches on the GPU too and synchronises it before the clock stops.
"""
import argparse
import json
import math
import time

import torch
from torch import nn


class Looped(nn.Module):
    def __init__(self, e, heads, layers):
        super().__init__()
        self.e, self.h, self.t = e, heads, layers
        self.q = nn.Linear(e, heads * e, bias=False)
        self.k = nn.Linear(e, heads * e, bias=False)
        self.v = nn.Linear(e, heads * e, bias=False)
        self.o = nn.Linear(heads * e, e, bias=False)
        for m in (self.q, self.k, self.v, self.o):
            nn.init.normal_(m.weight, std=0.1)
        self.scale = 1.0 / math.sqrt(e)

    def layer(self, z):
        b, n, e = z.shape
        keys = z[:, :-1]
        q = self.q(z).view(b, n, self.h, e).transpose(1, 2)  # [B, H, N, E]
        k = self.k(keys).view(b, n - 1, self.h, e).transpose(1, 2)  # [B, H, L, E]
        v = self.v(keys).view(b, n - 1, self.h, e).transpose(1, 2)
        w = torch.softmax((q @ k.transpose(-1, -2)) * self.scale, dim=-1)  # [B, H, N, L]
        a = (w @ v).transpose(1, 2).reshape(b, n, self.h * e)
        return z + self.o(a)

    def forward(self, z):
        for _ in range(self.t):
            z = self.layer(z)
        return z[:, -1, -1]


def batch(gen, n, length, d, sigma):
    dev = gen.device
    u, _ = torch.linalg.qr(torch.randn(n, d, d, generator=gen, device=dev))
    lam = 0.8 + 0.4 * torch.rand(n, d, generator=gen, device=dev)
    g = torch.randn(n, length + 1, d, generator=gen, device=dev)
    x = (g * lam.sqrt().unsqueeze(1)) @ u.transpose(-1, -2)
    beta = torch.randn(n, d, 1, generator=gen, device=dev)
    y = (x @ beta).squeeze(-1) + sigma * torch.randn(n, length + 1, generator=gen, device=dev)
    z = torch.cat([x, y.unsqueeze(-1)], dim=-1)
    target = y[:, -1].clone()
    z[:, -1, -1] = 0.0
    return z, target


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--L", type=int, default=120)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    dt = torch.float32 if a.dtype == "f32" else torch.float64
    torch.set_default_dtype(dt)
    gen = torch.Generator(device=dev).manual_seed(0)
    torch.manual_seed(0)
    e = a.d + 1
    model = Looped(e, a.heads, a.layers).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sigma = math.sqrt(0.1)

    def step():
        z, t = batch(gen, a.batch, a.L, a.d, sigma)
        loss = ((model(z) - t) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt_s = time.perf_counter() - t0
    sps = a.steps / dt_s
    # forward + backward ~ 3x forward; forward per layer and head ~ 2 N L E (scores) + 2 N L E
    # (mixing) + 4 N E^2 (projections), N = L + 1
    n = a.L + 1
    fwd = a.layers * a.heads * (4 * n * a.L * e + 8 * n * e * e) * a.batch
    print(json.dumps({"engine": "torch", "torch": torch.__version__, "layers": a.layers, "heads": a.heads,
                      "L": a.L, "batch": a.batch, "threads": a.threads, "dtype": a.dtype, "device": a.device,
                      "steps": a.steps, "seconds": dt_s, "steps_per_s": sps,
                      "gflops": 3 * fwd * sps / 1e9, "final_loss": float(loss)}))


if __name__ == "__main__":
    main()
