//! Throughput of the Vulkan engine (used by `icl bench --engine vulkan`).
