// The run layer from C++: icl::eval_run, icl::eval_plot and icl::repro are `icl eval DIR --json`,
// `icl eval --plot` and `icl repro PAPER --json`. Usage: run_layer RUN_DIR OUT_DIR. Writes
// OUT_DIR/eval.json, OUT_DIR/risk.svg and OUT_DIR/repro/ (report.json returned as
// OUT_DIR/repro.json); built and run by tests/tests/ffi_install.rs, which compares them with
// the CLI's. Prints one "ok ..." line per check and exits non-zero if any check fails.
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
    if (argc != 3) {
        std::fprintf(stderr, "usage: run_layer RUN_DIR OUT_DIR\n");
        return 2;
    }
    const std::string run = argv[1], out = argv[2];
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
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
