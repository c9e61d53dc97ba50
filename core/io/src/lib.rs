//! Run-folder I/O (filled in below).
