// icl/progress.h -- the progress receivers of icl::repro_with_progress and
// icl::sweep_run_with_progress (icl/bridge.h includes this header; C++ code includes icl.hpp).
//
// Derive from one, override its method, and pass an object to the call; the call holds it by
// reference until it returns. Its method is called one call at a time, from icl's threads (the
// calling thread or another, several runs training at once when "jobs" > 1), so it must not touch
// state that other threads use without a lock. It must not call icl::repro_with_progress,
// icl::repro, icl::sweep_run or icl::sweep_run_with_progress for the same folder.
#pragma once
#include "rust/cxx.h"

#include <cstddef>
#include <cstdint>

namespace icl {

// Receives the progress of icl::repro_with_progress, as icl_repro_progress_fn in icl.h says:
// event is "start" when a run's training starts (or resumes), "done" when it ends (trained now)
// and "skip" for a run that was complete already, as each happens; name is the run's folder under
// OUT_DIR/runs/ and index its place among the count runs the selected claims train. The claims
// that need a computation without training (the temperature paper's experiments) then report
// theirs the same way, "start" and then "done" or "skip", with index and count counted among
// those computations. name and event are valid during the call only.
//
// An exception thrown by on_event does not stop the reproduction (it cannot be stopped): no
// later event is reported, and when every run is done icl::repro_with_progress throws
// rust::Error with the message "the progress receiver threw: " and the exception's what(). The runs and report.json are written as without
// the exception.
class ReproProgress {
public:
    virtual ~ReproProgress() = default;
    virtual void on_event(rust::Str name, std::size_t index, std::size_t count,
                          rust::Str event) = 0;
};

// Receives the progress of icl::sweep_run_with_progress, as icl_sweep_progress_fn in icl.h
// says: run index of the manifest (the "index" of icl::sweep_plan's runs) has done step of its
// total optimiser steps, loss the loss of its last step; for each run at its first step (the
// first after the checkpoint when it resumes), at its last, and in between at most about ten
// times a second.
//
// Return true to go on, false to interrupt the sweep: the runs training then are checkpointed
// and stop, no other run starts, and icl::sweep_run_with_progress returns the results with
// those runs' "status" "interrupted" (plus "step", where each stopped) and the others'
// "not_started"; calling again resumes them, to the same bytes as an uninterrupted run. An
// exception thrown by on_step interrupts the sweep the same way (no later step is reported),
// and then icl::sweep_run_with_progress throws rust::Error with the message "the progress
// receiver threw: " and the exception's what().
class SweepProgress {
public:
    virtual ~SweepProgress() = default;
    virtual bool on_step(std::size_t index, std::uint64_t step, std::uint64_t total,
                         double loss) = 0;
};

} // namespace icl
