// The run layer from C++: icl::eval_run, icl::eval_plot, icl::repro, icl::sweep_*,
// icl::run_plot (`icl plot DIR --json`) and icl::train_run are `icl eval DIR --json`, `icl eval --plot`, `icl repro PAPER --json`,
// `icl sweep ... --json` and `icl train` (OUT_DIR/train, its summary.json as OUT_DIR/train.json).
// Usage: run_layer RUN_DIR OUT_DIR SWEEP_FILE. Writes OUT_DIR/eval.json, OUT_DIR/risk.svg,
// OUT_DIR/repro/ (report.json returned as OUT_DIR/repro.json) and the sweep folder
// OUT_DIR/sweep/ (the JSON returned as OUT_DIR/sweep-*.json); built and run by
// tests/tests/ffi_install.rs, which compares them with the CLI's. Prints one "ok ..." line per
// check and exits non-zero if any check fails.
#include <icl.hpp>

#include "expect.hpp"

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

static void pairs(const std::vector<std::pair<const char *, const char *>> &kv,
                  rust::Vec<rust::String> &k, rust::Vec<rust::String> &v) {
    for (const auto &p : kv) {
        k.push_back(p.first);
        v.push_back(p.second);
    }
}

static void write(const std::string &path, const std::string &text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: run_layer RUN_DIR OUT_DIR SWEEP_FILE\n");
        return 2;
    }
    const std::string run = argv[1], out = argv[2], sweep_file = argv[3];
    rust::Vec<rust::String> k, v;
    pairs({{"lengths", "8,16"}, {"samples", "300"}, {"seed", "4"}}, k, v);
    rust::String rows = icl::eval_run(run, k, v);
    write(out + "/eval.json", std::string(rows));
    std::printf("ok eval_run: %zu bytes\n", rows.size());
    icl::eval_plot(rows, out + "/risk.svg");
    std::printf("ok eval_plot\n");

    rust::Vec<rust::String> rk, rv;
    pairs({{"only", "fig13-final"}}, rk, rv);
    rust::String report = icl::repro("zhang2025", out + "/repro", rk, rv);
    write(out + "/repro.json", std::string(report));
    std::printf("ok repro: %zu bytes\n", report.size());

    const std::string sw = out + "/sweep";
    rust::String planned = icl::sweep_plan(sweep_file, sw);
    write(out + "/sweep-plan.json", std::string(planned));
    std::printf("ok sweep_plan: %zu bytes\n", planned.size());
    rust::Vec<rust::String> sk, sv;
    pairs({{"jobs", "2"}, {"eval_samples", "0"}}, sk, sv);
    rust::String ran = icl::sweep_run(sw, sk, sv);
    write(out + "/sweep-run.json", std::string(ran));
    std::printf("ok sweep_run: %zu bytes\n", ran.size());
    rust::String states = icl::sweep_status(sw);
    write(out + "/sweep-status.json", std::string(states));
    std::printf("ok sweep_status: %zu bytes\n", states.size());
    rust::String table = icl::sweep_collect(sw, false);
    write(out + "/sweep-collect.json", std::string(table));
    std::printf("ok sweep_collect: %zu bytes\n", table.size());

    expect_throw("sweep option unknown", [&] {
        rust::Vec<rust::String> a, b;
        pairs({{"jbos", "2"}}, a, b);
        icl::sweep_run(sw, a, b);
    }, "unknown sweep option");
    expect_throw("sweep status of a folder that is not a sweep", [&] {
        icl::sweep_status(out + "/no-such-sweep");
    }, "is not a sweep folder");
    expect_throw("eval of a missing folder", [&] {
        rust::Vec<rust::String> a, b;
        icl::eval_run(out + "/no-such-run", a, b);
    }, "no-such-run");
    expect_throw("eval option unknown", [&] {
        rust::Vec<rust::String> a, b;
        pairs({{"lenghts", "8"}}, a, b);
        icl::eval_run(run, a, b);
    }, "lenghts");
    expect_throw("eval keys and values of different lengths", [&] {
        rust::Vec<rust::String> a, b;
        a.push_back("lengths");
        icl::eval_run(run, a, b);
    }, "1 keys but 0 values");
    expect_throw("plot of text that is not rows", [&] {
        icl::eval_plot("not json", out + "/bad.svg");
    }, "rows_json");
    expect_throw("repro of an unknown paper", [&] {
        rust::Vec<rust::String> a, b;
        icl::repro("vaswani2017", out + "/bad", a, b);
    }, "vaswani2017");
    expect_throw("repro set. with an empty key", [&] {
        rust::Vec<rust::String> a, b;
        pairs({{"only", "fig13-final"}, {"set.", "1"}}, a, b);
        icl::repro("zhang2025", out + "/bad", a, b);
    }, "key is empty");
    auto quick = icl::config_preset("quick");
    rust::Vec<rust::String> tk, tv;
    pairs({{"steps", "60"}, {"seed", "3"}, {"eval_samples", "0"}}, tk, tv);
    rust::String summary = icl::train_run(*quick, out + "/train", tk, tv);
    write(out + "/train.json", std::string(summary));
    std::printf("ok train_run: %zu bytes\n", summary.size());
    rust::String drawn = icl::run_plot(out + "/train");
    if (std::string(drawn).find("\"loss.svg\"") == std::string::npos) {
        std::printf("FAIL run_plot: %s lacks loss.svg\n", std::string(drawn).c_str());
        failures++;
    } else {
        std::printf("ok run_plot: %zu bytes\n", drawn.size());
    }
    expect_throw("plot of a missing folder", [&] {
        icl::run_plot(out + "/no-such-run");
    }, "no-such-run");
    expect_throw("train option unknown", [&] {
        rust::Vec<rust::String> a, b;
        pairs({{"stpes", "60"}}, a, b);
        icl::train_run(*quick, out + "/bad-train", a, b);
    }, "unknown train option");
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
