//! icl-simd: placeholder until its issue lands.
