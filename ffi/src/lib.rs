//! icl-ffi: placeholder until its issue lands.
