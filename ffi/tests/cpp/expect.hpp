// Shared by the C++ API test programs (exceptions.cpp, run_layer.cpp): a failure counter and a
// check that a call throws rust::Error whose message contains a needle, printing "ok ..." or
// "FAIL ...".
#pragma once
#include <icl.hpp>

#include <cstdio>
#include <string>

static int failures = 0;

template <class F>
static void expect_throw(const char *what, F f, const char *needle) {
    try {
        f();
        std::printf("FAIL %s: no exception\n", what);
        failures++;
    } catch (const rust::Error &e) {
        std::string m = e.what();
        if (m.find(needle) == std::string::npos) {
            std::printf("FAIL %s: message \"%s\" lacks \"%s\"\n", what, m.c_str(), needle);
            failures++;
        } else {
            std::printf("ok %s: %s\n", what, m.c_str());
        }
    }
}
