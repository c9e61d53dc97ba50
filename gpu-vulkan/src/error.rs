//! Typed errors of the Vulkan engine.
use ash::vk;
use std::fmt;

/// What a user without a Vulkan device should do.
pub const INSTALL_HINT: &str = "install mesa-vulkan-drivers (lavapipe) or a GPU driver";

/// What went wrong while setting up or running the Vulkan engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VkError {
    /// The Vulkan loader (libvulkan) could not be opened.
    Loader(String),
    /// The loader opened, but it lists no usable device (none at all, none with a compute queue,
    /// or none of the kinds asked for).
    NoDevice(String),
    /// A Vulkan call failed.
    Call {
        call: &'static str,
        result: vk::Result,
    },
    /// The device or the engine cannot run this model or batch (sizes beyond its limits).
    Unsupported(String),
    /// Validation was required but the Khronos validation layer is not installed.
    NoValidationLayer,
}

impl fmt::Display for VkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VkError::Loader(d) => write!(
                f,
                "no Vulkan device found: {INSTALL_HINT}, and libvulkan1 (the Vulkan loader could not be loaded: {d})"
            ),
            VkError::NoDevice(d) => write!(f, "no Vulkan device found: {INSTALL_HINT} ({d})"),
            VkError::Call { call, result } => write!(f, "Vulkan call {call} failed: {result:?}"),
            VkError::Unsupported(m) => write!(f, "the Vulkan engine cannot run this: {m}"),
            VkError::NoValidationLayer => write!(
                f,
                "Vulkan validation was required but VK_LAYER_KHRONOS_validation is not installed: install vulkan-validationlayers"
            ),
        }
    }
}

impl std::error::Error for VkError {}

impl From<VkError> for icl_core::Error {
    fn from(e: VkError) -> Self {
        match e {
            VkError::Call { .. } => icl_core::Error::Numerical(format!("vulkan: {e}")),
            _ => icl_core::Error::Unsupported(format!("vulkan: {e}")),
        }
    }
}

/// `Err(VkError::Call)` for a failed call.
pub(crate) fn call<T>(name: &'static str, r: Result<T, vk::Result>) -> Result<T, VkError> {
    r.map_err(|result| VkError::Call { call: name, result })
}
