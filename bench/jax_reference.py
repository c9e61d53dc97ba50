"""JAX reference for `icl bench`: the he2025 recipe of torch_reference.py, compiled.

The same model (query-only one-layer multi-head softmax attention, full Q, K, V per head, output
projection, scores scaled by 1/sqrt(d+1), MSE on the query's y slot), Adam(lr=1e-3, written out:
no optax), batch 256, fresh data each step (x ~ N(0, I_d), beta ~ N(0, I_d/d), y = beta.x + sigma
eps, sigma^2 = 0.1). One `jax.jit` of `lax.scan` over `--chunk` steps: data generation, forward,
backward and Adam all run inside the compiled loop. The compile and one warm-up chunk are not
timed.

Prints one JSON line: {"engine": "jax", "steps_per_s": ..., ...}.
"""
import argparse
import json
import math
import os
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--d", type=int, default=5)
    p.add_argument("--len", type=int, default=40)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--chunk", type=int, default=500)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    a = p.parse_args()
    # one thread: no Eigen thread pool inside XLA's CPU kernels (more threads: XLA's default,
    # which uses every core of the machine)
    if a.threads == 1:
        os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    import jax

    if a.dtype == "f64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax

    dt = jnp.float32 if a.dtype == "f32" else jnp.float64
    e, h, d, n, length = a.d + 1, a.heads, a.d, a.batch, a.len
    sigma = math.sqrt(0.1)
    scale = 1.0 / math.sqrt(e)

    def init(key):
        # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        ks = jax.random.split(key, 4)
        u = lambda k, shape, fan: jax.random.uniform(k, shape, dt, -1.0, 1.0) / math.sqrt(fan)
        return {
            "q": u(ks[0], (e, h * e), e),
            "k": u(ks[1], (e, h * e), e),
            "v": u(ks[2], (e, h * e), e),
            "o": u(ks[3], (h * e, 1), h * e),
        }

    def model(p, z):
        keys, zq = z[:, :-1], z[:, -1]
        q = (zq @ p["q"]).reshape(n, h, e)
        k = (keys @ p["k"]).reshape(n, length, h, e)
        v = (keys @ p["v"]).reshape(n, length, h, e)
        s = jnp.einsum("bhe,blhe->bhl", q, k) * scale
        w = jax.nn.softmax(s, axis=-1)
        att = jnp.einsum("bhl,blhe->bhe", w, v).reshape(n, h * e)
        return (att @ p["o"])[:, 0]

    def batch(key):
        kx, kb, ke = jax.random.split(key, 3)
        x = jax.random.normal(kx, (n, length + 1, d), dt)
        beta = jax.random.normal(kb, (n, d), dt) / math.sqrt(d)
        y = jnp.einsum("bld,bd->bl", x, beta) + sigma * jax.random.normal(ke, (n, length + 1), dt)
        z = jnp.concatenate([x, y[..., None]], axis=-1)
        z = z.at[:, -1, -1].set(0.0)
        return z, y[:, -1]

    def loss_fn(p, z, y):
        return jnp.mean((model(p, z) - y) ** 2)

    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

    def step(state, _):
        p, m, v, t, key = state
        key, sub = jax.random.split(key)
        z, y = batch(sub)
        loss, g = jax.value_and_grad(loss_fn)(p, z, y)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        c1, c2 = 1 - b1**t, 1 - b2**t
        p = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), p, m, v
        )
        return (p, m, v, t, key), loss

    @jax.jit
    def run(state):
        return lax.scan(step, state, None, length=a.chunk)

    p0 = init(jax.random.PRNGKey(0))
    zeros = jax.tree_util.tree_map(jnp.zeros_like, p0)
    state = (p0, zeros, zeros, jnp.asarray(0.0, dt), jax.random.PRNGKey(1))
    state, losses = run(state)  # compile + warm-up
    losses.block_until_ready()
    chunks = max(1, a.steps // a.chunk)
    t0 = time.perf_counter()
    for _ in range(chunks):
        state, losses = run(state)
    losses.block_until_ready()
    dt_s = time.perf_counter() - t0
    steps = chunks * a.chunk
    print(json.dumps({
        "engine": "jax", "jax": jax.__version__, "heads": h, "len": length, "batch": n,
        "dtype": a.dtype, "threads": a.threads, "steps": steps, "seconds": dt_s,
        "steps_per_s": steps / dt_s, "final_loss": float(losses[-1]),
    }))


if __name__ == "__main__":
    main()
