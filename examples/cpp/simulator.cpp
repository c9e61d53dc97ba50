// simulator.cpp -- a small simulator that streams regression problems to an in-context learner
// and trains it inside its own loop, through the C++ API (namespace icl, include/icl.hpp).
//
// Every tick it trains the model for a chunk of optimiser steps (the trainer's own batches,
// exactly those of `icl train` for the same configuration, seed and engine), then draws a fresh
// batch of problems from the evaluation streams (seed, eval, tick, b) and reports the model's
// squared error on them and its running mean. At the end it prints the training log (the rows of
// `icl train`'s metrics.csv, as exact doubles), the circuits, and writes a checkpoint.
//
//   simulator [--preset quick] [--steps 2000] [--seed S] [--engine NAME] [--set KEY=VALUE]...
//             [--chunk 100] [--problems 32] [--out CHECKPOINT]
//
// Output lines: "tick STEP TRAIN_LOSS STREAM_MSE RUNNING_MSE", then "log STEP LOSS OMEGA.. MU..",
// "head H OMEGA MU", "risk L RISK STDERR". Doubles are printed with %.17g (exact round trip).
//
// Build (see ffi/README.md):
//   g++ -std=c++17 -Iffi/include examples/cpp/simulator.cpp target/release/libicl_ffi.a
//       -lpthread -ldl -lm -lrt -lutil -o simulator
#include <icl.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string preset = "quick";
    std::string engine;  // "" = the default engine, as `icl train` without --engine
    std::string out;
    std::vector<std::pair<std::string, std::string>> sets;
    unsigned long long steps = 2000, seed = 0, chunk = 100, problems = 32;
    bool has_seed = false;
};

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
            return argv[++i];
        };
        if (a == "--preset") o.preset = next();
        else if (a == "--steps") o.steps = std::stoull(next());
        else if (a == "--seed") { o.seed = std::stoull(next()); o.has_seed = true; }
        else if (a == "--engine") o.engine = next();
        else if (a == "--chunk") o.chunk = std::stoull(next());
        else if (a == "--problems") o.problems = std::stoull(next());
        else if (a == "--out") o.out = next();
        else if (a == "--set") {
            std::string kv = next();
            auto eq = kv.find('=');
            if (eq == std::string::npos) throw std::runtime_error("--set expects KEY=VALUE, got " + kv);
            o.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else throw std::runtime_error("unknown argument " + a);
    }
    if (o.chunk == 0 || o.problems == 0) throw std::runtime_error("--chunk and --problems must be >= 1");
    return o;
}

std::string str(const rust::String &s) { return std::string(s.data(), s.size()); }

}  // namespace

int main(int argc, char **argv) {
    try {
        Options opt = parse(argc, argv);
        // The configuration: a preset plus overrides, with the step count and seed of the run.
        rust::Box<icl::Config> cfg = icl::config_preset(opt.preset);
        for (auto &kv : opt.sets) cfg->set(kv.first, kv.second);
        cfg->set("train.steps", std::to_string(opt.steps));
        if (opt.has_seed) cfg->set("train.seed", std::to_string(opt.seed));
        cfg->validate();
        const unsigned long long seed = std::stoull(str(cfg->get("train.seed")));

        rust::Box<icl::Trainer> trainer = icl::trainer_new(*cfg, opt.engine);
        rust::Box<icl::TaskSampler> stream = icl::task_sampler(*cfg);
        const icl::Dims dm = trainer->dims();
        std::printf("# engine %s, d %zu, n_out %zu, heads %zu, %zu parameters, L %zu\n",
                    str(trainer->engine()).c_str(), dm.d, dm.n_out, dm.heads, dm.n_params, dm.train_len);

        // The simulator loop: train a chunk, then score the current model on fresh problems.
        double running = 0.0;
        unsigned long long tick = 0;
        while (trainer->step_count() < opt.steps) {
            unsigned long long k = opt.steps - trainer->step_count();
            if (k > opt.chunk) k = opt.chunk;
            double train_loss = trainer->train(k);
            rust::Box<icl::Model> model = trainer->model();
            icl::Batch problems = stream->sample(seed, true, tick, opt.problems, dm.train_len);
            rust::Vec<double> pred = model->predict_batch(problems);
            double se = 0.0;
            for (size_t i = 0; i < pred.size(); i++) se += (pred[i] - problems.y[i]) * (pred[i] - problems.y[i]);
            double mse = se / (double)pred.size();
            tick++;
            running += (mse - running) / (double)tick;
            std::printf("tick %llu %.17g %.17g %.17g\n", (unsigned long long)trainer->step_count(), train_loss, mse,
                        running);
        }

        // The training log: the rows of `icl train`'s metrics.csv.
        for (const icl::LogRow &r : trainer->log()) {
            std::printf("log %llu %.17g", (unsigned long long)r.step, r.loss);
            for (double w : r.omega) std::printf(" %.17g", w);
            for (double m : r.mu) std::printf(" %.17g", m);
            std::printf("\n");
        }
        icl::Circuits c = trainer->circuits();
        for (size_t h = 0; h < c.omega.size(); h++)
            std::printf("head %zu %.17g %.17g\n", h, c.omega[h], c.mu[h * dm.n_out]);
        rust::Box<icl::Model> model = trainer->model();
        icl::Risk r = model->risk(dm.train_len, 2000, seed);
        std::printf("risk %zu %.17g %.17g\n", dm.train_len, r.risk, r.std_error);
        if (!opt.out.empty()) trainer->save(opt.out);
        return 0;
    } catch (const std::exception &e) {
        // rust::Error carries the library's message.
        std::fprintf(stderr, "simulator: %s\n", e.what());
        return 1;
    }
}
