// Failures of the C++ API throw rust::Error (a std::exception) carrying the library's message,
// and handles are released by RAII. Built and run by tests/tests/ffi_install.rs; prints one
// "ok ..." line per check and exits non-zero if any check fails.
#include <icl.hpp>

#include "expect.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

static rust::Slice<const double> sl(const std::vector<double> &v) { return {v.data(), v.size()}; }

int main() {
    expect_throw("unknown preset", [] { icl::config_preset("no-such-preset"); }, "no-such-preset");
    rust::Box<icl::Config> cfg = icl::config_preset("quick");
    expect_throw("unknown key", [&] { cfg->set("model.nope", "1"); }, "model.nope");
    expect_throw("NaN value", [&] { cfg->set("task.sigma2", "nan"); }, "task.sigma2");
    expect_throw("bad TOML", [] { icl::config_from_toml("[model]\nheads = 0\n"); }, "heads");
    expect_throw("unknown engine", [&] { icl::trainer_new(*cfg, "warp-drive"); }, "warp-drive");
    expect_throw("missing checkpoint", [] { icl::model_load("/nonexistent/model.safetensors"); }, "/nonexistent");
    rust::Box<icl::Model> model = icl::model_new(*cfg);
    std::vector<double> x(5 * 2, 0.5), y(2, 1.0), xq(5, 0.25);
    rust::Vec<double> p = model->predict(1, 2, sl(x), sl(y), sl(xq));
    if (p.size() != 1 || !std::isfinite(p[0])) {
        std::printf("FAIL predict: bad output\n");
        failures++;
    } else {
        std::printf("ok predict: %.6f\n", p[0]);
    }
    std::vector<double> bad = x;
    bad[3] = NAN;
    expect_throw("NaN context", [&] { model->predict(1, 2, sl(bad), sl(y), sl(xq)); }, "not finite");
    expect_throw("wrong size", [&] { model->predict(1, 3, sl(x), sl(y), sl(xq)); }, "needed");
    expect_throw("zero problems", [&] { model->predict(0, 2, sl(x), sl(y), sl(xq)); }, "n >= 1");
    {
        // prompts of k pairs: a one-layer model predicts at the last x, as predict() with the
        // k - 1 pairs before it as the context
        std::vector<double> xs(x), ys(y);
        xs.insert(xs.end(), xq.begin(), xq.end());
        ys.push_back(7.0);  // the last label is not read
        rust::Vec<double> pp = model->predict_prompts(1, 3, sl(xs), sl(ys));
        bool same = pp.size() == 1 && pp[0] == p[0];
        std::printf("%s predict_prompts: as predict\n", same ? "ok" : "FAIL");
        failures += !same;
        // a GPT-2 model predicts at every x position
        rust::Box<icl::Config> g = icl::config_preset("garg-linear-tiny");
        for (auto kv : {std::pair<const char *, const char *>{"task.d", "2"}, {"task.L", "3"},
                        {"model.positions", "4"}, {"model.embd", "8"}, {"model.layers", "1"}})
            g->set(kv.first, kv.second);
        rust::Box<icl::Model> gm = icl::model_new(*g);
        std::vector<double> gx(2 * 4 * 2, 0.3), gy(2 * 4, -0.5);
        rust::Vec<double> gp = gm->predict_prompts(2, 4, sl(gx), sl(gy));
        bool every = gp.size() == 8;
        for (double v : gp) every = every && std::isfinite(v);
        std::printf("%s predict_prompts: GPT-2 at every x\n", every ? "ok" : "FAIL");
        failures += !every;
        expect_throw("prompts of the wrong size", [&] { gm->predict_prompts(2, 3, sl(gx), sl(gy)); },
                     "xs must be [n, k, d]");
    }
    std::vector<double> params = {1.0, 2.0};
    expect_throw("wrong parameter count", [&] { model->set_params(sl(params)); }, "params");
    expect_throw("theory NaN", [] {
        rust::Vec<rust::String> k, v;
        k.push_back("sigma2");
        v.push_back("nan");
        icl::theory_value("eta-star", k, v);
    }, "sigma2");
    expect_throw("theory d = 0", [] {
        rust::Vec<rust::String> k, v;
        k.push_back("d");
        v.push_back("0");
        icl::theory_value("eta-star", k, v);
    }, "--d = 0");
    // a closed form that overflows at its parameters throws, in both forms (never inf or null)
    auto overflow = [](bool json) {
        rust::Vec<rust::String> k, v;
        k.push_back("sigma2");
        v.push_back("1e308");
        k.push_back("d");
        v.push_back("1");
        k.push_back("L");
        v.push_back("3");
        if (json) icl::theory_eval("ols-risk", k, v);
        else icl::theory_value("ols-risk", k, v);
    };
    expect_throw("theory value overflow", [&] { overflow(false); }, "not finite");
    expect_throw("theory JSON overflow", [&] { overflow(true); }, "not finite");
    // a diverging step throws and is undone: the parameters stay those before it
    {
        rust::Box<icl::Config> c = icl::config_preset("quick");
        c->set("train.optimizer", "sgd");
        c->set("train.lr", "1e300");
        rust::Box<icl::Trainer> t = icl::trainer_new(*c, "");
        rust::Vec<double> before = t->params();
        expect_throw("diverging step", [&] { t->train(2); }, "diverged");
        rust::Vec<double> after = t->params();
        bool same = t->step_count() == 0 && before.size() == after.size();
        for (size_t i = 0; same && i < before.size(); i++) same = before[i] == after[i];
        std::printf("%s a diverging step is undone\n", same ? "ok" : "FAIL");
        failures += !same;
    }
    rust::Box<icl::TaskSampler> task = icl::task_sampler(*cfg);
    // sizes in range whose memory is not there: an exception, not an abort
    expect_throw("a batch beyond memory", [&] { task->sample(0, true, 0, 1 << 24, 1 << 24); },
                 "memory");
    expect_throw("a theory quantity beyond the budget", [] {
        rust::Vec<rust::String> k, v;
        k.push_back("n");
        v.push_back("2");
        k.push_back("d");
        v.push_back("4096");
        k.push_back("L");
        v.push_back("10000000");
        icl::theory_value("bayes-risk-mc", k, v);
    }, "too large");
    icl::Batch b = task->sample(1, false, 0, 4, 10);
    b.z[0] = INFINITY;
    rust::Box<icl::Trainer> trainer = icl::trainer_new(*cfg, "");
    expect_throw("infinite batch", [&] { trainer->step_batch(b); }, "not finite");
    expect_throw("losses of 2^40 steps", [&] { trainer->train_losses(1ull << 40); }, "memory");
    if (trainer->step_count() != 0) {
        std::printf("FAIL a failed step counted\n");
        failures++;
    }
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
