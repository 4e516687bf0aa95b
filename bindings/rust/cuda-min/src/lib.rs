//! The few CUDA driver calls that Cake's Rust tests and examples need: device memory and
//! copies in the device's primary context (the one Cake's handles use). `libcuda.so.1` is opened
//! with `dlopen` at run time, so programs built with this crate start (and say why they skip) on
//! a machine without a driver. Not a general CUDA binding: use one of those in real programs.
use std::ffi::{c_char, c_int, c_void, CStr};

extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;

type CuResult = c_int;
type CuDevicePtr = u64;

/// The driver entry points, resolved once.
pub struct Driver {
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(*mut c_void) -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    memcpy_htod: unsafe extern "C" fn(CuDevicePtr, *const c_void, usize) -> CuResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize) -> CuResult,
    memset_d8: unsafe extern "C" fn(CuDevicePtr, u8, usize) -> CuResult,
    ctx_synchronize: unsafe extern "C" fn() -> CuResult,
    get_error_name: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
}

macro_rules! sym {
    ($lib:expr, $name:literal) => {{
        let p = unsafe { dlsym($lib, concat!($name, "\0").as_ptr().cast()) };
        if p.is_null() {
            return Err(format!("libcuda.so.1 has no {}", $name));
        }
        unsafe { std::mem::transmute::<*mut c_void, _>(p) }
    }};
}

impl Driver {
    /// Open libcuda.so.1, initialise it and make device @p device's primary context current on
    /// this thread. Err with the reason when there is no driver or no such device.
    pub fn open(device: i32) -> Result<Driver, String> {
        let lib = unsafe { dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW) };
        if lib.is_null() {
            return Err("no CUDA driver (libcuda.so.1 cannot be opened)".into());
        }
        let init: unsafe extern "C" fn(u32) -> CuResult = sym!(lib, "cuInit");
        let drv = Driver {
            device_get: sym!(lib, "cuDeviceGet"),
            primary_ctx_retain: sym!(lib, "cuDevicePrimaryCtxRetain"),
            ctx_set_current: sym!(lib, "cuCtxSetCurrent"),
            mem_alloc: sym!(lib, "cuMemAlloc_v2"),
            mem_free: sym!(lib, "cuMemFree_v2"),
            memcpy_htod: sym!(lib, "cuMemcpyHtoD_v2"),
            memcpy_dtoh: sym!(lib, "cuMemcpyDtoH_v2"),
            memset_d8: sym!(lib, "cuMemsetD8_v2"),
            ctx_synchronize: sym!(lib, "cuCtxSynchronize"),
            get_error_name: sym!(lib, "cuGetErrorName"),
        };
        drv.check("cuInit", unsafe { init(0) })?;
        let mut dev: c_int = 0;
        drv.check("cuDeviceGet", unsafe { (drv.device_get)(&mut dev, device) })?;
        let mut ctx = std::ptr::null_mut();
        drv.check("cuDevicePrimaryCtxRetain", unsafe {
            (drv.primary_ctx_retain)(&mut ctx, dev)
        })?;
        drv.check("cuCtxSetCurrent", unsafe { (drv.ctx_set_current)(ctx) })?;
        Ok(drv)
    }

    fn check(&self, what: &str, r: CuResult) -> Result<(), String> {
        if r == 0 {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        unsafe { (self.get_error_name)(r, &mut name) };
        let name = if name.is_null() {
            format!("error {r}")
        } else {
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        };
        Err(format!("{what}: {name}"))
    }

    /// @p bytes of device memory (freed on drop).
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer<'_>, String> {
        let mut ptr: CuDevicePtr = 0;
        self.check("cuMemAlloc", unsafe {
            (self.mem_alloc)(&mut ptr, bytes.max(1))
        })?;
        Ok(DeviceBuffer {
            drv: self,
            ptr,
            bytes,
        })
    }

    /// A device copy of @p data.
    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<DeviceBuffer<'_>, String> {
        let b = self.alloc(std::mem::size_of_val(data))?;
        b.write(data)?;
        Ok(b)
    }

    /// Wait for all work in the current context.
    pub fn synchronize(&self) -> Result<(), String> {
        self.check("cuCtxSynchronize", unsafe { (self.ctx_synchronize)() })
    }
}

/// Device memory from Driver::alloc.
pub struct DeviceBuffer<'a> {
    drv: &'a Driver,
    ptr: CuDevicePtr,
    bytes: usize,
}

impl DeviceBuffer<'_> {
    pub fn ptr(&self) -> *mut c_void {
        self.ptr as *mut c_void
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    pub fn write<T: Copy>(&self, data: &[T]) -> Result<(), String> {
        let n = std::mem::size_of_val(data).min(self.bytes);
        self.drv.check("cuMemcpyHtoD", unsafe {
            (self.drv.memcpy_htod)(self.ptr, data.as_ptr().cast(), n)
        })
    }
    pub fn read<T: Copy + Default>(&self, count: usize) -> Result<Vec<T>, String> {
        let mut out = vec![T::default(); count];
        let n = (count * std::mem::size_of::<T>()).min(self.bytes);
        self.drv.check("cuMemcpyDtoH", unsafe {
            (self.drv.memcpy_dtoh)(out.as_mut_ptr().cast(), self.ptr, n)
        })?;
        Ok(out)
    }
    pub fn fill(&self, byte: u8) -> Result<(), String> {
        self.drv.check("cuMemsetD8", unsafe {
            (self.drv.memset_d8)(self.ptr, byte, self.bytes)
        })
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        unsafe { (self.drv.mem_free)(self.ptr) };
    }
}

/// BF16 <-> f32 (round to nearest even), and a small deterministic random source.
pub mod host {
    pub fn to_bf16(f: f32) -> u16 {
        let b = f.to_bits();
        if f.is_nan() {
            return ((b >> 16) | 0x40) as u16;
        }
        ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
    }
    pub fn from_bf16(v: u16) -> f32 {
        f32::from_bits((v as u32) << 16)
    }
    /// Ordered integer of BF16 bits (neighbours differ by 1, +0 == -0).
    pub fn bf16_ordinal(v: u16) -> i32 {
        if v & 0x8000 != 0 {
            -((v & 0x7FFF) as i32)
        } else {
            v as i32
        }
    }
    /// xorshift64* normal deviates (Box-Muller).
    pub struct Rng(pub u64);
    impl Rng {
        pub fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            ((self.0.wrapping_mul(2685821657736338717) >> 11) as f64) / 9007199254740992.0 + 1e-300
        }
        pub fn normal(&mut self) -> f64 {
            (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
        }
    }
}
