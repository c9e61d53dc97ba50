// Progress receivers from C++ (icl/progress.h): icl::repro_with_progress reports each run's
// "start" and "done" (or "skip"), icl::sweep_run_with_progress each run's steps and stops when
// the receiver says so; an exception from a receiver comes back as rust::Error.
// Usage: progress OUT_DIR SWEEP_FILE. Writes OUT_DIR/repro/, the sweep folders OUT_DIR/sweep/
// (interrupted, then resumed) and OUT_DIR/sweep-throw/ (interrupted by an exception); built and
// run by tests/tests/ffi_install.rs, which compares the resumed runs with the CLI's. Prints one
// "ok ..." line per check and exits non-zero if any check fails.
#include <icl.hpp>

#include "expect.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

static void check(bool ok, const char *what, const std::string &detail = "") {
    std::printf("%s %s%s%s\n", ok ? "ok" : "FAIL", what, detail.empty() ? "" : ": ",
                detail.c_str());
    if (!ok) {
        failures++;
    }
}

static size_t count(const std::string &text, const std::string &needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
        n++;
    }
    return n;
}

// Every event of a reproduction, in order.
struct Events : icl::ReproProgress {
    std::vector<std::string> seen;
    size_t count = 0;
    bool bad = false;
    void on_event(rust::Str name, std::size_t index, std::size_t n, rust::Str event) override {
        if (index >= n || (count != 0 && n != count) || name.empty()) {
            bad = true;
        }
        count = n;
        seen.push_back(std::string(event) + " " + std::to_string(index));
    }
};

// Throws at the first event.
struct ThrowingEvents : icl::ReproProgress {
    int calls = 0;
    void on_event(rust::Str, std::size_t, std::size_t, rust::Str) override {
        calls++;
        throw std::runtime_error("boom from on_event");
    }
};

// The last step each run reported; stops the sweep at the first report when `stop`.
struct Steps : icl::SweepProgress {
    bool stop = false;
    std::mutex m;
    std::map<size_t, std::pair<uint64_t, uint64_t>> last; // index -> (step, total)
    bool ordered = true;
    int calls = 0;
    bool on_step(std::size_t index, std::uint64_t step, std::uint64_t total, double loss) override {
        std::lock_guard<std::mutex> g(m);
        calls++;
        auto it = last.find(index);
        if ((it != last.end() && step <= it->second.first) || step == 0 || step > total ||
            !(loss >= 0.0)) {
            ordered = false;
        }
        last[index] = {step, total};
        return !stop;
    }
};

// Throws at the first report.
struct ThrowingSteps : icl::SweepProgress {
    int calls = 0;
    bool on_step(std::size_t, std::uint64_t, std::uint64_t, double) override {
        calls++;
        throw std::runtime_error("stop from on_step");
    }
};

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: progress OUT_DIR SWEEP_FILE\n");
        return 2;
    }
    const std::string out = argv[1], sweep_file = argv[2];

    // repro: each run starts, then is done; again, each is skipped
    rust::Vec<rust::String> rk, rv;
    rk.push_back("only");
    rv.push_back("fig13-final");
    Events first;
    rust::String report = icl::repro_with_progress("zhang2025", out + "/repro", rk, rv, first);
    bool pairs = first.seen.size() == 2 * first.count && first.count > 0 && !first.bad;
    for (size_t i = 0; pairs && i < first.count; i++) {
        pairs = std::find(first.seen.begin(), first.seen.end(), "start " + std::to_string(i)) !=
                    first.seen.end() &&
                std::find(first.seen.begin(), first.seen.end(), "done " + std::to_string(i)) !=
                    first.seen.end();
    }
    check(pairs && report.size() > 0, "repro reports start and done of every run",
          std::to_string(first.count) + " runs");
    Events again;
    icl::repro_with_progress("zhang2025", out + "/repro", rk, rv, again);
    bool skipped = again.seen.size() == first.count && !again.bad;
    for (const auto &e : again.seen) {
        skipped = skipped && e.rfind("skip ", 0) == 0;
    }
    check(skipped, "repro again reports every run skipped");
    ThrowingEvents thrower;
    expect_throw("repro receiver throws", [&] {
        icl::repro_with_progress("zhang2025", out + "/repro", rk, rv, thrower);
    }, "the progress receiver threw: boom from on_event");
    check(thrower.calls == 1, "repro reports nothing after the exception",
          std::to_string(thrower.calls) + " calls");

    // sweep: stop at the first report, then resume to the end
    const std::string sw = out + "/sweep";
    icl::sweep_plan(sweep_file, sw);
    rust::Vec<rust::String> sk, sv;
    sk.push_back("eval_samples");
    sv.push_back("0");
    Steps stopper;
    stopper.stop = true;
    std::string stopped(icl::sweep_run_with_progress(sw, sk, sv, stopper));
    check(stopper.calls == 1 && count(stopped, "\"status\":\"interrupted\"") == 1 &&
              count(stopped, "\"status\":\"not_started\"") == 3,
          "sweep stops when the receiver returns false", stopped);
    Steps all;
    std::string ran(icl::sweep_run_with_progress(sw, sk, sv, all));
    bool finished = all.ordered && all.last.size() == 4;
    for (const auto &kv : all.last) {
        finished = finished && kv.first < 4 && kv.second.first == kv.second.second;
    }
    check(finished && count(ran, "\"status\":\"resumed\"") == 1 &&
              count(ran, "\"status\":\"trained\"") == 3,
          "sweep resumes and reports every run to its last step", ran);

    // sweep: an exception interrupts it and comes back
    const std::string st = out + "/sweep-throw";
    icl::sweep_plan(sweep_file, st);
    ThrowingSteps throws;
    expect_throw("sweep receiver throws", [&] {
        icl::sweep_run_with_progress(st, sk, sv, throws);
    }, "the progress receiver threw: stop from on_step");
    std::string states(icl::sweep_status(st));
    check(throws.calls == 1 && count(states, "\"state\":\"interrupted\"") == 1 &&
              count(states, "\"state\":\"pending\"") == 3,
          "the exception interrupted the sweep", states);
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
