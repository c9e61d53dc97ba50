//! Instance, device selection, compute queue and the validation-message collector.
//!
//! Devices are ranked discrete GPU, integrated GPU, virtual GPU, CPU implementation (lavapipe),
//! other; the first with a compute queue wins unless [`Options::device_index`] picks one.
use crate::error::{call, VkError};
use ash::vk;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Kinds of Vulkan device, in the engine's order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    Discrete,
    Integrated,
    Virtual,
    Cpu,
    Other,
}

impl DeviceKind {
    /// Every kind, most preferred first.
    pub const ALL: [DeviceKind; 5] = [
        DeviceKind::Discrete,
        DeviceKind::Integrated,
        DeviceKind::Virtual,
        DeviceKind::Cpu,
        DeviceKind::Other,
    ];

    fn of(t: vk::PhysicalDeviceType) -> DeviceKind {
        match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceKind::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceKind::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceKind::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceKind::Cpu,
            _ => DeviceKind::Other,
        }
    }

    /// Lower case name (`discrete`, `integrated`, `virtual`, `cpu`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Discrete => "discrete",
            DeviceKind::Integrated => "integrated",
            DeviceKind::Virtual => "virtual",
            DeviceKind::Cpu => "cpu",
            DeviceKind::Other => "other",
        }
    }
}

/// Whether to run under the Khronos validation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    Off,
    /// On when `VK_LAYER_KHRONOS_validation` is installed.
    IfAvailable,
    /// On, or [`VkError::NoValidationLayer`].
    Required,
}

/// How to set up the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub validation: Validation,
    /// Kinds of device allowed, most preferred first.
    pub kinds: Vec<DeviceKind>,
    /// Use this device (index in the loader's enumeration) instead of ranking.
    pub device_index: Option<usize>,
    /// Open this loader library instead of the system's libvulkan.
    pub loader_path: Option<std::path::PathBuf>,
    /// Store batch tokens as IEEE half precision (compute stays f32).
    pub f16_batch: bool,
    /// Largest token upload per submission in bytes (the device's binding limit may be lower);
    /// larger batches run in chunks of whole sequences.
    pub max_chunk_bytes: u64,
    /// Invocations per workgroup, 16 or 64; `None` picks 16 on CPU implementations (lavapipe
    /// runs all invocations of a workgroup on one core, idle or not) and 64 on GPUs.
    pub workgroup_size: Option<u32>,
    /// Whether the host may map device-local memory directly instead of copying through a
    /// staging buffer. `None`: where that memory is host-cached (CPU implementations, most
    /// integrated GPUs) or the device is not discrete; a discrete GPU's device memory seen
    /// through its BAR is read uncached across the bus, so there results come back through
    /// host-cached staging memory. `Some(false)` always stages (`ICL_VULKAN_STAGING=1`; the
    /// tests run the staged path on lavapipe so), `Some(true)` maps wherever the device allows.
    pub map_device_memory: Option<bool>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            validation: Validation::Off,
            kinds: DeviceKind::ALL.to_vec(),
            device_index: None,
            loader_path: None,
            f16_batch: false,
            max_chunk_bytes: 64 << 20,
            workgroup_size: None,
            map_device_memory: None,
        }
    }
}

impl Options {
    /// Defaults changed by environment variables: `ICL_VULKAN_VALIDATION=1` (required) or `auto`
    /// (when installed), `ICL_VULKAN_DEVICE=<index>`, `ICL_VULKAN_F16=1`, `ICL_VULKAN_STAGING=1`.
    pub fn from_env() -> Self {
        let mut o = Options::default();
        match std::env::var("ICL_VULKAN_VALIDATION").as_deref() {
            Ok("1") | Ok("true") => o.validation = Validation::Required,
            Ok("auto") => o.validation = Validation::IfAvailable,
            _ => {}
        }
        if let Ok(Ok(i)) = std::env::var("ICL_VULKAN_DEVICE").map(|v| v.parse::<usize>()) {
            o.device_index = Some(i);
        }
        if matches!(
            std::env::var("ICL_VULKAN_F16").as_deref(),
            Ok("1") | Ok("true")
        ) {
            o.f16_batch = true;
        }
        if matches!(
            std::env::var("ICL_VULKAN_STAGING").as_deref(),
            Ok("1") | Ok("true")
        ) {
            o.map_device_memory = Some(false);
        }
        o
    }
}

/// What the debug-utils messenger reported.
#[derive(Debug, Default)]
pub(crate) struct Messages {
    pub errors: Mutex<Vec<String>>,
    pub warnings: Mutex<Vec<String>>,
}

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    if data.is_null() || user.is_null() {
        return vk::FALSE;
    }
    // SAFETY: `user` is the `Arc<Messages>` pointer the context keeps alive for the messenger's
    // lifetime; `data` is valid for the duration of the callback (Vulkan spec).
    let (msgs, data) = unsafe { (&*(user as *const Messages), &*data) };
    let text = unsafe { data.message_as_c_str() }
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let list = if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        &msgs.errors
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
        &msgs.warnings
    } else {
        return vk::FALSE;
    };
    if let Ok(mut l) = list.lock() {
        l.push(text);
    }
    vk::FALSE
}

/// The chosen device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub kind: DeviceKind,
    /// Index in the loader's enumeration.
    pub index: usize,
    pub api_version: (u32, u32, u32),
    pub max_storage_buffer_range: u64,
    pub max_shared_memory: u32,
    pub max_workgroup_count_x: u32,
    /// Whether the validation layer is on.
    pub validation: bool,
    /// Whether shaders may use f64 (`shaderFloat64`, enabled when the device has it): the law-2
    /// sampler on the device needs it.
    pub float64: bool,
}

/// A Vulkan instance and logical device with one compute queue, shared by every engine of the
/// process that asks for the same device ([`Context::shared`]); submissions to the queue take
/// [`Context::submit`]'s lock.
pub(crate) struct Context {
    _entry: ash::Entry,
    pub instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub messages: Arc<Messages>,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub family: u32,
    pub mem: vk::PhysicalDeviceMemoryProperties,
    pub info: DeviceInfo,
    /// Host access to the queue (submissions, waiting for it) is externally synchronised.
    queue_lock: Mutex<()>,
    /// The device was lost: [`Context::shared`] opens a fresh one for later engines.
    lost: std::sync::atomic::AtomicBool,
}

/// The part of [`Options`] that picks the instance and device (the rest is per engine).
#[derive(PartialEq)]
struct ContextKey {
    validation: Validation,
    kinds: Vec<DeviceKind>,
    device_index: Option<usize>,
    loader_path: Option<std::path::PathBuf>,
}

impl Context {
    /// The process's context for the device `opts` selects, made on first use and kept open
    /// until the process ends. Every engine used to open and close an instance and device of its
    /// own: NVIDIA's driver does not survive that many times in one process (on an H200, driver
    /// 580.159, vkCreateInstance failed with ERROR_INCOMPATIBLE_DRIVER after a few dozen
    /// engines, one per conformance case, and a process opening engines on four threads crashed);
    /// each device is also set up once rather than per engine.
    pub fn shared(opts: &Options) -> Result<Arc<Context>, VkError> {
        static OPEN: Mutex<Vec<(ContextKey, Arc<Context>)>> = Mutex::new(Vec::new());
        let key = ContextKey {
            validation: opts.validation,
            kinds: opts.kinds.clone(),
            device_index: opts.device_index,
            loader_path: opts.loader_path.clone(),
        };
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        // a lost device stays with the engines that hold it; later ones get a fresh one
        open.retain(|(_, c)| !c.is_lost());
        if let Some((_, c)) = open.iter().find(|(k, _)| *k == key) {
            return Ok(c.clone());
        }
        let c = Arc::new(Context::new(opts)?);
        open.push((key, c.clone()));
        Ok(c)
    }

    /// Whether a call reported the device lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Note `r`: a lost device is not handed to later engines.
    pub fn note<T>(&self, r: Result<T, VkError>) -> Result<T, VkError> {
        if let Err(VkError::Call {
            result: vk::Result::ERROR_DEVICE_LOST,
            ..
        }) = &r
        {
            self.lost.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }

    /// Submit `cmds` to the queue, signalling `fence`.
    ///
    /// # Safety
    /// As `vkQueueSubmit`: the command buffers are recorded and not pending, the fence
    /// unsignalled.
    pub unsafe fn submit(
        &self,
        cmds: &[vk::CommandBuffer],
        fence: vk::Fence,
    ) -> Result<(), VkError> {
        let _q = self.queue_lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the caller's promise; the lock serialises host access to the queue.
        self.note(call("vkQueueSubmit", unsafe {
            self.device.queue_submit(
                self.queue,
                &[vk::SubmitInfo::default().command_buffers(cmds)],
                fence,
            )
        }))
    }

    /// Wait until the queue (every engine's work on this device) is idle.
    pub fn wait_idle(&self) {
        let _q = self.queue_lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the lock serialises host access to the queue.
        let _ = unsafe { self.device.queue_wait_idle(self.queue) };
    }

    fn new(opts: &Options) -> Result<Context, VkError> {
        // SAFETY: loading libvulkan runs its initialisers; this is the documented way to use ash
        // with the `loaded` feature.
        let entry = unsafe {
            match &opts.loader_path {
                Some(p) => ash::Entry::load_from(p),
                None => ash::Entry::load(),
            }
        }
        .map_err(|e| VkError::Loader(e.to_string()))?;

        // SAFETY: plain queries on a loaded entry.
        let layers = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
        let has_layer = layers
            .iter()
            .any(|l| l.layer_name_as_c_str().is_ok_and(|n| n == VALIDATION_LAYER));
        let exts =
            unsafe { entry.enumerate_instance_extension_properties(None) }.unwrap_or_default();
        let has_debug = exts.iter().any(|x| {
            x.extension_name_as_c_str()
                .is_ok_and(|n| n == ash::ext::debug_utils::NAME)
        });
        let validation = match opts.validation {
            Validation::Off => false,
            Validation::IfAvailable => has_layer && has_debug,
            Validation::Required if has_layer && has_debug => true,
            Validation::Required => return Err(VkError::NoValidationLayer),
        };

        let app_name = CString::new("icl").unwrap_or_default();
        let app = vk::ApplicationInfo::default()
            .application_name(&app_name)
            .api_version(vk::API_VERSION_1_1);
        let layer_ptrs = if validation {
            vec![VALIDATION_LAYER.as_ptr()]
        } else {
            vec![]
        };
        let ext_ptrs = if validation {
            vec![ash::ext::debug_utils::NAME.as_ptr()]
        } else {
            vec![]
        };
        let messages = Arc::new(Messages::default());
        let mut dbg_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                    | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(on_message))
            .user_data(Arc::as_ptr(&messages) as *mut c_void);
        let mut ici = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_ptrs)
            .enabled_extension_names(&ext_ptrs);
        if validation {
            // Also report problems in vkCreateInstance/vkDestroyInstance themselves.
            ici = ici.push_next(&mut dbg_info);
        }
        // SAFETY: every pointer in `ici` outlives the call.
        let instance = unsafe { entry.create_instance(&ici, None) }.map_err(|r| match r {
            vk::Result::ERROR_INCOMPATIBLE_DRIVER | vk::Result::ERROR_INITIALIZATION_FAILED => {
                VkError::NoDevice(format!("vkCreateInstance: {r:?}"))
            }
            r => VkError::Call {
                call: "vkCreateInstance",
                result: r,
            },
        })?;
        let mut guard = InstanceGuard {
            instance: Some(instance),
            debug: None,
        };

        if validation {
            let du = ash::ext::debug_utils::Instance::new(&entry, guard.instance());
            let info = vk::DebugUtilsMessengerCreateInfoEXT {
                p_next: std::ptr::null(),
                ..dbg_info
            };
            // SAFETY: `messages` outlives the messenger (both owned by the context, messenger destroyed first).
            let m = call("vkCreateDebugUtilsMessengerEXT", unsafe {
                du.create_debug_utils_messenger(&info, None)
            })?;
            guard.debug = Some((du, m));
        }

        let (pdev, family, info) = pick_device(guard.instance(), opts, validation)?;
        let prio = [1.0f32];
        let qci = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&prio)];
        let features = vk::PhysicalDeviceFeatures {
            shader_float64: info.float64 as vk::Bool32,
            ..Default::default()
        };
        let dci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qci)
            .enabled_features(&features);
        // SAFETY: `pdev` comes from this instance; `dci` outlives the call.
        let device = call("vkCreateDevice", unsafe {
            guard.instance().create_device(pdev, &dci, None)
        })?;
        let queue = unsafe { device.get_device_queue(family, 0) };
        let mem = unsafe { guard.instance().get_physical_device_memory_properties(pdev) };
        let (instance, debug) = guard.release();
        Ok(Context {
            _entry: entry,
            instance,
            debug,
            messages,
            device,
            queue,
            family,
            mem,
            info,
            queue_lock: Mutex::new(()),
            lost: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Validation errors reported so far.
    pub fn validation_errors(&self) -> Vec<String> {
        self.messages
            .errors
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// Validation warnings reported so far.
    pub fn validation_warnings(&self) -> Vec<String> {
        self.messages
            .warnings
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the engine destroyed every object made from the device before dropping us.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            if let Some((du, m)) = self.debug.take() {
                du.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// Destroys the instance (and messenger) if device setup fails part way.
struct InstanceGuard {
    instance: Option<ash::Instance>,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
}

impl InstanceGuard {
    fn instance(&self) -> &ash::Instance {
        self.instance
            .as_ref()
            .expect("instance present until released")
    }
    fn release(
        mut self,
    ) -> (
        ash::Instance,
        Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    ) {
        (
            self.instance
                .take()
                .expect("instance present until released"),
            self.debug.take(),
        )
    }
}

impl Drop for InstanceGuard {
    fn drop(&mut self) {
        // SAFETY: nothing else was created from the instance yet.
        unsafe {
            if let (Some((du, m)), Some(_)) = (self.debug.take(), self.instance.as_ref()) {
                du.destroy_debug_utils_messenger(m, None);
            }
            if let Some(i) = self.instance.take() {
                i.destroy_instance(None);
            }
        }
    }
}

fn pick_device(
    instance: &ash::Instance,
    opts: &Options,
    validation: bool,
) -> Result<(vk::PhysicalDevice, u32, DeviceInfo), VkError> {
    // SAFETY: plain queries on a live instance.
    let pdevs = unsafe { instance.enumerate_physical_devices() }
        .map_err(|r| VkError::NoDevice(format!("vkEnumeratePhysicalDevices: {r:?}")))?;
    if pdevs.is_empty() {
        return Err(VkError::NoDevice(
            "the Vulkan loader lists no device".into(),
        ));
    }
    let mut cands = Vec::new();
    for (index, &pd) in pdevs.iter().enumerate() {
        let props = unsafe { instance.get_physical_device_properties(pd) };
        let fams = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        let Some(family) = fams
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0)
        else {
            continue;
        };
        let kind = DeviceKind::of(props.device_type);
        let features = unsafe { instance.get_physical_device_features(pd) };
        let v = props.api_version;
        let info = DeviceInfo {
            name: props
                .device_name_as_c_str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            kind,
            index,
            api_version: (
                vk::api_version_major(v),
                vk::api_version_minor(v),
                vk::api_version_patch(v),
            ),
            max_storage_buffer_range: props.limits.max_storage_buffer_range as u64,
            max_shared_memory: props.limits.max_compute_shared_memory_size,
            max_workgroup_count_x: props.limits.max_compute_work_group_count[0],
            validation,
            float64: features.shader_float64 == vk::TRUE,
        };
        cands.push((pd, family as u32, info));
    }
    if let Some(i) = opts.device_index {
        return cands.into_iter().find(|c| c.2.index == i).ok_or_else(|| {
            VkError::NoDevice(format!(
                "no device with index {i} and a compute queue ({} devices listed)",
                pdevs.len()
            ))
        });
    }
    let found: Vec<String> = cands
        .iter()
        .map(|c| format!("{} ({})", c.2.name, c.2.kind.name()))
        .collect();
    for kind in &opts.kinds {
        if let Some(pos) = cands.iter().position(|c| c.2.kind == *kind) {
            return Ok(cands.swap_remove(pos));
        }
    }
    let wanted: Vec<&str> = opts.kinds.iter().map(|k| k.name()).collect();
    Err(VkError::NoDevice(format!(
        "no device of kind {} with a compute queue; found: {}",
        wanted.join("/"),
        if found.is_empty() {
            "none with a compute queue".to_string()
        } else {
            found.join(", ")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Engines share a device until it is lost; then later engines get a fresh one (lavapipe
    /// in CI, where a missing device fails; skipped elsewhere without one).
    #[test]
    fn a_lost_device_is_not_shared_again() {
        let opts = Options::default();
        let a = match Context::shared(&opts) {
            Ok(a) => a,
            Err(e) => {
                assert!(std::env::var_os("CI").is_none(), "no Vulkan device: {e}");
                return;
            }
        };
        let b = Context::shared(&opts).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let r: Result<(), VkError> = a.note(Err(VkError::Call {
            call: "vkQueueSubmit",
            result: vk::Result::ERROR_DEVICE_LOST,
        }));
        assert!(r.is_err() && a.is_lost());
        let c = Context::shared(&opts).unwrap();
        assert!(!Arc::ptr_eq(&a, &c) && !c.is_lost());
        assert!(Arc::ptr_eq(&c, &Context::shared(&opts).unwrap()));
    }
}
