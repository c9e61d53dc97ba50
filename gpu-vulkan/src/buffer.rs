//! Buffers and their memory.
//!
//! A [`GpuArray`] is a storage buffer the shaders read and write that the host also fills or
//! reads. Where device-local memory is host-visible and the policy ([`HostMap`]) allows it
//! (lavapipe, integrated GPUs; on a discrete GPU only host-cached memory, since its BAR is read
//! uncached across the bus) the host maps it directly; otherwise it gets a host-visible staging
//! buffer (host-cached where there is such memory) and the command buffer copies through it, so
//! shaders always read device-local memory.
use crate::context::Context;
use crate::error::{call, VkError};
use ash::vk;
use std::ptr::NonNull;

/// A mapped host pointer (the engine serialises all access, so it may move between threads).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mapped(NonNull<u8>);
// SAFETY: the pointer is only dereferenced by the engine that owns the buffer, through &mut self.
unsafe impl Send for Mapped {}

/// One buffer with its own memory allocation.
#[derive(Debug)]
pub(crate) struct Buffer {
    pub buf: vk::Buffer,
    mem: vk::DeviceMemory,
    pub size: u64,
    ptr: Option<Mapped>,
}

fn find_type(ctx: &Context, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
    (0..ctx.mem.memory_type_count).find(|&i| {
        bits & (1 << i) != 0
            && ctx.mem.memory_types[i as usize]
                .property_flags
                .contains(want)
    })
}

impl Buffer {
    /// A buffer of `size` bytes in memory with the `want` properties, or `Ok(None)` if the
    /// device has no such memory (or it is exhausted).
    pub fn try_new(
        ctx: &Context,
        size: u64,
        usage: vk::BufferUsageFlags,
        want: vk::MemoryPropertyFlags,
    ) -> Result<Option<Buffer>, VkError> {
        let d = &ctx.device;
        let size = size.max(16);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create info; every path below destroys what it created on failure.
        unsafe {
            let buf = call("vkCreateBuffer", d.create_buffer(&info, None))?;
            let req = d.get_buffer_memory_requirements(buf);
            let Some(ty) = find_type(ctx, req.memory_type_bits, want) else {
                d.destroy_buffer(buf, None);
                return Ok(None);
            };
            let ai = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ty);
            let mem = match d.allocate_memory(&ai, None) {
                Ok(m) => m,
                Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)
                | Err(vk::Result::ERROR_OUT_OF_HOST_MEMORY) => {
                    d.destroy_buffer(buf, None);
                    return Ok(None);
                }
                Err(r) => {
                    d.destroy_buffer(buf, None);
                    return Err(VkError::Call {
                        call: "vkAllocateMemory",
                        result: r,
                    });
                }
            };
            if let Err(r) = d.bind_buffer_memory(buf, mem, 0) {
                d.free_memory(mem, None);
                d.destroy_buffer(buf, None);
                return Err(VkError::Call {
                    call: "vkBindBufferMemory",
                    result: r,
                });
            }
            let mut ptr = None;
            if want.contains(vk::MemoryPropertyFlags::HOST_VISIBLE) {
                match d.map_memory(mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) {
                    Ok(p) => ptr = NonNull::new(p as *mut u8).map(Mapped),
                    Err(r) => {
                        d.free_memory(mem, None);
                        d.destroy_buffer(buf, None);
                        return Err(VkError::Call {
                            call: "vkMapMemory",
                            result: r,
                        });
                    }
                }
            }
            Ok(Some(Buffer {
                buf,
                mem,
                size,
                ptr,
            }))
        }
    }

    /// Like [`Buffer::try_new`], but missing memory is an error.
    pub fn new(
        ctx: &Context,
        size: u64,
        usage: vk::BufferUsageFlags,
        want: vk::MemoryPropertyFlags,
    ) -> Result<Buffer, VkError> {
        Buffer::try_new(ctx, size, usage, want)?.ok_or_else(|| {
            VkError::Unsupported(format!(
                "no memory of type {want:?} for a buffer of {size} bytes"
            ))
        })
    }

    /// Copy `data` to the start of the mapped buffer.
    pub fn write<T: Copy>(&mut self, data: &[T]) {
        self.write_at(0, data);
    }

    /// Copy `data` to the mapped buffer, from element `at` (of `T`s) on.
    pub fn write_at<T: Copy>(&mut self, at: usize, data: &[T]) {
        let bytes = std::mem::size_of_val(data);
        let offset = at * std::mem::size_of::<T>();
        assert!(
            (offset + bytes) as u64 <= self.size,
            "write of {bytes} bytes at {offset} into a buffer of {}",
            self.size
        );
        let p = self.ptr.expect("write to a host-visible buffer");
        // SAFETY: the mapping covers `size` bytes, of which offset..offset+bytes (checked);
        // host-coherent memory, no GPU work in flight.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr() as *const u8,
                p.0.as_ptr().add(offset),
                bytes,
            )
        }
    }

    /// Copy the start of the mapped buffer into `out`.
    pub fn read(&self, out: &mut [f32]) {
        let bytes = std::mem::size_of_val(out);
        assert!(
            bytes as u64 <= self.size,
            "read of {bytes} bytes from a buffer of {}",
            self.size
        );
        let p = self.ptr.expect("read from a host-visible buffer");
        // SAFETY: as in `write`; the data was made host-visible by a barrier before the fence.
        unsafe { std::ptr::copy_nonoverlapping(p.0.as_ptr(), out.as_mut_ptr() as *mut u8, bytes) }
    }

    /// Free the buffer and its memory (the device must be idle with respect to it).
    pub unsafe fn destroy(&mut self, d: &ash::Device) {
        // SAFETY: caller guarantees no pending use.
        unsafe {
            if self.ptr.take().is_some() {
                d.unmap_memory(self.mem);
            }
            d.destroy_buffer(self.buf, None);
            d.free_memory(self.mem, None);
        }
        self.buf = vk::Buffer::null();
        self.mem = vk::DeviceMemory::null();
    }
}

/// A device-local storage buffer with host access (direct or through staging).
#[derive(Debug)]
pub(crate) struct GpuArray {
    pub dev: Buffer,
    stage: Option<Buffer>,
}

/// Which device-local memory the host may map directly ([`crate::Options::map_device_memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostMap {
    /// Any host-visible device-local memory.
    Any,
    /// Only host-cached device-local memory (a discrete GPU's BAR is not).
    Cached,
    /// None: always stage.
    Never,
}

impl HostMap {
    /// The policy `setting` asks for on a device of `kind`.
    pub fn of(setting: Option<bool>, kind: crate::DeviceKind) -> HostMap {
        match setting {
            Some(true) => HostMap::Any,
            Some(false) => HostMap::Never,
            None if kind == crate::DeviceKind::Discrete => HostMap::Cached,
            None => HostMap::Any,
        }
    }
}

impl GpuArray {
    pub fn new(ctx: &Context, size: u64, map: HostMap) -> Result<GpuArray, VkError> {
        use vk::BufferUsageFlags as U;
        use vk::MemoryPropertyFlags as M;
        let usage = U::STORAGE_BUFFER | U::TRANSFER_SRC | U::TRANSFER_DST;
        let direct = M::DEVICE_LOCAL | M::HOST_VISIBLE | M::HOST_COHERENT;
        let tries: &[M] = match map {
            HostMap::Any => &[direct | M::HOST_CACHED, direct],
            HostMap::Cached => &[direct | M::HOST_CACHED],
            HostMap::Never => &[],
        };
        for &want in tries {
            if let Some(b) = Buffer::try_new(ctx, size, usage, want)? {
                return Ok(GpuArray {
                    dev: b,
                    stage: None,
                });
            }
        }
        let dev = Buffer::new(ctx, size, usage, M::DEVICE_LOCAL)?;
        let stage = match Buffer::try_new(
            ctx,
            size,
            U::TRANSFER_SRC | U::TRANSFER_DST,
            M::HOST_VISIBLE | M::HOST_COHERENT | M::HOST_CACHED,
        )? {
            Some(s) => s,
            None => Buffer::new(
                ctx,
                size,
                U::TRANSFER_SRC | U::TRANSFER_DST,
                M::HOST_VISIBLE | M::HOST_COHERENT,
            )?,
        };
        Ok(GpuArray {
            dev,
            stage: Some(stage),
        })
    }

    /// Capacity in bytes.
    pub fn size(&self) -> u64 {
        self.dev.size
    }

    /// The buffer the host writes to and reads from.
    pub fn host(&mut self) -> &mut Buffer {
        match &mut self.stage {
            Some(s) => s,
            None => &mut self.dev,
        }
    }

    /// Record the copy of the first `bytes` host-written bytes to the device (no-op when mapped directly).
    pub fn record_upload(&self, d: &ash::Device, cmd: vk::CommandBuffer, bytes: u64) {
        if let (Some(s), true) = (&self.stage, bytes > 0) {
            // SAFETY: both buffers hold at least `bytes`; cmd is recording.
            unsafe {
                d.cmd_copy_buffer(
                    cmd,
                    s.buf,
                    self.dev.buf,
                    &[vk::BufferCopy {
                        src_offset: 0,
                        dst_offset: 0,
                        size: bytes,
                    }],
                )
            }
        }
    }

    /// Record the copy of the first `bytes` device bytes to the host side (no-op when mapped directly).
    pub fn record_download(&self, d: &ash::Device, cmd: vk::CommandBuffer, bytes: u64) {
        if let (Some(s), true) = (&self.stage, bytes > 0) {
            // SAFETY: as above.
            unsafe {
                d.cmd_copy_buffer(
                    cmd,
                    self.dev.buf,
                    s.buf,
                    &[vk::BufferCopy {
                        src_offset: 0,
                        dst_offset: 0,
                        size: bytes,
                    }],
                )
            }
        }
    }

    pub unsafe fn destroy(&mut self, d: &ash::Device) {
        // SAFETY: caller guarantees no pending use.
        unsafe {
            self.dev.destroy(d);
            if let Some(s) = &mut self.stage {
                s.destroy(d);
            }
        }
    }
}
