"""He et al. (2025) from a notebook: train the paper's two-head softmax attention model on
in-context linear regression, then plot how its circuits form over training.

    pip install ./ffi/python matplotlib            # once
    python examples/python/he2025.py               # 5e5 Adam steps, about 1-3 minutes
    python examples/python/he2025.py --preset quick --png quick.png   # a 2-second smoke run

Plots omega_h (the KQ scale of head h) and mu_h (its OV value) against the training step, with
the theory's value of mu on the solution manifold at the trained model's gamma (He et al.
eq. 4.5) dashed, and the training loss; prints the analysis and the risks against the
classical estimators.
"""

import argparse
import pathlib

import matplotlib

matplotlib.use("Agg")  # write a file; no display needed
import matplotlib.pyplot as plt  # noqa: E402

import icl  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="he2025", help="preset to train (icl.presets() lists them)")
    ap.add_argument("--steps", type=int, default=None, help="override train.steps")
    ap.add_argument("--seed", type=int, default=None, help="override train.seed")
    ap.add_argument("--out", default=None, help="run folder (default runs/<preset>-py)")
    ap.add_argument("--png", default="he2025.png", help="where to write the figure")
    ap.add_argument("--samples", type=int, default=20000, help="Monte Carlo samples for eval")
    a = ap.parse_args()

    out = pathlib.Path(a.out or f"runs/{a.preset}-py")
    cfg = icl.Config.preset(a.preset)
    run = icl.train(cfg, steps=a.steps, seed=a.seed, out=out, force=True)
    s = run.summary
    print(f"trained {s['steps']} steps in {s['seconds']:.1f} s ({s['steps_per_second']:.0f} steps/s)")

    an = run.analyze()
    for h, head in enumerate(an["heads"]):
        print(f"head {h}: omega {head['omega']:+.4f}  mu {head['mu']:+.4f}  {head['kind']}")
    d, L, s2 = cfg["task.d"], cfg["task.L"], cfg["task.sigma2"]
    eta_star = icl.theory("eta-star", d=d, L=L, sigma2=s2)["value"]
    print(f"gamma {an['gamma']:.4f}; effective GD step {an['eta_eff']:.4f} (eta* = {eta_star:.4f})")

    rows = run.eval(lengths=[10, 20, 40, 100], samples=a.samples, as_frame=False)
    print(f"{'estimator':<12} {'L':>4} {'risk':>9} {'stderr':>9}")
    for r in rows:
        print(f"{r['estimator']:<12} {r['L']:>4} {r['risk']:>9.4f} {r['stderr']:>9.4f}")

    m = run.metrics(as_frame=False)
    heads = len(an["heads"])
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    for h in range(heads):
        ax[0].plot(m["step"], m[f"omega_{h}"], label=f"$\\omega_{h}$")
        ax[1].plot(m["step"], m[f"mu_{h}"], label=f"$\\mu_{h}$")
    if an["gamma"] > 0:
        mu_theory = icl.theory("mu-gamma", gamma=an["gamma"], d=d, L=L, sigma2=s2)["value"]
        for sign in (1, -1):
            ax[1].axhline(sign * mu_theory, ls="--", c="grey", lw=1)
        ax[1].plot([], [], ls="--", c="grey", label=f"$\\pm\\mu(\\gamma={an['gamma']:.3f})$ (eq. 4.5)")
    ax[2].semilogy(m["step"], m["loss"])
    ax[2].axhline(s2, ls=":", c="grey", label=f"noise $\\sigma^2$ = {s2}")
    for a_, title in zip(ax, ("KQ scale $\\omega_h$", "OV value $\\mu_h$", "training loss")):
        a_.set_xlabel("step")
        a_.set_title(title)
        a_.legend()
    fig.suptitle(f"{a.preset}: {heads} heads, d = {d}, L = {L}")
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
