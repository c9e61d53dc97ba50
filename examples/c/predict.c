/*
 * predict.c -- load a checkpoint written by `icl train` and print its predictions.
 *
 *   predict MODEL.safetensors [--engine NAME] < problems.txt
 *       problems.txt holds whitespace-separated numbers: n L, then the contexts x ([n][L][d]),
 *       their labels y ([n][L][n_out]) and the queries xq ([n][d]). Prints one line per problem
 *       with its n_out predictions ("%.17g", so the doubles round-trip exactly).
 *
 *   predict MODEL.safetensors --sample N L SEED [--engine NAME]
 *       draws N problems of context length L from the checkpoint's own task (evaluation streams
 *       (SEED, eval, L, i), as `icl eval`), prints "target prediction" per output, then the mean
 *       squared error, and the per-head circuits (omega, mu).
 *
 * Build (see ffi/README.md):
 *   gcc -std=c11 -Wall -Wextra -Iffi/include examples/c/predict.c \
 *       -Ltarget/release -licl_ffi -Wl,-rpath,$PWD/target/release -o predict
 */
#include <icl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Print the failed call and the library's message, then jump to cleanup. */
#define CHECK(call)                                                                      \
    do {                                                                                 \
        icl_status st_ = (call);                                                         \
        if (st_ != ICL_OK) {                                                             \
            fprintf(stderr, "predict: %s failed: %s (%s)\n", #call, icl_last_error(),  \
                    icl_status_name((int32_t)st_));                                      \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

static int read_size(size_t *out) {
    unsigned long long v;
    if (scanf("%llu", &v) != 1) return 0;
    *out = (size_t)v;
    return 1;
}

static int read_doubles(double *xs, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (scanf("%lf", &xs[i]) != 1) return 0;
    return 1;
}

/* Predictions for problems read from standard input. */
static int predict_stdin(icl_model *model, const icl_dims *dm) {
    int rc = 1;
    size_t n = 0, len = 0;
    double *x = NULL, *y = NULL, *xq = NULL, *out = NULL;
    if (!read_size(&n) || !read_size(&len) || n == 0 || len == 0) {
        fprintf(stderr, "predict: input must start with n >= 1 and L >= 1\n");
        return 1;
    }
    size_t nx = n * len * dm->d, ny = n * len * dm->n_out, nq = n * dm->d, no = n * dm->n_out;
    x = malloc(nx * sizeof *x);
    y = malloc(ny * sizeof *y);
    xq = malloc(nq * sizeof *xq);
    out = malloc(no * sizeof *out);
    if (!x || !y || !xq || !out) {
        fprintf(stderr, "predict: out of memory\n");
        goto done;
    }
    if (!read_doubles(x, nx) || !read_doubles(y, ny) || !read_doubles(xq, nq)) {
        fprintf(stderr, "predict: expected %zu + %zu + %zu numbers after n and L\n", nx, ny, nq);
        goto done;
    }
    CHECK(icl_model_predict(model, n, len, x, nx, y, ny, xq, nq, out, no));
    for (size_t b = 0; b < n; b++) {
        for (size_t o = 0; o < dm->n_out; o++)
            printf(o ? " %.17g" : "%.17g", out[b * dm->n_out + o]);
        printf("\n");
    }
    rc = 0;
done:
    free(x);
    free(y);
    free(xq);
    free(out);
    return rc;
}

/* Predictions for problems drawn from the checkpoint's task, with their targets and the MSE. */
static int predict_sampled(icl_model *model, const icl_dims *dm, size_t n, size_t len, uint64_t seed) {
    int rc = 1;
    icl_config *cfg = NULL;
    icl_task *task = NULL;
    double *z = NULL, *y = NULL, *out = NULL, *omega = NULL, *mu = NULL;
    size_t e = dm->d + dm->n_out, nz = n * (len + 1) * e, ny = n * dm->n_out;
    z = malloc(nz * sizeof *z);
    y = malloc(ny * sizeof *y);
    out = malloc(ny * sizeof *out);
    omega = malloc(dm->heads * sizeof *omega);
    mu = malloc(dm->heads * dm->n_out * sizeof *mu);
    if (!z || !y || !out || !omega || !mu) {
        fprintf(stderr, "predict: out of memory\n");
        goto done;
    }
    CHECK(icl_model_config(model, &cfg));
    CHECK(icl_task_new(cfg, &task));
    CHECK(icl_task_sample(task, seed, ICL_DOMAIN_EVAL, len, n, len, z, nz, y, ny));
    CHECK(icl_model_predict_batch(model, n, len, z, nz, out, ny));
    double sse = 0.0;
    for (size_t i = 0; i < ny; i++) {
        printf("%.17g %.17g\n", y[i], out[i]);
        sse += (out[i] - y[i]) * (out[i] - y[i]);
    }
    printf("mse %.17g\n", sse / (double)ny);
    CHECK(icl_model_circuits(model, omega, dm->heads, mu, dm->heads * dm->n_out));
    for (size_t h = 0; h < dm->heads; h++)
        printf("head %zu omega %.17g mu %.17g\n", h, omega[h], mu[h * dm->n_out]);
    rc = 0;
done:
    icl_task_free(task);
    icl_config_free(cfg);
    free(z);
    free(y);
    free(out);
    free(omega);
    free(mu);
    return rc;
}

int main(int argc, char **argv) {
    int rc = 1;
    icl_model *model = NULL;
    const char *engine = NULL;
    int sample = 0;
    size_t sn = 0, slen = 0;
    uint64_t sseed = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.safetensors [--sample N L SEED] [--engine NAME] < problems\n", argv[0]);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
            engine = argv[++i];
        } else if (strcmp(argv[i], "--sample") == 0 && i + 3 < argc) {
            sample = 1;
            sn = strtoull(argv[++i], NULL, 10);
            slen = strtoull(argv[++i], NULL, 10);
            sseed = strtoull(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "predict: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    icl_dims dm;
    CHECK(icl_model_load(argv[1], &model));
    if (engine) CHECK(icl_model_set_engine(model, engine));
    CHECK(icl_model_dims(model, &dm));
    rc = sample ? predict_sampled(model, &dm, sn, slen, sseed) : predict_stdin(model, &dm);
done:
    icl_model_free(model);
    return rc;
}
