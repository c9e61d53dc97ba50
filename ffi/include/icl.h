/*
 * icl.h -- the C API of icl: train and query in-context learners (one-layer attention models on
 * in-context linear regression) from C or C++ without Python or a CLI round trip.
 *
 * LINK (ffi/README.md, "Link an installed icl"; tests/tests/ffi_install.rs runs these commands)
 *   cc  app.c   $(pkg-config --cflags --libs icl)        -o app   shared libicl_ffi.so (run path set)
 *   cc  app.c   $(pkg-config --cflags --libs icl-static) -o app   static libicl_ffi.a + system libs
 *   c++ app.cpp $(pkg-config --cflags --libs icl-static) -o app   C++ API (icl.hpp): static only
 *   CMake: find_package(icl), then target_link_libraries(app icl::icl) or icl::icl_static.
 *   `pkg-config --static icl` is not the static library (-licl_ffi picks the shared one); use
 *   icl-static.
 *
 * CONVENTIONS
 *  - Every fallible function returns an icl_status; ICL_OK (0) is success. On failure,
 *    icl_last_error() returns a message naming the offending argument, key or value.
 *  - Handles (icl_config, icl_task, icl_model, icl_trainer) are opaque. Each is created by a
 *    function that writes it to an `out` parameter (set to NULL on failure) and is released by the
 *    matching *_free function (NULL is accepted). The caller owns every handle it creates; handles
 *    never own each other (a task or model made from a config copies it, so the config may be freed
 *    right after).
 *  - Arrays are caller-owned buffers of double passed with their length in values; the length must
 *    equal the documented shape exactly (ICL_ERR_SIZE otherwise; a length of 0 where the shape is
 *    not 0 is ICL_ERR_SIZE too, whatever the pointer). Nothing is retained after a call returns.
 *    Strings are NUL-terminated UTF-8; strings returned as `const char *` are static or owned by
 *    the library (see each function); strings copied out use a caller buffer with snprintf-like
 *    sizing: `cap` bytes including the NUL, `needed` (optional) receives strlen + 1, and a `cap`
 *    below that is ICL_ERR_SIZE with nothing written (so `cap` = 0 asks for the size).
 *  - On failure nothing changes: handles keep their state, caller buffers and scalar outputs are
 *    left as they were, except `needed`/`count` (written with ICL_ERR_SIZE so the caller can retry)
 *    and icl_trainer_train (steps and losses before a failing step are kept; see there).
 *  - Optional arguments are marked "optional" and may be NULL; an optional output array given as
 *    NULL with a non-zero length is ICL_ERR_NULL (the length says a buffer was meant).
 *  - Names are case-sensitive and exact: configuration keys ("task.d", not "TASK.D"), presets,
 *    engines ("simd", not "SIMD") and theory quantities. "" is a name like any other, and no
 *    key, preset, engine or quantity has it (ICL_ERR_UNKNOWN_KEY / ICL_ERR_UNKNOWN_NAME); NULL
 *    is ICL_ERR_NULL, except for an optional name (the engine of icl_trainer_new), where NULL
 *    means the default.
 *  - Models compute in the precision of their configuration (train.dtype, f32 by default); inputs
 *    are rounded to it and outputs widened to double, exactly as icl train does. An input that
 *    overflows the model's precision (1e300 into an f32 model) is ICL_ERR_NONFINITE; an output
 *    that is not finite (a prediction, loss, gradient or risk of a model that overflows on that
 *    input) is ICL_ERR_NUMERICAL, with the output buffers left as they were: no function returns
 *    NaN or infinity with ICL_OK.
 *  - The scalar and vulkan engines train on the batches icl_task_sample returns, so a step of
 *    icl_trainer_step_batch on the batch of step t equals icl_trainer_train's step t bit for bit.
 *    The simd engine (the default) generates the batches of the isotropic task (he2025 and its
 *    variants) inside its kernels, from the same streams but with its own rounding (f32: a few
 *    ulp of a value; f64: ~1e-15), so there, under simd, those two steps differ by that rounding;
 *    icl_trainer_train still equals `icl train` with the same engine bit for bit.
 *  - Layouts are row-major. A batch of n sequences of context length L is token-major:
 *    token l (0 <= l <= L) of sequence b starts at z[(b*(L+1) + l)*E], E = d + n_out, holding x
 *    (d values) then y (n_out values); token L is the query, whose y-slots are ignored (read as
 *    0, whatever they hold, NaN included). Targets are y[b*n_out + o].
 *
 * STATUSES
 *  Each function below lists the statuses it returns and when. Every function taking pointers
 *  can also return, without it being repeated:
 *    ICL_ERR_NULL      a required pointer (handle, array, string, out-parameter) is NULL;
 *    ICL_ERR_ARGUMENT  a pointer to a handle, double, size_t or uint64_t is misaligned;
 *    ICL_ERR_UTF8      a string argument is not UTF-8;
 *    ICL_ERR_PANIC     a bug in icl (please report it): the handle may be in an unspecified but
 *                      safe-to-free state.
 *  When several arguments are wrong, which of their statuses is returned is unspecified.
 *  Pointers that are neither NULL nor valid for the stated length, and handles used after their
 *  *_free, cannot be detected and are undefined behaviour, as in any C API. No other input makes
 *  a function abort, unwind or exit: panics are caught (ICL_ERR_PANIC) and allocations that could
 *  fail are checked first (ICL_ERR_SIZE or ICL_ERR_CONFIG naming the memory needed).
 *
 * LIMITS (the ranges of `icl presets --keys`; checked by icl_config_set and on every use)
 *    task.d      1 .. 4096       task.L (and every call's context length)  1 .. 2^24
 *    model.heads 1 .. 1024       train.batch  1 .. 2^24      model.layers  1 .. 64
 *    task.P      0 .. 2^30       train.steps  0 .. 2^40      lists (task.cov, ...)  <= 4096^2 values
 *  and the working memory of a configuration (batch, training set, parameters, gradient and
 *  optimiser state, counted in double) at most 16 GiB (icl_config_validate: ICL_ERR_CONFIG).
 *  Why: each bound keeps the products of sizes (E^2 per head, L E per sequence, batch L E per
 *  step) far inside 64-bit arithmetic, so every size is computed exactly and checked before
 *  anything is allocated; d = 4096 covers a 4096 x 4096 covariance, 2^24 is the largest count an
 *  f32 represents exactly, and 16 GiB bounds what one configuration may ask of a host. Keys
 *  within range can still exceed the budget together (task.d = 4096 with model.heads = 1024):
 *  that is the cross-key rule. Per-call counts (n sequences) are bounded by the caller's buffers.
 *  One exception to the context length: the test lengths of icl_eval_run (as those of `icl eval
 *  --lengths`, Python's Run.eval and icl.sample) are 1 .. 2^20; icl_model_risk, icl_task_sample
 *  and the prediction and training calls take 1 .. 2^24. A checkpoint's step count is at most
 *  2^53 (steps past train.steps included).
 *
 * THREAD SAFETY
 *  - Functions that take no handle (icl_version, icl_last_error, icl_status_name,
 *    icl_default_engine, icl_config_preset, icl_config_from_toml, icl_model_load,
 *    icl_theory_*) may be called from any number of threads at once.
 *  - Distinct handles are independent: different threads may use different handles concurrently.
 *  - One handle may be used from any thread, but calls on it must not overlap, with one exception:
 *    functions taking a `const` handle pointer (e.g. icl_task_sample, icl_model_get_params,
 *    icl_trainer_log_row) may run concurrently with each other on the same handle. A function
 *    taking a non-const handle pointer (predict, train, set_params, set_engine, ...) needs exclusive
 *    access; *_free must not overlap with any other call on that handle.
 *  - The last-error message is per thread: read it on the thread whose call failed.
 *  - Results do not depend on the thread that computes them: the same seed gives the same numbers.
 *  - The default engine (simd) keeps worker threads for the life of the process. Do not fork a
 *    process that has used icl and call icl in the child.
 */


#ifndef ICL_H
#define ICL_H

/* Generated by cbindgen from ffi/src; do not edit (tests/tests/ffi_header.rs keeps it current). */

#include <stddef.h>
#include <stdint.h>

/**
 * The major version of the library this header belongs to (`MAJOR` of `icl_version()`'s
 * "MAJOR.MINOR.PATCH"), for compile-time checks; `icl_version()` gives the version of the library
 * a program runs with.
 */
#define ICL_VERSION_MAJOR 0

/**
 * The minor version of the library this header belongs to (see `ICL_VERSION_MAJOR`).
 */
#define ICL_VERSION_MINOR 1

/**
 * The patch version of the library this header belongs to (see `ICL_VERSION_MAJOR`).
 */
#define ICL_VERSION_PATCH 0

/**
 * Sequences drawn from the training streams (seed, train, step, b): the batch of a training step.
 */
#define ICL_DOMAIN_TRAIN 0

/**
 * Sequences drawn from the evaluation streams (seed, eval, step, b); `icl eval` uses step = L.
 */
#define ICL_DOMAIN_EVAL 1

/**
 * What an `icl_` function returns. `ICL_OK` (0) is success; every other value is a failure whose
 * message `icl_last_error()` returns.
 */
typedef enum {
  /**
   * Success.
   */
  ICL_OK = 0,
  /**
   * A required pointer argument is NULL.
   */
  ICL_ERR_NULL = 1,
  /**
   * A buffer length or a shape (n, L, number of parameters, samples, ...) is wrong, zero, too
   * large or overflows, an index is past the end, or the memory a size needs is not available.
   */
  ICL_ERR_SIZE = 2,
  /**
   * An input value is NaN or infinite (or overflows the model's precision).
   */
  ICL_ERR_NONFINITE = 3,
  /**
   * A configuration value is out of range or malformed, a TOML text does not parse, a rule
   * between keys fails, or the configuration needs more than the 16 GiB memory budget.
   */
  ICL_ERR_CONFIG = 4,
  /**
   * A configuration key that does not exist.
   */
  ICL_ERR_UNKNOWN_KEY = 5,
  /**
   * An unknown preset, engine or theory quantity name.
   */
  ICL_ERR_UNKNOWN_NAME = 6,
  /**
   * A numerical failure: a singular or indefinite matrix, a diverged training step, a result
   * that is not finite.
   */
  ICL_ERR_NUMERICAL = 7,
  /**
   * An option combination that is not implemented, or an engine that cannot run here
   * (vulkan without a device or in f64).
   */
  ICL_ERR_UNSUPPORTED = 8,
  /**
   * The operating system refused a file operation (missing file, permissions, ...).
   */
  ICL_ERR_IO = 9,
  /**
   * A file exists but is not a valid icl checkpoint.
   */
  ICL_ERR_CHECKPOINT = 10,
  /**
   * A string argument is not valid UTF-8.
   */
  ICL_ERR_UTF8 = 11,
  /**
   * Any other invalid argument: an enum value out of range (`domain`), a misaligned pointer,
   * or a theory parameter that is unknown, repeated, missing or outside its range.
   */
  ICL_ERR_ARGUMENT = 12,
  /**
   * A bug: the library panicked. The handle passed in may be in an unspecified (but safe to
   * free) state.
   */
  ICL_ERR_PANIC = 13,
} icl_status;

/**
 * A run configuration (`icl_config` in C, `icl::Config` in C++).
 */
typedef struct icl_config icl_config;

/**
 * A model and the engine that runs it (`icl_model` in C, `icl::Model` in C++).
 */
typedef struct icl_model icl_model;

/**
 * A task sampler (`icl_task` in C, `icl::TaskSampler` in C++).
 */
typedef struct icl_task icl_task;

/**
 * A trainer: task, model, optimiser, log and engine (`icl_trainer` in C, `icl::Trainer` in C++).
 */
typedef struct icl_trainer icl_trainer;

/**
 * Shape of a task sampler, model or trainer.
 */
typedef struct {
  /**
   * Covariate dimension d.
   */
  size_t d;
  /**
   * Outputs per token (1 except for the multi-task task).
   */
  size_t n_out;
  /**
   * Heads H (0 for a task sampler).
   */
  size_t heads;
  /**
   * Number of flat parameters (0 for a task sampler).
   */
  size_t n_params;
  /**
   * Training context length L of the configuration.
   */
  size_t train_len;
  /**
   * 1 when the model computes in double precision, 0 for single (0 for a task sampler).
   */
  int32_t is_f64;
} icl_dims;

/**
 * The progress callback of `icl_repro_with_progress`: `event` is `"start"` when a run's
 * training starts (or resumes), `"done"` when it ends (trained now) and `"skip"` for a run that
 * was complete already, as each happens; `name` is the run's folder under
 * `OUT_DIR/runs/` and `index` its place among the `count` runs the selected claims train. The
 * claims that need a computation without training (the temperature paper's experiments) then
 * report theirs the same way, `"start"` and then `"done"` or `"skip"`, with `index` and `count`
 * counted among those computations. `name` and `event` are valid during the call only; `user` is
 * the pointer given to `icl_repro_with_progress`, passed as is.
 */
typedef void (*icl_repro_progress_fn)(void *user, const char *name, size_t index, size_t count, const char *event);

/**
 * The progress callback of `icl_sweep_run_with_progress`: run `index` of the manifest (the
 * `"index"` of `icl_sweep_plan`'s runs) has done `step` of its `total` optimiser steps, `loss`
 * the loss of its last step. `user` is the pointer given to `icl_sweep_run_with_progress`,
 * passed as is. Return 0 to go on; any other value interrupts the sweep: the runs training then
 * are checkpointed and stop, no other run starts, and the call returns `ICL_OK` with those runs'
 * `status` `"interrupted"` (plus `"step"`, where it stopped) and the others' `"not_started"`;
 * calling again resumes them, to the same bytes as an uninterrupted run.
 */
typedef int32_t (*icl_sweep_progress_fn)(void *user, size_t index, uint64_t step, uint64_t total, double loss);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The library version, "MAJOR.MINOR.PATCH" (e.g. "0.1.0", the crate's version): a static string,
 * never NULL. A program built against this header and linked with the same library finds
 * `ICL_VERSION_MAJOR`, `ICL_VERSION_MINOR` and `ICL_VERSION_PATCH` in it. Cannot fail.
 * Thread-safe.
 */
const char *icl_version(void);

/**
 * The message of the last failed `icl_` call on the calling thread ("" if none has failed). The
 * pointer is owned by the library and valid until the next failing call on the same thread; copy it
 * to keep it. Successful calls leave it as it was. Cannot fail; never NULL. Thread-safe (each
 * thread has its own message).
 */
const char *icl_last_error(void);

/**
 * The name of a status code, e.g. "ICL_ERR_SIZE"; "ICL_UNKNOWN_STATUS" for a value that is not a
 * status (negative, or past ICL_ERR_PANIC). A static string, never NULL. Cannot fail. Thread-safe.
 */
const char *icl_status_name(int32_t status);

/**
 * Copy the options of the entry point `name` as JSON into `buf` (capacity `cap` bytes, NUL
 * included; `needed`, optional, receives the size required; call with `cap` = 0 to ask for it):
 * `[{"name", "kind", "optional", "default", "flag", "help"}]`, one object per key the entry
 * point takes (`kind`: "bool", "int", "float", "text", "list" (comma-separated), "items"
 * (`NAME.KEY` keys); `flag`: the `icl` flag of the same option). `name` is `"train"`
 * (`icl_train_run`), `"eval"` (`icl_eval_run`), `"repro"` (`icl_repro`) or `"sweep_run"`
 * (`icl_sweep_run`). Thread-safe.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_UNKNOWN_NAME: another `name`;
 * - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
 * - ICL_ERR_NULL: `name` is NULL, or `buf` is NULL with a large enough `cap`;
 * - ICL_ERR_UTF8: `name` is not UTF-8.
 */
icl_status icl_options_list(const char *name, char *buf, size_t cap, size_t *needed);

/**
 * The name of the default engine, the one `icl train` uses without `--engine` ("simd"): a static
 * string, never NULL. Cannot fail. Thread-safe.
 */
const char *icl_default_engine(void);

/**
 * Create the configuration of a preset (`he2025`, `he2025-h4`, `quick`, ...; `icl presets` lists
 * them) into `*out`. Free with `icl_config_free`. Thread-safe.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_UNKNOWN_NAME: no preset has this name (exact and case-sensitive; "" is no name);
 * - ICL_ERR_NULL: `name` or `out` is NULL.
 */
icl_status icl_config_preset(const char *name, icl_config **out);

/**
 * Create a configuration from a TOML text (`[task]`, `[model]`, `[train]` sections; keys not
 * given keep the `he2025` defaults, so "" is the he2025 configuration) into `*out`, checked as
 * `icl_config_set` checks each value and then as `icl_config_validate` checks the whole. Free with
 * `icl_config_free`. Thread-safe.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_UNKNOWN_KEY: an unknown section or key;
 * - ICL_ERR_CONFIG: the text is not TOML (a number TOML cannot hold as a double, such as
 *   `1e400`, is not TOML either), a key or section appears twice, a key is outside a section, a
 *   value has the wrong type or is outside its range, `[task]` gives both `eigs` and a `d` other
 *   than the number of eigenvalues, or a rule between keys fails;
 * - ICL_ERR_NONFINITE: a number is NaN or infinite (`nan`, `inf` in TOML);
 * - ICL_ERR_NULL: `toml` or `out` is NULL; ICL_ERR_UTF8: `toml` is not UTF-8.
 */
icl_status icl_config_from_toml(const char *toml, icl_config **out);

/**
 * Set one dotted key (e.g. "model.heads" = "4"; `icl presets --keys` lists every key with its
 * type and range; aliases such as "task.len" for "task.L" are accepted). The value is a TOML value
 * ("4", "1e-3", "true", "[0.5, 0.3]") or bare text ("eigs", "auto", "0.4,0.3"); for a list key ""
 * is the empty list. The value is checked now against its key's type and range, the same range
 * `icl_config_validate`, the TOML reader and the CLI use (for example `task.d` in 1..=4096,
 * `task.sigma2` >= 0, `train.lr` > 0, `model.scale` a finite number other than 0); setting
 * `task.eigs` to a non-empty list also sets `task.d` to its length, which must then be in d's
 * range (the empty list clears the eigenvalues and leaves `task.d`). Rules that involve several
 * keys (`task.eigs` has d values, a
 * multi-task support index <= d, the memory the configuration needs <= 16 GiB, ...) are checked by
 * `icl_config_validate` and when the config is used, so a config may pass through states that
 * break them while being edited.
 *
 * Returns ICL_OK, or (the config is unchanged on every failure):
 * - ICL_ERR_UNKNOWN_KEY: no such key (exact, case-sensitive; "" and "task" are not keys);
 * - ICL_ERR_CONFIG: the value has the wrong type ("" for a number, "4.5" or "-1" for an integer,
 *   an unknown enum word) or is outside the key's range;
 * - ICL_ERR_NONFINITE: the value is a NaN or infinite number, or a number too large for a double
 *   (`1e400`), also inside a list;
 * - ICL_ERR_NULL: `cfg`, `key` or `value` is NULL.
 */
icl_status icl_config_set(icl_config *cfg, const char *key, const char *value);

/**
 * Copy the value of a key as text (the form `icl_config_set` reads back) into `buf` (capacity
 * `cap` bytes, NUL included). `needed` (optional) receives strlen + 1.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_UNKNOWN_KEY: no such key;
 * - ICL_ERR_SIZE: `cap` < the size needed (nothing written to `buf`; `*needed` is set), so `cap`
 *   = 0 asks for the size, with `buf` NULL or not;
 * - ICL_ERR_NULL: `cfg` or `key` is NULL, or `buf` is NULL with a large enough `cap`.
 */
icl_status icl_config_get(const icl_config *cfg, const char *key, char *buf, size_t cap, size_t *needed);

/**
 * Check every key's range again and the rules that involve several keys, for example: `task.eigs`,
 * when not empty, has `task.d` values (whatever the task), `task.cov` has d*d, multi-task
 * supports are non-empty and at most 16 with indices <= d, `model.arch = iv2stage` needs `task.kind = iv`, and the working memory of the
 * configuration is at most 16 GiB. Every creating function (`icl_task_new`, `icl_model_new`,
 * `icl_trainer_new`) runs the same check.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_CONFIG: the first rule that fails, named in the message (with the memory needed for
 *   the budget rule);
 * - ICL_ERR_NULL: `cfg` is NULL.
 */
icl_status icl_config_validate(const icl_config *cfg);

/**
 * Copy the configuration as TOML text (every key; `icl_config_from_toml` reads it back to an equal
 * configuration, floats bit for bit) into `buf` (capacity `cap` bytes, NUL included); `needed`
 * (optional) receives the size required.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
 * - ICL_ERR_NULL: `cfg` is NULL, or `buf` is NULL with a large enough `cap`.
 */
icl_status icl_config_to_toml(const icl_config *cfg, char *buf, size_t cap, size_t *needed);

/**
 * Free a configuration (NULL is a no-op).
 */
void icl_config_free(icl_config *cfg);

/**
 * Evaluate the run folder `dir` like `icl eval DIR --json` and copy the JSON into `buf`
 * (capacity `cap`, NUL included; `needed`, optional, receives the size required; call with
 * `cap` = 0 to ask for it): `{"rows": [{"estimator", "L", "risk", "stderr", "tau", "shift",
 * ...}], "samples", "seed", "engine", ...}`. The options are `n` text pairs `keys[i]` =
 * `values[i]` (`icl_options_list` lists them): `lengths` (`"10,20,40,100"`), `samples`
 * (`"20000"`), `seed` (`"0"`), `engine`,
 * `tau` (`"0.5,1,2,opt"`: attention logits divided by tau; `opt` is chosen per length on
 * held-out sequences), `tau_holdout`, `shift.x_cov`, `shift.x_mean`, `shift.w_cov`,
 * `shift.w_mean`, `shift.noise` (e.g. `shift.x_cov` = `"3"`, `shift.x_mean` = `"2e1"`), and
 * for transformer runs `lambda_range`, `stack`, `layers_out`, `alignment`, `ref`. Statuses:
 * `ICL_ERR_ARGUMENT` (an unknown or repeated option or shift key, tau <= 0, a malformed value
 * or an empty item in a list, `tau_holdout` without `opt` among the temperatures, a tau, shift
 * or `lambda_range` so extreme that the evaluation is not finite in f64, a length outside
 * 1..=2^20, `samples` < 2, the engine `vulkan` for an f64 run),
 * `ICL_ERR_UNKNOWN_NAME` (an unknown `engine`; names are exact: "SIMD" is not "simd"),
 * `ICL_ERR_NONFINITE` (tau or a shift value NaN), `ICL_ERR_CONFIG` (a shift out of range, a
 * covariance that is not positive definite), `ICL_ERR_UNKNOWN_KEY` (an unknown shift key),
 * `ICL_ERR_UNSUPPORTED` (a shift on a task without one, `vulkan` without a Vulkan device),
 * `ICL_ERR_NUMERICAL` (a risk that is not finite without such values: the model itself
 * overflows on the samples),
 * `ICL_ERR_IO` (`dir` is missing, is
 * `""`, is a file, or holds no `model.safetensors`), `ICL_ERR_CHECKPOINT` (its
 * `model.safetensors` is refused as by `icl_model_load`), `ICL_ERR_NULL` (`dir` NULL, `keys` or
 * `values` NULL with `n` > 0, `buf` NULL with `cap` > 0), `ICL_ERR_UTF8` (a text not
 * UTF-8), `ICL_ERR_SIZE` (`cap` too small: nothing written, `*needed` set; more than 1024
 * options; `samples`, `tau_holdout` or `alignment` above 10^8; a transformer evaluation whose
 * memory (samples x the longest length, the depth) is above the 16 GiB budget or not available,
 * or `stack` beyond 1024 layers). A transformer option (`stack`, ...) on a one-layer run is `ICL_ERR_ARGUMENT`.
 * Every NULL and output pointer is checked before the evaluation. Nothing is written into
 * `dir`. Thread-safe.
 */
icl_status icl_eval_run(const char *dir, const char *const *keys, const char *const *values, size_t n, char *buf, size_t cap, size_t *needed);

/**
 * Draw the rows of an evaluation (`rows_json`: the JSON `icl_eval_run` wrote, or `icl eval
 * --json`'s) against the test length L', model and every baseline with error bars of one
 * standard error, into the file `path`: PNG if it ends in `.png`, SVG otherwise (`icl eval
 * --plot`). Statuses: `ICL_ERR_ARGUMENT` (`rows_json` is not such JSON, or holds no row),
 * `ICL_ERR_IO` (`path` cannot be written), `ICL_ERR_NULL` (`rows_json` or `path` NULL),
 * `ICL_ERR_UTF8` (a text not UTF-8). Thread-safe.
 */
icl_status icl_eval_plot(const char *rows_json, const char *path);

/**
 * Create a freshly initialised model of a configuration (seed `train.seed`, precision
 * `train.dtype`, run by the default engine) into `*out`. Free with `icl_model_free`.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_CONFIG: the configuration breaks a rule of `icl_config_validate`;
 * - ICL_ERR_NONFINITE: the initial parameters are not finite in the model's precision (a
 *   Gaussian init with `model.init_scale` = 1e300 in an f32 model);
 * - ICL_ERR_UNSUPPORTED: the configuration's model cannot be built (an option combination that is
 *   not implemented);
 * - ICL_ERR_NULL: `cfg` or `out` is NULL.
 */
icl_status icl_model_new(const icl_config *cfg, icl_model **out);

/**
 * Load a checkpoint (the `model.safetensors` of a run folder written by `icl train`, or by
 * `icl_model_save`/`icl_trainer_save`) into `*out`, in its stored precision, with its
 * configuration and step, run by the default engine. The reader is strict: a file that could be
 * misread is refused rather than guessed at. Thread-safe.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_IO: the file cannot be read (missing, a folder, no permission; "" is a missing file);
 * - ICL_ERR_CHECKPOINT: the file is not a valid icl checkpoint of this version: not safetensors
 *   (truncated, bad header, overlapping or uncovered data), metadata `format` is not
 *   "icl-checkpoint", metadata `version` is not "1" (unknown versions are refused, not read as
 *   version 1), `step` is not an integer in 0..=2^53, `dtype` is not "f32" or "f64", disagrees
 *   with a model tensor's dtype (an f64 label over F32 tensors is refused, not widened) or with
 *   the embedded configuration's `train.dtype`, a model tensor is missing, misshapen or not
 *   finite, a tensor is neither a model tensor nor trainer state (extra tensors are refused, not
 *   ignored), the trainer state is incomplete or inconsistent (optimiser state not finite or
 *   counting more updates than `step`, a loss window `train.window_sum` that is not finite or
 *   `train.window_count` longer than the steps since the last log row), or the embedded
 *   configuration is invalid or needs more than the memory budget (checked before any tensor is
 *   allocated);
 * - ICL_ERR_NULL: `path_` or `out` is NULL.
 */
icl_status icl_model_load(const char *path_, icl_model **out);

/**
 * Write the model as a checkpoint (format version 1; atomically: a temporary file in the same
 * folder renamed into place, so a reader never sees a partial file). The same model gives the same
 * bytes.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_IO: the file cannot be written (missing folder, no permission, full disk; "" is
 *   refused by the operating system);
 * - ICL_ERR_NULL: `model` or `path_` is NULL.
 */
icl_status icl_model_save(const icl_model *model, const char *path_);

/**
 * Run the model with another engine: "simd", "scalar" or "vulkan" (the names of `icl train
 * --engine`; exact and case-sensitive). On failure the model keeps its engine.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_UNKNOWN_NAME: no engine has this name ("" included);
 * - ICL_ERR_UNSUPPORTED: the engine cannot run here: "vulkan" without a Vulkan device, or for a
 *   model that computes in f64. (A multi-layer model accepts any engine here; its predictions,
 *   losses and risks are ICL_ERR_UNSUPPORTED on every engine, see `icl_model_predict`.)
 * - ICL_ERR_NULL: `model` or `name` is NULL.
 */
icl_status icl_model_set_engine(icl_model *model, const char *name);

/**
 * Shape of the model into `*out`.
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`model` or `out` is NULL).
 */
icl_status icl_model_dims(const icl_model *model, icl_dims *out);

/**
 * Create a copy of the model's configuration into `*out` (for a loaded checkpoint: the
 * configuration it was trained with). Free with `icl_config_free`.
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`model` or `out` is NULL).
 */
icl_status icl_model_config(const icl_model *model, icl_config **out);

/**
 * Predict the query outputs of `n` problems with context length `len`: contexts `x`
 * ([n][len][d], `x_len` values), `y` ([n][len][n_out]), queries `xq` ([n][d]); predictions go
 * to `out` ([n][n_out], `out_len` values). Inputs are rounded to the model's precision.
 *
 * Returns ICL_OK, or (`out` is left as it was on every failure):
 * - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, or a length differs
 *   from its shape (`x_len` != n len d, `y_len` != n len n_out, `xq_len` != n d, `out_len` !=
 *   n n_out), or the memory for the library's copy of the batch is not available;
 * - ICL_ERR_NONFINITE: an input is NaN, infinite, or overflows the model's precision;
 * - ICL_ERR_NUMERICAL: a prediction is not finite (the model overflows on this input, e.g.
 *   inputs of 1e160 in f64 or parameters near the precision's limit);
 * - ICL_ERR_UNSUPPORTED: the model is a multi-layer model (`model.arch` = transformer or
 *   iv2stage), on any engine: predictions, losses, gradients and risks here are those of
 *   one-layer attention (evaluate a multi-layer run with `icl_eval_run`);
 * - ICL_ERR_NULL: `model`, or an array with a non-zero length, is NULL.
 */
icl_status icl_model_predict(icl_model *model, size_t n, size_t len, const double *x, size_t x_len, const double *y, size_t y_len, const double *xq, size_t xq_len, double *out, size_t out_len);

/**
 * Predict on `n` prompts of `k` (x, y) pairs: `xs` ([n][k][d], `xs_len` values), `ys`
 * ([n][k]). For GPT-2 models (`model.arch = gpt2`) `out` ([n][k], `out_len` values) gets the
 * prediction at every x position (position i reads pairs 0..i-1 and x_i); for the other
 * families `out` ([n][n_out]) gets the prediction at the last x as the query (pairs 0..k-2 are
 * its context; the last y is not read).
 *
 * Returns ICL_OK, or (`out` is left as it was on every failure):
 * - ICL_ERR_SIZE: a length differs from its shape, n or k is 0, k exceeds a GPT-2 model's
 *   positions, or (other families) k < 2;
 * - ICL_ERR_NONFINITE: an input is NaN or infinite;
 * - ICL_ERR_UNSUPPORTED: the IV model (it reads instruments), or an engine that does not run
 *   the model's family;
 * - ICL_ERR_NULL: `model`, `xs`, `ys` or `out` is NULL.
 */
icl_status icl_model_predict_prompts(icl_model *model, size_t n, size_t k, const double *xs, size_t xs_len, const double *ys, size_t ys_len, double *out, size_t out_len);

/**
 * Predict for a token-major batch `z` (the layout of `icl_task_sample`, `z_len` = n (len+1)
 * (d+n_out); the query's y-slots are ignored) into `out` ([n][n_out]).
 *
 * Returns ICL_OK, or (`out` is left as it was on every failure):
 * - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, `z_len` or
 *   `out_len` differs from its shape, or the memory for the library's copy of the batch (in the
 *   model's precision) is not available;
 * - ICL_ERR_NONFINITE: a value of `z` other than a query y-slot is NaN, infinite or overflows the
 *   model's precision;
 * - ICL_ERR_NUMERICAL: a prediction is not finite, as in `icl_model_predict`;
 * - ICL_ERR_UNSUPPORTED: as in `icl_model_predict`;
 * - ICL_ERR_NULL: `model`, `z` or `out` is NULL.
 */
icl_status icl_model_predict_batch(icl_model *model, size_t n, size_t len, const double *z, size_t z_len, double *out, size_t out_len);

/**
 * Loss (mean squared error over sequences and outputs) of a token-major batch `z` with targets
 * `y` ([n][n_out]) into `*loss`, and its gradient with respect to the flat parameters into
 * `grad` (`grad_len` = n_params). The query's y-slots of `z` are ignored.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, `z_len`, `y_len`
 *   or `grad_len` differs from its shape, or the memory for the library's copy of the batch is
 *   not available;
 * - ICL_ERR_NONFINITE: an input is NaN, infinite or overflows the model's precision;
 * - ICL_ERR_NUMERICAL: the loss or gradient is not finite (the model overflows on this batch;
 *   `*loss` and `grad` are left as they were);
 * - ICL_ERR_UNSUPPORTED: as in `icl_model_predict`;
 * - ICL_ERR_NULL: `model`, `z`, `y`, `loss` or `grad` is NULL.
 */
icl_status icl_model_loss_grad(icl_model *model, size_t n, size_t len, const double *z, size_t z_len, const double *y, size_t y_len, double *loss, double *grad, size_t grad_len);

/**
 * Copy the flat parameters (n_params values, the tensor order of the checkpoint) into `out`.
 *
 * Returns ICL_OK, or ICL_ERR_SIZE (`len` != n_params), ICL_ERR_NULL (`model` or `out` NULL).
 */
icl_status icl_model_get_params(const icl_model *model, double *out, size_t len);

/**
 * Replace the flat parameters (n_params finite values, rounded to the model's precision). On
 * failure the parameters are unchanged.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `len` != n_params;
 * - ICL_ERR_NONFINITE: a value is NaN, infinite or overflows the model's precision;
 * - ICL_ERR_NULL: `model` or `params` is NULL.
 */
icl_status icl_model_set_params(icl_model *model, const double *params, size_t len);

/**
 * The circuits of every head (He et al. 2025 §3): `omega` (H values: the mean diagonal of the
 * effective KQ_11, score scale included) and `mu` (H n_out values, head-major: OV_22 per output).
 * Both buffers are checked before either is written.
 *
 * Returns ICL_OK, or ICL_ERR_SIZE (`omega_len` != H or `mu_len` != H n_out), ICL_ERR_NULL,
 * ICL_ERR_UNSUPPORTED (a multi-layer model: it has no per-head KQ and OV).
 */
icl_status icl_model_circuits(const icl_model *model, double *omega, size_t omega_len, double *mu, size_t mu_len);

/**
 * The effective circuit matrices: `kq` ([H][E][E], row-major, score scale included, E = d + n_out)
 * and `ov` ([H][n_out][E]). Both buffers are checked before either is written.
 *
 * Returns ICL_OK, or ICL_ERR_SIZE (`kq_len` != H E E or `ov_len` != H n_out E), ICL_ERR_NULL,
 * ICL_ERR_UNSUPPORTED (a multi-layer model, as in `icl_model_circuits`).
 */
icl_status icl_model_circuit_matrices(const icl_model *model, double *kq, size_t kq_len, double *ov, size_t ov_len);

/**
 * Monte Carlo risk E[(y_q - yhat_q)^2] (query noise included) at test length `len` with
 * `samples` sequences from stream (seed, eval, len, i), on the data of `task` (optional: NULL
 * means the model's own configuration), as `icl eval` computes it. Writes the mean to `*risk` and
 * its standard error to `*stderr_out`. Memory stays bounded whatever `samples` (sequences are
 * drawn in chunks); time grows linearly with `samples` and `len`.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `samples` < 2 (a standard error needs two) or > 10^8, `len` = 0 or
 *   `len` > 2^24, or the task's d or n_out differs from the model's;
 * - ICL_ERR_CONFIG, ICL_ERR_NUMERICAL: with `task` NULL, the model's configuration cannot make
 *   a task sampler (as in `icl_task_new`);
 * - ICL_ERR_NUMERICAL: a prediction or the risk is not finite (the model overflows on these
 *   samples; `*risk` and `*stderr_out` are left as they were);
 * - ICL_ERR_UNSUPPORTED: as in `icl_model_predict`;
 * - ICL_ERR_NULL: `model`, `risk` or `stderr_out` is NULL.
 */
icl_status icl_model_risk(icl_model *model, const icl_task *task, size_t len, size_t samples, uint64_t seed, double *risk, double *stderr_out);

/**
 * Free a model (NULL is a no-op).
 */
void icl_model_free(icl_model *model);

/**
 * Reproduce the paper `paper` (`"he2025"`, `"zhang2025"`, `"multilayer"`, `"temperature"` or `"garg"`)
 * into the folder `out_dir` like `icl repro PAPER --out OUT_DIR --json`, and copy the text of
 * the `report.json` it writes into `buf` (capacity `cap`, NUL included; `needed`, optional,
 * receives the size required): `{"paper", "scale", "version", "machine", "claims": [{"id",
 * "figure", "description", "paper_value", "measured", "stderr", "tolerance", "pass", "runs",
 * ...}], "runs": [{"name", "seconds", "steps_per_s"}]}`. The runs the selected claims need are
 * trained as run folders under `OUT_DIR/runs/` (`out_dir` and `runs/` are created if missing);
 * a run already complete there is skipped and an interrupted one resumed, so calling again with
 * the same options trains nothing and returns the same claims. `OUT_DIR/report.json`,
 * `report.md`, `report.html` and the figures are (re)written on every success. The options are
 * `n` text pairs `keys[i]` = `values[i]`: `scale` (`"smoke"`, the default, or `"paper"`), `only`
 * (comma-separated claim ids, e.g. `"fig13-final"`; unset or `""`: every claim; only the runs
 * the selected claims need are trained), `jobs` (runs trained at once, `"1"` to `"256"`,
 * default `"1"`), `engine` (`"simd"`, `"scalar"` or `"vulkan"`; unset: `icl_default_engine()`),
 * and `set.KEY` (or `set` = `"KEY=VALUE"`, as `--set`) for any key `icl_config_set` takes: that override in every run the selected
 * claims train, as `icl repro --set KEY=VALUE` (e.g. `set.train.steps` = `"50000"` for runs
 * shorter than the paper's; `report.json` then lists the overrides under `"set"`). Nothing is
 * printed. Statuses: `ICL_ERR_UNKNOWN_NAME` (an unknown `paper` or `engine`),
 * `ICL_ERR_ARGUMENT` (an unknown or repeated key, a `scale` other than `smoke` or `paper`, a
 * claim id the paper does not have or an empty one (`only` = `","`), `jobs` not an integer in
 * 1..=256, `out_dir` `""` or a file, `set.` with an empty KEY, any `set.KEY` when the selected
 * claims train no run, a `set.KEY` of a key the selected runs differ in, such as he2025's
 * `train.seed`),
 * `ICL_ERR_UNKNOWN_KEY`, `ICL_ERR_CONFIG` or `ICL_ERR_NONFINITE` (a `set.KEY` that
 * `icl_config_set` refuses with that status, or that breaks a rule of `icl_config_validate` in
 * one of the runs),
 * `ICL_ERR_IO` (a folder or file under `out_dir` cannot be created or written, e.g. a parent
 * of `out_dir` is a file), `ICL_ERR_NULL` (`paper` or `out_dir` NULL, `keys` or `values` NULL with `n` > 0,
 * `buf` NULL with `cap` > 0), `ICL_ERR_UTF8` (a text not UTF-8), `ICL_ERR_SIZE` (more than 1024
 * options, or `cap` too small: nothing is copied and `*needed` is set, but the runs and reports
 * are written, so the call again with a buffer of `*needed` bytes trains nothing). Every bad
 * option and NULL is reported before anything is written; a run that fails while training
 * returns its status (e.g. `ICL_ERR_NUMERICAL`, `ICL_ERR_UNSUPPORTED` for vulkan without a
 * device). Blocks until every run is done (seconds for one zhang2025 claim, minutes for a paper
 * at smoke scale, hours at paper scale). Thread-safe, but two calls must not share `out_dir`.
 */
icl_status icl_repro(const char *paper, const char *out_dir, const char *const *keys, const char *const *values, size_t n, char *buf, size_t cap, size_t *needed);

/**
 * `icl_repro` with progress reports: the same options, statuses, files and result, and
 * `progress` (NULL: none, as `icl_repro`) called with `user` as `icl_repro_progress_fn`
 * says, one call at a time (from icl's threads when `jobs` > 1). The callback cannot stop the
 * call; it must return normally (no `longjmp`, no C++ exception) and must not call
 * `icl_repro_with_progress` or `icl_repro` for the same `out_dir`.
 */
icl_status icl_repro_with_progress(const char *paper, const char *out_dir, const char *const *keys, const char *const *values, size_t n, icl_repro_progress_fn progress, void *user, char *buf, size_t cap, size_t *needed);

/**
 * Expand the sweep file `file` (TOML: `preset = "NAME"` or `config = "FILE"`, `seeds = [..]`,
 * `[set]` fixed overrides, `[grid]` lists of values, every combination) into the sweep folder
 * `out_dir`, like `icl sweep plan FILE --out OUT_DIR --json`: `OUT_DIR/manifest.jsonl` is
 * written (one line per run; a config-file sweep also copies the config to
 * `OUT_DIR/base.toml`), and the planned runs are copied into `buf` (capacity `cap`, NUL
 * included; `needed`, optional, receives the size required) as a JSON array of `{"index",
 * "name", "values", "preset" or "config", "set"}`, the seed fastest; `name` (the run's folder
 * under `out_dir`) is made of the grid values and seed, e.g. `"heads=2,seed=7"`. Planning the
 * same file into the same folder again changes nothing; a different plan into a folder that
 * holds one is refused. Statuses: `ICL_ERR_ARGUMENT` (the file is not a valid sweep file: bad
 * TOML, an unknown field, an unknown preset, a `[set]` or `[grid]` key or value the config
 * refuses, an empty grid list, a repeated seed, more than 100000 runs; or `out_dir` holds
 * another plan), `ICL_ERR_IO` (`file` or its `config` missing or unreadable, `out_dir` cannot
 * be created or written), `ICL_ERR_NULL` (`file` or `out_dir` NULL, `buf`
 * NULL with `cap` > 0), `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (`cap` too small: nothing is copied
 * and `*needed` is set; the folder is planned, so calling again with `*needed` bytes is a
 * no-op that copies the runs). Thread-safe, but two calls must not share `out_dir`.
 */
icl_status icl_sweep_plan(const char *file, const char *out_dir, char *buf, size_t cap, size_t *needed);

/**
 * Train the runs of the sweep folder `dir` (made by `icl_sweep_plan` or `icl sweep plan`) into
 * `DIR/<name>`, like `icl sweep run DIR --json` (or `icl sweep run-one DIR --index I --json`),
 * and copy the results into `buf` (capacity `cap`, NUL included; `needed`, optional, receives
 * the size required) as a JSON array, in the manifest's order, of `{"name", "status",
 * "wall_seconds"}` with `status` `"skipped"` (already complete), `"trained"` or `"resumed"`
 * (an interrupted run continued from its checkpoint), plus `"steps"`, `"seconds"` and
 * `"steps_per_s"` (of the run's last training). The run folders are those of `icl train`, and
 * a run's bytes depend on its config only, not on `jobs` or the thread count. The options are
 * `n` text pairs `keys[i]` = `values[i]`, with the CLI's defaults: `jobs` (runs trained at
 * once, `"0"` (one per core) to `"256"`, default `"1"`), `index` (train only that run, from
 * `"0"`; not with `jobs`), `runs_per_task` (with `index`: train that Slurm array task's runs,
 * index·K .. index·K + K − 1 for K `"1"` to `"256"`, on `vulkan` the one-layer runs of one
 * shape among them as one pack), `engine` (`"simd"`, `"scalar"` or `"vulkan"`; unset:
 * `icl_default_engine()`), `eval_samples` (Monte Carlo samples for the final risk in each
 * `summary.json`, default `"20000"`, `"0"`: none), `checkpoint_minutes` (default `"0.5"`, `"0"`:
 * off), `checkpoint_every` (steps, default `"0"`: off) and `force` (`"true"`: retrain
 * complete runs too, replacing their folders; default `"false"`). Statuses:
 * `ICL_ERR_ARGUMENT` (an unknown or repeated key, a value not of its kind, `jobs` over 256,
 * `jobs` with `index`, `index` past the last run or task, `runs_per_task` without `index`, a negative or non-finite
 * `checkpoint_minutes`, `dir` not a sweep folder, a run's config refused), `ICL_ERR_UNKNOWN_NAME`
 * (an unknown `engine`, or a manifest edited to name an unknown preset), `ICL_ERR_CHECKPOINT` (the manifest or a run's file cannot be
 * decoded), `ICL_ERR_IO`, `ICL_ERR_NULL` (`dir` NULL, `keys` or `values` NULL with `n` > 0,
 * `buf` NULL with `cap` > 0), `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (more than 1024 options, or `cap`
 * too small: nothing is copied and `*needed` is set, but the runs are trained, so calling again
 * with `*needed` bytes skips them and copies the results). Every bad option and NULL is
 * reported before anything is trained. A run that fails while training does not stop the
 * others: when every run has been tried, the call returns the first failure's status (e.g.
 * `ICL_ERR_NUMERICAL`, `ICL_ERR_UNSUPPORTED` for vulkan without a device) with a message naming
 * the run, and nothing is copied; the runs that completed are kept (`icl_sweep_status` lists
 * them, and calling again skips them). Blocks until every run is done. Thread-safe, but two
 * calls must not train the same folder at once (the second fails with `ICL_ERR_ARGUMENT` for a
 * run the first is writing).
 */
icl_status icl_sweep_run(const char *dir, const char *const *keys, const char *const *values, size_t n, char *buf, size_t cap, size_t *needed);

/**
 * `icl_sweep_run` with progress reports: the same options, statuses, files and result, and
 * `progress` (NULL: none, as `icl_sweep_run`) called with `user` as
 * `icl_sweep_progress_fn` says: for each run, at its first step (the first after the
 * checkpoint when it resumes), at its last, and in between at most about ten times a second;
 * one call at a time, from icl's threads (several runs train at once when `jobs` > 1). The
 * callback must return normally (no `longjmp`, no C++ exception) and must not call
 * `icl_sweep_run` or `icl_sweep_run_with_progress` for the same folder. Only a call to this
 * function can interrupt a sweep without killing the process.
 */
icl_status icl_sweep_run_with_progress(const char *dir, const char *const *keys, const char *const *values, size_t n, icl_sweep_progress_fn progress, void *user, char *buf, size_t cap, size_t *needed);

/**
 * The state of every run of the sweep folder `dir`, read from the run folders: the objects
 * `icl sweep status DIR --json` prints one per line, copied into `buf` (capacity `cap`, NUL
 * included; `needed`, optional, receives the size required) as one JSON array of `{"index",
 * "name", "state"}` with
 * `state` `"complete"` (plus `"steps"`, `"seconds"`, `"steps_per_s"`), `"running"` (another
 * process is writing it now), `"interrupted"` (plus `"step"`, the checkpoint's step, when it is
 * readable), `"pending"` or `"damaged"` (plus `"reason"`: the folder is not a readable complete
 * run, e.g. its model or summary was deleted or is corrupt; `icl_sweep_run` trains it again).
 * Writes nothing. Statuses: `ICL_ERR_ARGUMENT` (`dir` is not a sweep
 * folder), `ICL_ERR_CHECKPOINT` (its manifest cannot be decoded),
 * `ICL_ERR_IO`, `ICL_ERR_NULL` (`dir` NULL, `buf` NULL with `cap` > 0), `ICL_ERR_UTF8`,
 * `ICL_ERR_SIZE` (`cap` too small: nothing is copied and `*needed` is set). Thread-safe.
 */
icl_status icl_sweep_status(const char *dir, char *buf, size_t cap, size_t *needed);

/**
 * Collect the results of the sweep folder `dir` like `icl sweep collect DIR --json`: write
 * `DIR/results.csv` and `DIR/results.json` (one row per run and metric: the run's name, its
 * grid values and seed, the metric, the value; the metrics are every number of the run's
 * `summary.json` but the config and the timing, so they depend on the configs only),
 * `DIR/runs.csv` (the timing) and the summary plots, and copy into `buf` (capacity `cap`, NUL
 * included; `needed`, optional, receives the size required) the JSON object `{"columns",
 * "rows", "incomplete", "files"}`: `results.json`'s columns and rows, the names of the runs left
 * out and the paths written. With `partial` = 0 a sweep with runs not complete is refused
 * (`ICL_ERR_ARGUMENT`, nothing written); with `partial` != 0 they are left out. Statuses:
 * `ICL_ERR_ARGUMENT` (`dir` is not a sweep folder, or runs not complete without `partial`),
 * `ICL_ERR_CHECKPOINT` (its manifest or a run's file cannot be decoded), `ICL_ERR_IO` (a
 * file cannot be written), `ICL_ERR_NULL` (`dir` NULL, `buf` NULL with `cap` > 0),
 * `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (`cap` too small: nothing is copied and `*needed` is set, but
 * the files are written; calling again writes the same bytes). Thread-safe, but two calls must
 * not collect the same folder at once.
 */
icl_status icl_sweep_collect(const char *dir, int32_t partial, char *buf, size_t cap, size_t *needed);

/**
 * Create the task sampler of a configuration into `*out`. Free with `icl_task_free`.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_CONFIG: the configuration breaks a rule of `icl_config_validate`;
 * - ICL_ERR_NUMERICAL: the covariance is not positive definite (`task.cov`);
 * - ICL_ERR_NULL: `cfg` or `out` is NULL.
 */
icl_status icl_task_new(const icl_config *cfg, icl_task **out);

/**
 * Shape of the sampler: d, n_out and the training length L (heads, n_params, is_f64 are 0).
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`task` or `out` is NULL).
 */
icl_status icl_task_dims(const icl_task *task, icl_dims *out);

/**
 * Sample `n` sequences of context length `len` into caller-owned buffers: `z` (`z_len` =
 * n (len+1) (d+n_out) values, token-major: token l of sequence b at `z[(b (len+1) + l) (d+n_out)]`,
 * x first then y, the query last with y-slots 0) and targets `y` (`y_len` = n n_out). Sequence b is
 * drawn from stream (seed, domain, step, b): with `ICL_DOMAIN_TRAIN` and `n` = train.batch,
 * `len` = L this is exactly the batch `icl train` uses at step `step` (with the simd engine on the
 * isotropic task, up to that engine's rounding: see CONVENTIONS).
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_ARGUMENT: `domain` is neither ICL_DOMAIN_TRAIN nor ICL_DOMAIN_EVAL;
 * - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, `z_len` or `y_len`
 *   differs from its shape, or the memory for the batch is not available;
 * - ICL_ERR_NULL: `task`, `z` or `y` is NULL.
 */
icl_status icl_task_sample(const icl_task *task, uint64_t seed, uint32_t domain, uint64_t step, size_t n, size_t len, double *z, size_t z_len, double *y, size_t y_len);

/**
 * Free a task sampler (NULL is a no-op).
 */
void icl_task_free(icl_task *task);

/**
 * Copy the list of every theory quantity as JSON into `buf` (capacity `cap` bytes, NUL included;
 * `needed`, optional, receives the size required; call with `cap` = 0 to ask for it):
 * `[{"name", "paper", "about", "params": [{"flag", "default", "help", "accepts"}]}]`, the same
 * text as `icl theory --list --json`. `default` is null for a required parameter. Thread-safe.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
 * - ICL_ERR_NULL: `buf` is NULL with a large enough `cap`.
 */
icl_status icl_theory_list(char *buf, size_t cap, size_t *needed);

/**
 * Evaluate the theory quantity `name` with `n` parameters given as text (`keys[i]` =
 * `values[i]`, names without the leading `--`; parameters not given take their defaults), and copy
 * the result as JSON into `buf` (capacity `cap`, NUL included; `needed` as in
 * [`icl_theory_list`]): `{"name", "value", <extra outputs>, "params"}`, the same text as
 * `icl theory NAME --json`. With `n` = 0, `keys` and `values` may be NULL. Thread-safe.
 *
 * The temperature quantities take `run` = a run folder (`icl train`'s, or one holding a
 * `model.safetensors` that `icl_model_save` wrote): its checkpoint is read and the closed forms
 * are evaluated at the linearised layer of its one softmax head, `d`, `l` and the test
 * distribution defaulting to the run's (as `icl theory ... --run DIR`; docs/papers/temperature.md,
 * "Temperature of a trained run").
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_UNKNOWN_NAME: no quantity has this name (exact, case-sensitive);
 * - ICL_ERR_ARGUMENT: an unknown, repeated or missing parameter, or a value outside its kind or
 *   range (e.g. `xi` = -1, `rho` = 5, `d` = 100000), or outside the domain of the closed form
 *   (`ols-risk` at L <= d + 1, `bayes-risk-mc` at `sigma2` = 0); with `run`, a `d` other than the run's or a
 *   flag the run replaces (`train-*`, `l-train`, `pretrain-*`);
 * - ICL_ERR_NONFINITE: a parameter, or a number in a list parameter, is NaN or infinite;
 * - ICL_ERR_NUMERICAL: the computation failed (a singular matrix, a diverging trajectory) or its
 *   value is not finite (a closed form that overflows at these parameters: reported, never
 *   returned as inf or JSON null);
 * - ICL_ERR_SIZE: `n` > 1024, or `cap` < the size needed (nothing written; `*needed` is set), or
 *   the parameters ask for more than the budget: working memory beyond 16 GiB or beyond what the
 *   process can have (`bayes-risk-mc` with a large `L` x `d`), more than 10^7 integration steps or
 *   trajectory rows (`t-end` / `dt`), a list longer than it takes (`omega` beyond 1024 heads);
 *   checked before the computation starts;
 * - ICL_ERR_IO: `run` names no folder or file;
 * - ICL_ERR_CHECKPOINT: the run's `model.safetensors` is damaged;
 * - ICL_ERR_UNSUPPORTED: the run's model is not one softmax head with one output (several heads,
 *   linear attention, a transformer);
 * - ICL_ERR_NULL: `name` is NULL, `keys`/`values` is NULL with `n` > 0, an entry of them is
 *   NULL, or `buf` is NULL with `cap` > 0 (checked, like every output pointer, before the
 *   computation).
 */
icl_status icl_theory_eval(const char *name, const char *const *keys, const char *const *values, size_t n, char *buf, size_t cap, size_t *needed);

/**
 * Evaluate like [`icl_theory_eval`] and copy the quantity's main value as numbers into `out`
 * (capacity `out_len`): one number for a scalar quantity, the list for a list-valued one.
 * `count` (optional) receives the number of values, also when `out_len` is too small.
 * Thread-safe.
 *
 * Returns ICL_OK, or those of [`icl_theory_eval`] (its `cap` cases aside), and:
 * - ICL_ERR_SIZE: `out_len` < the number of values (nothing written; `*count` is set);
 * - ICL_ERR_UNSUPPORTED: the value is not a number or a list of numbers;
 * - ICL_ERR_NULL: `out` is NULL with `out_len` > 0 (checked, like `count`, before the
 *   computation).
 */
icl_status icl_theory_value(const char *name, const char *const *keys, const char *const *values, size_t n, double *out, size_t out_len, size_t *count);

/**
 * Train the configuration `cfg` into the run folder `out_dir` like `icl train --config CFG --out
 * OUT_DIR` (same seed, same bytes: `model.safetensors`, `metrics.csv`, `summary.json`, ...), and
 * copy the text of the `summary.json` it writes into `buf` (capacity `cap`, NUL included;
 * `needed`, optional, receives the size required): `{"config", "engine", "protocol", "steps",
 * "seconds", "steps_per_second", "final_loss", "risk", "heads", ...}`. The folder is written
 * completely or not at all. The options are `n` text pairs `keys[i]` = `values[i]`, with the
 * CLI's defaults: `steps` and `seed` (override `train.steps` and `train.seed`), `engine`
 * (`"simd"`, `"scalar"` or `"vulkan"`; unset: `icl_default_engine()`), `force` (`"true"`:
 * replace an existing run in `out_dir`; default `"false"`), `eval_samples` (Monte Carlo samples
 * of the risk at the training length in `summary.json`, default `"20000"`, `"0"`: none),
 * `checkpoint_every` (steps, default `"0"`: off) and `checkpoint_minutes` (default `"0.5"`,
 * `"0"`: off); `icl_options_list` lists them. Blocks until the run is done; prints nothing.
 * Statuses: `ICL_ERR_ARGUMENT` (an unknown or repeated key, a value not of its kind, a negative
 * or non-finite `checkpoint_minutes`, `out_dir` `""` or holding a run or other files without
 * `force`, `engine` `"vulkan"` for an f64 configuration or an `engine` for a run that trains on
 * exact moments), `ICL_ERR_UNKNOWN_NAME` (an unknown `engine`), `ICL_ERR_CONFIG` (a `steps` or
 * `seed` the configuration refuses, or a configuration that breaks a rule of
 * `icl_config_validate` or needs more than the memory budget), `ICL_ERR_NUMERICAL` (training
 * diverged: nothing is left in `out_dir`), `ICL_ERR_UNSUPPORTED` (`vulkan` without a Vulkan
 * device), `ICL_ERR_IO` (`out_dir` cannot be created or written), `ICL_ERR_NULL` (`cfg` or
 * `out_dir` NULL, `keys` or `values` NULL with `n` > 0, `buf` NULL with `cap` > 0),
 * `ICL_ERR_UTF8` (a text not UTF-8), `ICL_ERR_SIZE` (more than 1024 options, `eval_samples`
 * above 10^8, or `cap` too small: nothing is copied and `*needed` is set, but the run is
 * trained: calling again with `*needed` bytes and `force` unset fails with `ICL_ERR_ARGUMENT`,
 * so read `OUT_DIR/summary.json` instead, or ask with a large enough buffer). Every bad option,
 * NULL and output pointer is reported before training. Thread-safe, but two calls must not
 * share `out_dir`.
 */
icl_status icl_train_run(const icl_config *cfg, const char *out_dir, const char *const *keys, const char *const *values, size_t n, char *buf, size_t cap, size_t *needed);

/**
 * Draw the training figures of the finished run in `dir` again like `icl plot DIR --json`
 * (`loss.svg` and its family's: `omega_mu.svg`, `pattern.svg`, ...; a linear-attention run's
 * CSVs too) from the training log its `model.safetensors` keeps, and copy `{"dir", "figures"}`
 * (the folder's figure files by name) into `buf` (capacity `cap`, NUL included; `needed`,
 * optional, receives the size required). `summary.json`, the model and `metrics.csv` are not
 * touched. Statuses: `ICL_ERR_ARGUMENT` (`dir` is not a run folder, or its model keeps no
 * training log: an imported model, or one saved by `icl_model_save` or `icl_trainer_save`),
 * `ICL_ERR_IO` (`dir` is missing, or a figure cannot be written), `ICL_ERR_CHECKPOINT` (its
 * `model.safetensors` is refused as by `icl_model_load`), `ICL_ERR_NULL` (`dir` NULL, `buf`
 * NULL with `cap` > 0), `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (`cap` too small: nothing is copied and
 * `*needed` is set, but the figures are drawn; calling again draws the same bytes).
 * Thread-safe.
 */
icl_status icl_run_plot(const char *dir, char *buf, size_t cap, size_t *needed);

/**
 * Create a trainer for a configuration into `*out`: the model initialised from `train.seed`, the
 * optimiser of `train.*`, run by the engine `engine` (optional: NULL means `icl_default_engine()`,
 * the engine `icl train` uses without `--engine`; "" is not a name). With the same configuration
 * and engine, its steps reproduce `icl train` exactly. Free with `icl_trainer_free`.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_CONFIG: the configuration breaks a rule of `icl_config_validate`;
 * - ICL_ERR_NONFINITE: the initial parameters are not finite in the model's precision (as in
 *   `icl_model_new`);
 * - ICL_ERR_NUMERICAL: the task's covariance is not positive definite;
 * - ICL_ERR_UNKNOWN_NAME: no engine has this name (exact, case-sensitive);
 * - ICL_ERR_UNSUPPORTED: the engine cannot run this configuration ("vulkan" without a device, in
 *   f64, or for a multi-layer model), or the configuration asks for an option combination that is
 *   not implemented;
 * - ICL_ERR_NULL: `cfg` or `out` is NULL.
 */
icl_status icl_trainer_new(const icl_config *cfg, const char *engine, icl_trainer **out);

/**
 * Create a trainer that continues from a checkpoint into `*out`: its configuration, parameters and
 * step count. A checkpoint with trainer state (written by `icl train` or `icl_trainer_save`)
 * continues bit for bit: optimiser moments, log and step, as if never interrupted. One without (an
 * `icl_model_save` checkpoint, an imported model) starts a fresh optimiser at the saved parameters
 * and step. `engine` is optional as in `icl_trainer_new`.
 *
 * Returns ICL_OK, or those of `icl_model_load` (ICL_ERR_IO, ICL_ERR_CHECKPOINT) and of
 * `icl_trainer_new` for the engine (ICL_ERR_UNKNOWN_NAME, ICL_ERR_UNSUPPORTED).
 */
icl_status icl_trainer_from_checkpoint(const char *path_, const char *engine, icl_trainer **out);

/**
 * Run `steps` optimiser steps of the configuration's protocol, exactly as `icl train` runs it:
 * fresh batches (the batch of step t from stream (seed, train, t, b)), or for the `eigs` task with
 * `task.P > 0` full-batch gradient descent on the fixed training set. The step that completes
 * `train.steps` adds the final log row as `icl train` does, so the log is the same however the
 * steps are split into calls; steps past `train.steps` are allowed (an extended run).
 * `losses` (optional; if given, `losses_len` >= steps) receives the loss of each step in its first
 * `steps` values; `mean_loss` (optional) their mean (0 for `steps` = 0).
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_NUMERICAL: a step diverged: its loss, its gradient or the updated parameters or
 *   optimiser moments are not finite (e.g. `train.lr` = 1e300, or `train.eps` = 1e-300, which is
 *   0 in f32). That step is undone: the parameters, optimiser state, log and step count are those
 *   after the last good step (so the trainer stays finite, and `icl_trainer_save` writes a
 *   checkpoint that `icl_trainer_from_checkpoint` continues). The steps before it are kept, with
 *   their losses written to `losses` (the failing step's is not), and the trainer's step count
 *   says how many; `*mean_loss` is left as it was;
 * - ICL_ERR_SIZE: `losses` is given with `losses_len` < steps (nothing done);
 * - ICL_ERR_NULL: `trainer` is NULL, or `losses` is NULL with `losses_len` > 0 (nothing done).
 */
icl_status icl_trainer_train(icl_trainer *trainer, uint64_t steps, double *losses, size_t losses_len, double *mean_loss);

/**
 * One optimiser step on a caller's token-major batch (`z`, `y` in the layout of
 * `icl_task_sample`; any n >= 1 and 1 <= len <= 2^24; the query's y-slots are ignored). It counts
 * as a step (later sampled steps use the next stream) but is not entered in the log. `loss`
 * (optional) receives the batch loss before the update.
 *
 * Returns ICL_OK, or (the trainer is unchanged on every failure):
 * - ICL_ERR_SIZE: as in `icl_model_loss_grad`;
 * - ICL_ERR_NONFINITE: an input is NaN, infinite or overflows the model's precision;
 * - ICL_ERR_NUMERICAL: the loss or gradient on this batch, or the updated parameters or
 *   optimiser moments, are not finite (the step diverged and is not taken);
 * - ICL_ERR_UNSUPPORTED: a multi-layer model (steps on caller batches are for one-layer
 *   attention; train it with `icl_trainer_train`);
 * - ICL_ERR_NULL: `trainer`, `z` or `y` is NULL.
 */
icl_status icl_trainer_step_batch(icl_trainer *trainer, size_t n, size_t len, const double *z, size_t z_len, const double *y, size_t y_len, double *loss);

/**
 * Steps completed into `*out`.
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
 */
icl_status icl_trainer_step_count(const icl_trainer *trainer, uint64_t *out);

/**
 * Shape of the trainer's model into `*out`.
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
 */
icl_status icl_trainer_dims(const icl_trainer *trainer, icl_dims *out);

/**
 * Copy the flat parameters (n_params values) into `out`.
 *
 * Returns ICL_OK, or ICL_ERR_SIZE (`len` != n_params), ICL_ERR_NULL.
 */
icl_status icl_trainer_get_params(const icl_trainer *trainer, double *out, size_t len);

/**
 * Replace the flat parameters (n_params finite values); the optimiser state is kept. On failure
 * the parameters are unchanged.
 *
 * Returns ICL_OK, or ICL_ERR_SIZE (`len` != n_params), ICL_ERR_NONFINITE (a value is NaN,
 * infinite or overflows the model's precision), ICL_ERR_NULL.
 */
icl_status icl_trainer_set_params(icl_trainer *trainer, const double *params, size_t len);

/**
 * Per-head omega (H values) and mu (H n_out values) of the current model, as in
 * `icl_model_circuits` (both buffers checked before either is written).
 *
 * Returns ICL_OK, or ICL_ERR_SIZE (`omega_len` != H or `mu_len` != H n_out), ICL_ERR_NULL,
 * ICL_ERR_UNSUPPORTED (a multi-layer model).
 */
icl_status icl_trainer_circuits(const icl_trainer *trainer, double *omega, size_t omega_len, double *mu, size_t mu_len);

/**
 * Create a copy of the current model (configuration, step and engine included) into `*out`.
 * Free with `icl_model_free`.
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
 */
icl_status icl_trainer_model(const icl_trainer *trainer, icl_model **out);

/**
 * Write the current model with the trainer's whole state (optimiser moments, log, step: the
 * `model.safetensors` that `icl train` writes), atomically; `icl_trainer_from_checkpoint`
 * continues it bit for bit and `icl_model_load` reads its model.
 *
 * Returns ICL_OK, or ICL_ERR_IO (the file cannot be written), ICL_ERR_NULL.
 */
icl_status icl_trainer_save(const icl_trainer *trainer, const char *path_);

/**
 * Number of rows in the training log into `*out`: the rows of the `metrics.csv` that `icl train`
 * writes for the same steps, however the steps are split into calls (with fresh data a row after
 * step 1, every `train.log_every` steps and at step `train.steps`; full batch (`eigs` with
 * `task.P` > 0) a row at steps 0, `train.log_every`, ... before their update and one after the
 * update that completes `train.steps`; both also at the early steps 2, 5, 10, 20, 50, ... below
 * `train.log_every`, 1 too full batch), by step. Steps of `icl_trainer_step_batch` are not
 * logged.
 *
 * Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
 */
icl_status icl_trainer_log_len(const icl_trainer *trainer, size_t *out);

/**
 * Row `i` (0-based) of the training log: the step, the training loss (as in `metrics.csv`),
 * and the per-head omega and mu (first output) columns of the log. `omega_len` and `mu_len` must
 * equal the number of those columns: H (`icl_trainer_dims`' heads) for one-layer attention on
 * every task but `eigs`, and 0 for the `eigs` task and for multi-layer models (`model.arch` =
 * transformer or iv2stage), whose logs hold other columns (`icl_trainer_log_columns` names
 * every column, `icl_trainer_log_values` reads them all). `step` and `loss` are optional;
 * `omega` and `mu` may be NULL when their length is 0. Every output is checked before any is
 * written.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `i` >= the number of rows (an index past the end), or `omega_len` or `mu_len`
 *   differs from the number of omega or mu columns;
 * - ICL_ERR_NULL: `trainer` is NULL, or `omega` or `mu` is NULL with a non-zero length.
 */
icl_status icl_trainer_log_row(const icl_trainer *trainer, size_t i, uint64_t *step, double *loss, double *omega, size_t omega_len, double *mu, size_t mu_len);

/**
 * Copy the names of the training log's columns, comma-separated, into `buf` (capacity `cap`
 * bytes, NUL included; `needed`, optional, receives the size required): the header line of the
 * `metrics.csv` that `icl train` writes for this configuration, "step,loss," then the logged
 * quantities (e.g. "step,loss,omega_0,omega_1,mu_0,mu_1" for two heads).
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
 * - ICL_ERR_NULL: `trainer` is NULL, or `buf` is NULL with a large enough `cap`.
 */
icl_status icl_trainer_log_columns(const icl_trainer *trainer, char *buf, size_t cap, size_t *needed);

/**
 * Row `i` (0-based) of the training log as numbers, in the order of `icl_trainer_log_columns`:
 * the step, the loss and every logged quantity, at full precision (a row of `metrics.csv`, which
 * prints them with 9 significant digits). `out` has capacity
 * `out_len`; `count` (optional) receives the number of values (2 + the number of logged
 * quantities), also when `out_len` is too small.
 *
 * Returns ICL_OK, or:
 * - ICL_ERR_SIZE: `i` >= the number of rows, or `out_len` < the number of values (nothing
 *   written; `*count` is set);
 * - ICL_ERR_NULL: `trainer` is NULL, or `out` is NULL with a large enough `out_len`.
 */
icl_status icl_trainer_log_values(const icl_trainer *trainer, size_t i, double *out, size_t out_len, size_t *count);

/**
 * Free a trainer (NULL is a no-op).
 */
void icl_trainer_free(icl_trainer *trainer);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* ICL_H */
