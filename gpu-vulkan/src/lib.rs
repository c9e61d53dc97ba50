//! icl-vulkan: placeholder until its issue lands.
