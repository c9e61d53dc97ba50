"""PyTorch reference for bench/compare_gpt2.sh: Garg et al.'s TransformerModel (their
src/models.py, on transformers' GPT2Model) trained on their linear regression (x, w ~ N(0, I_d),
y = w.x) at a fixed size (no curriculum), Adam, batch 64, the loss over every position. Prints
one JSON line: {"steps_per_s", "steps", "threads", "size", "final_loss"}.

    bench/.venv-torch/bin/python bench/torch_gpt2.py --size tiny --threads 2 --steps 50
    python3 bench/torch_gpt2.py --size small --device cuda --steps 200     (bench/gpu.sh, on a GPU)

On a GPU the batches are drawn there too, and the timed loop ends with the device synchronised
(each step's loss.item() waits for it anyway).
"""
import argparse
import json
import time

import torch
from transformers import GPT2Config, GPT2Model

SIZES = {"tiny": (3, 2, 64), "small": (6, 4, 128), "standard": (12, 8, 256)}


class TransformerModel(torch.nn.Module):
    """Garg et al.'s model (dtsip/in-context-learning, src/models.py), same names and computation."""

    def __init__(self, n_dims, n_positions, n_embd, n_layer, n_head):
        super().__init__()
        config = GPT2Config(
            n_positions=2 * n_positions, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
        )
        self.n_dims = n_dims
        self._read_in = torch.nn.Linear(n_dims, n_embd)
        self._backbone = GPT2Model(config)
        self._read_out = torch.nn.Linear(n_embd, 1)

    @staticmethod
    def _combine(xs, ys):
        b, points, dim = xs.shape
        zeros = torch.zeros(b, points, dim - 1, dtype=ys.dtype, device=ys.device)
        wide = torch.cat((ys.view(b, points, 1), zeros), dim=2)
        return torch.stack((xs, wide), dim=2).view(b, 2 * points, dim)

    def forward(self, xs, ys):
        embeds = self._read_in(self._combine(xs, ys))
        out = self._backbone(inputs_embeds=embeds).last_hidden_state
        return self._read_out(out)[:, ::2, 0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=SIZES, default="tiny")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--L", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    layers, heads, embd = SIZES[a.size]
    model = TransformerModel(a.d, 101, embd, layers, heads).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    points = a.L + 1

    def step():
        xs = torch.randn(a.batch, points, a.d, device=dev)
        w = torch.randn(a.batch, a.d, 1, device=dev)
        ys = (xs @ w)[:, :, 0]
        loss = ((model(xs, ys) - ys) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):  # warm-up
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(json.dumps({"steps_per_s": a.steps / dt, "steps": a.steps, "threads": a.threads,
                      "size": a.size, "final_loss": loss, "device": a.device,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
