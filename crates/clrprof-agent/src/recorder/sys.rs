//! Thin wrappers over the few system calls the agent needs, each safe to call from any thread.
//! The ones marked *async-signal-safe* may also be called from the sampling signal handler.

/// The kernel id of the calling thread. Async-signal-safe.
#[cfg(target_os = "linux")]
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The kernel id of the calling thread (0 where there is no such notion).
#[cfg(not(target_os = "linux"))]
pub fn gettid() -> u32 {
    0
}

/// `CLOCK_MONOTONIC` in nanoseconds.
#[cfg(unix)]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// A monotonic clock in nanoseconds (since the first call).
#[cfg(not(unix))]
pub fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

#[cfg(unix)]
fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; an invalid clock id only makes the call fail.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time consumed so far by the calling thread. Async-signal-safe.
#[cfg(unix)]
pub fn own_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// CPU time of the calling thread: not available on this platform.
#[cfg(not(unix))]
pub fn own_cpu_ns() -> u64 {
    0
}

/// CPU time consumed so far by thread `tid` of this process, or `None` if it has exited.
///
/// Linux encodes "the CPU clock of thread `tid`" as a clock id: `(~tid << 3) | 6`
/// (`CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED`), readable for any thread of the process.
#[cfg(target_os = "linux")]
pub fn thread_cpu_ns(tid: u32) -> Option<u64> {
    let clock = ((!(tid as libc::clockid_t)) << 3) | 6;
    clock_ns(clock)
}

/// CPU time of a thread: not available on this platform.
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_ns(_tid: u32) -> Option<u64> {
    None
}

/// Sends `signal` to thread `tid` of this process. Returns false if the thread is gone.
#[cfg(target_os = "linux")]
pub fn signal_thread(tid: u32, signal: i32) -> bool {
    // SAFETY: tgkill only sends a signal; a stale tid makes it fail with ESRCH.
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid as libc::c_long,
            signal as libc::c_long,
        ) == 0
    }
}

/// Sends a signal to a thread: not available on this platform.
#[cfg(not(target_os = "linux"))]
pub fn signal_thread(_tid: u32, _signal: i32) -> bool {
    false
}

/// Waits until `*word != expected` or `timeout_ns` passes: a short sleep on this platform.
#[cfg(not(target_os = "linux"))]
pub fn futex_wait(_word: &core::sync::atomic::AtomicU32, _expected: u32, timeout_ns: u64) {
    std::thread::sleep(std::time::Duration::from_nanos(timeout_ns.min(1_000_000)));
}

/// Wakes waiters: nothing to do on this platform.
#[cfg(not(target_os = "linux"))]
pub fn futex_wake(_word: &core::sync::atomic::AtomicU32) {}

/// Waits until `*word != expected` or `timeout_ns` passes (or a spurious wake-up).
#[cfg(target_os = "linux")]
pub fn futex_wait(word: &core::sync::atomic::AtomicU32, expected: u32, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `word` is a live, aligned u32 for the duration of the call; `ts` is valid.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        )
    };
}

/// Wakes every waiter on `word`. Async-signal-safe.
#[cfg(target_os = "linux")]
pub fn futex_wake(word: &core::sync::atomic::AtomicU32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE touches nothing else.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// The address range `[low, high)` of the calling thread's stack, if the C library knows it.
#[cfg(target_os = "linux")]
pub fn current_stack_bounds() -> Option<(usize, usize)> {
    // SAFETY: pthread_attr_t is plain data, initialized by pthread_getattr_np before use and
    // destroyed after; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = core::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && !addr.is_null()).then(|| (addr as usize, addr as usize + size))
    }
}

/// Stack bounds: not available on this platform.
#[cfg(not(target_os = "linux"))]
pub fn current_stack_bounds() -> Option<(usize, usize)> {
    None
}

/// Copies `buf.len()` bytes of this process's memory at `addr` into `buf`, with
/// `process_vm_readv`: an unmapped or unreadable address makes the call fail (EFAULT) instead
/// of faulting. Returns true only if every byte was read. Not async-signal-safe by contract
/// (it is a plain system call, but callers should not rely on that).
#[cfg(target_os = "linux")]
pub fn read_process_memory(addr: usize, buf: &mut [u8]) -> bool {
    if buf.is_empty() {
        return true;
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes `buf`, which we borrow mutably for the call, so the kernel
    // writes only into memory we own. `remote` is never dereferenced by this process: the
    // kernel reads it on our behalf and reports a bad address as an error.
    let n = unsafe { libc::process_vm_readv(own_pid(), &local, 1, &remote, 1, 0) };
    usize::try_from(n) == Ok(buf.len())
}

/// This process's id, read once (the agent's threads never outlive a fork).
#[cfg(target_os = "linux")]
fn own_pid() -> libc::pid_t {
    static PID: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(0);
    match PID.load(core::sync::atomic::Ordering::Relaxed) {
        0 => {
            // SAFETY: getpid has no preconditions.
            let pid = unsafe { libc::getpid() };
            PID.store(pid, core::sync::atomic::Ordering::Relaxed);
            pid
        }
        pid => pid,
    }
}

/// One mapping as the kernel describes it to `PROCMAP_QUERY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueriedMapping {
    pub start: usize,
    pub end: usize,
    pub executable: bool,
    /// Offset in the mapped file.
    pub offset: u64,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
    /// How many bytes of the name buffer hold its name (without the final NUL).
    pub name_len: usize,
}

/// `/proc/self/maps` asked one address at a time with the `PROCMAP_QUERY` ioctl (Linux 6.11
/// and later): one system call where reading the map means formatting and parsing every line.
/// Opened at the first question; once the kernel cannot answer, every question gets `None`
/// (then read the whole map).
#[derive(Debug, Default)]
pub struct MapsQuery(QueryState);

#[derive(Debug, Default)]
enum QueryState {
    #[default]
    Untried,
    Open(std::fs::File),
    Unsupported,
}

impl MapsQuery {
    /// A query that never answers (as on a kernel without `PROCMAP_QUERY`).
    pub fn unsupported() -> MapsQuery {
        MapsQuery(QueryState::Unsupported)
    }

    /// The mapping that holds `addr` (without its name): `Some(None)` if none does, `None`
    /// if the kernel cannot answer.
    pub fn mapping(&mut self, addr: usize) -> Option<Option<QueriedMapping>> {
        let answer = procmap_query(self.file()?, addr, false, &mut [])
            .ok()
            .filter(|m| m.is_none_or(|m| m.start <= addr && addr < m.end));
        self.answered(answer.is_some()).then_some(answer).flatten()
    }

    /// The first executable mapping that holds `addr` or lies above it, with its name (a path,
    /// `[vdso]`, ...) in `name` (its first `name_len` bytes): `Some(None)` if there is none,
    /// `None` if the kernel cannot answer.
    pub fn next_code(&mut self, addr: usize, name: &mut [u8]) -> Option<Option<QueriedMapping>> {
        let answer = procmap_query(self.file()?, addr, true, name);
        self.answered(answer.is_ok()).then(|| answer.ok().flatten())
    }

    fn file(&mut self) -> Option<&std::fs::File> {
        if matches!(self.0, QueryState::Untried) {
            self.0 = std::fs::File::open("/proc/self/maps")
                .map_or(QueryState::Unsupported, QueryState::Open);
        }
        match &self.0 {
            QueryState::Open(file) => Some(file),
            _ => None,
        }
    }

    /// Notes whether the kernel answered; true if it did.
    fn answered(&mut self, yes: bool) -> bool {
        if !yes {
            self.0 = QueryState::Unsupported;
        }
        yes
    }
}

/// `PROCMAP_QUERY` for `addr`: the mapping that holds it, or with `next_code` the first
/// executable one at or above it; its name goes to `name` (none if `name` is empty). `Err`
/// where the kernel cannot answer (and on other systems).
fn procmap_query(
    maps: &std::fs::File,
    addr: usize,
    next_code: bool,
    name: &mut [u8],
) -> Result<Option<QueriedMapping>, ()> {
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (maps, addr, next_code, name);
        Err(())
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        /// `struct procmap_query` of `<linux/fs.h>`.
        #[repr(C)]
        #[derive(Default)]
        struct ProcmapQuery {
            size: u64,
            query_flags: u64,
            query_addr: u64,
            vma_start: u64,
            vma_end: u64,
            vma_flags: u64,
            vma_page_size: u64,
            vma_offset: u64,
            inode: u64,
            dev_major: u32,
            dev_minor: u32,
            vma_name_size: u32,
            build_id_size: u32,
            vma_name_addr: u64,
            build_id_addr: u64,
        }
        const _: () = assert!(core::mem::size_of::<ProcmapQuery>() == 104);
        /// `_IOWR('f', 17, struct procmap_query)`.
        const PROCMAP_QUERY: u64 =
            (3 << 30) | ((core::mem::size_of::<ProcmapQuery>() as u64) << 16) | (0x66 << 8) | 17;
        /// `PROCMAP_QUERY_VMA_EXECUTABLE`: as a query flag, only executable mappings match; in
        /// `vma_flags`, the mapping is executable.
        const VMA_EXECUTABLE: u64 = 4;
        /// `PROCMAP_QUERY_COVERING_OR_NEXT_VMA`.
        const COVERING_OR_NEXT: u64 = 0x10;
        let name_size = u32::try_from(name.len()).unwrap_or(u32::MAX);
        let mut query = ProcmapQuery {
            size: core::mem::size_of::<ProcmapQuery>() as u64,
            query_flags: if next_code {
                COVERING_OR_NEXT | VMA_EXECUTABLE
            } else {
                0
            },
            query_addr: addr as u64,
            vma_name_size: name_size,
            vma_name_addr: if name_size == 0 {
                0
            } else {
                name.as_mut_ptr() as u64
            },
            ..ProcmapQuery::default()
        };
        // SAFETY: `query` is a valid, initialized `struct procmap_query` whose `size` says how
        // large it is; the name buffer, if any, is `name`, borrowed mutably for the call, and the
        // kernel writes at most `vma_name_size` bytes into it; no build id buffer is passed. A file
        // that is not a maps file fails with an error.
        let rc = unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY as _, &raw mut query) };
        if rc != 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                _ => Err(()),
            };
        }
        let (Ok(start), Ok(end)) = (
            usize::try_from(query.vma_start),
            usize::try_from(query.vma_end),
        ) else {
            return Err(());
        };
        // The size the kernel returns counts the final NUL (0: the mapping has no name).
        let name_len = (query.vma_name_size as usize)
            .saturating_sub(1)
            .min(name.len());
        Ok(Some(QueriedMapping {
            start,
            end,
            executable: query.vma_flags & VMA_EXECUTABLE != 0,
            offset: query.vma_offset,
            dev_major: query.dev_major,
            dev_minor: query.dev_minor,
            inode: query.inode,
            name_len,
        }))
    }
}

/// Reading memory safely is not available on this platform.
#[cfg(not(target_os = "linux"))]
pub fn read_process_memory(_addr: usize, _buf: &mut [u8]) -> bool {
    false
}

/// Reserves `bytes` of zeroed, lazily committed memory (pages cost nothing until touched).
/// Returns null on failure. The memory is never returned to the system.
#[cfg(unix)]
pub fn reserve_zeroed(bytes: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping with no fixed address has no preconditions.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        core::ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Reserves `bytes` of zeroed memory (committed at once on this platform); null on failure.
/// The memory is never freed.
#[cfg(not(unix))]
pub fn reserve_zeroed(bytes: usize) -> *mut u8 {
    match core::alloc::Layout::from_size_align(bytes.max(1), 4096) {
        // SAFETY: the layout has a non-zero size.
        Ok(layout) => unsafe { std::alloc::alloc_zeroed(layout) },
        Err(_) => core::ptr::null_mut(),
    }
}

/// What the dynamic linker knows about a native code address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NativeSymbol {
    /// Path of the library containing the address.
    pub library: String,
    /// The nearest exported symbol at or below the address, if any.
    pub symbol: String,
    /// Load address of the library.
    pub base: usize,
}

/// How many libraries the dynamic loader has loaded and unloaded so far (glibc's and musl's
/// `dlpi_adds`, `dlpi_subs`): a change says the native modules changed, without reading the
/// memory map. Takes the loader's lock briefly; not async-signal-safe.
#[cfg(target_os = "linux")]
pub fn library_loads() -> Option<(u64, u64)> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid entry for this call; `data` is the `Option` below,
        // which outlives `dl_iterate_phdr`.
        unsafe {
            *(data as *mut Option<(u64, u64)>) = Some(((*info).dlpi_adds, (*info).dlpi_subs));
        }
        1 // the first entry is enough: every entry carries the same counters
    }
    let mut loads: Option<(u64, u64)> = None;
    // SAFETY: `first` only writes through `data`, which points at `loads`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut loads).cast()) };
    loads
}

/// Names a native code address with `dladdr`. Not async-signal-safe.
#[cfg(unix)]
pub fn native_symbol(address: usize) -> Option<NativeSymbol> {
    let mut info = libc::Dl_info {
        dli_fname: core::ptr::null(),
        dli_fbase: core::ptr::null_mut(),
        dli_sname: core::ptr::null(),
        dli_saddr: core::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-pointer.
    if unsafe { libc::dladdr(address as *const libc::c_void, &mut info) } == 0 {
        return None;
    }
    let text = |p: *const libc::c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: dladdr returns NUL-terminated strings owned by the loader, valid while
            // the library stays loaded (we copy them at once).
            unsafe { core::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        }
    };
    Some(NativeSymbol {
        library: text(info.dli_fname),
        symbol: text(info.dli_sname),
        base: info.dli_fbase as usize,
    })
}

/// Native symbols: not available on this platform.
#[cfg(not(unix))]
pub fn native_symbol(_address: usize) -> Option<NativeSymbol> {
    None
}

/// A file mapped read-only into memory: its bytes without reading them, each page read from
/// the page cache only when first touched (a module's unwind tables are searched, not read
/// through). The file must not shrink while mapped: a shared library does not, and if it did
/// the program's own mapping of it would fault alike.
#[cfg(target_os = "linux")]
pub struct MappedFile {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; sharing `&[u8]` views of it
// across threads is as safe as sharing any immutable slice.
#[cfg(target_os = "linux")]
unsafe impl Send for MappedFile {}
// SAFETY: as above: nothing writes to the mapping.
#[cfg(target_os = "linux")]
unsafe impl Sync for MappedFile {}

#[cfg(target_os = "linux")]
impl MappedFile {
    /// Maps the whole of `file` (`None` if it is empty or the kernel refuses).
    pub fn map(file: &std::fs::File) -> Option<MappedFile> {
        use std::os::fd::AsRawFd;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh private read-only mapping chosen by the kernel (no fixed address, so
        // nothing existing is replaced); the descriptor is valid for the call, and the mapping
        // outlives it by design.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        Some(MappedFile {
            ptr: std::ptr::NonNull::new(ptr.cast())?,
            len,
        })
    }
}

#[cfg(target_os = "linux")]
impl std::ops::Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is a live readable mapping of `len` bytes until `drop`, and nothing
        // writes to it.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(target_os = "linux")]
impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; no slice of it outlives `self`
        // (they borrow it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_ids() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a && a > 0);
        let tid = gettid();
        assert!(tid > 0);
        let cpu1 = thread_cpu_ns(tid).expect("own cpu clock");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns(tid).unwrap() > cpu1);
        assert_eq!(thread_cpu_ns(0x7fff_fff0), None);
    }

    #[test]
    fn stack_bounds_contain_a_local() {
        let (lo, hi) = current_stack_bounds().expect("bounds");
        let local = 0u8;
        let at = &local as *const u8 as usize;
        assert!(lo < at && at < hi);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_own_memory_and_fails_safely() {
        let data: Vec<u8> = (0..=255u8).collect();
        let mut buf = vec![0u8; 256];
        assert!(read_process_memory(data.as_ptr() as usize, &mut buf));
        assert_eq!(buf, data);
        assert!(read_process_memory(0x10, &mut []), "an empty read succeeds");
        assert!(
            !read_process_memory(0x10, &mut buf[..8]),
            "the zero page is unmapped"
        );
        assert!(!read_process_memory(usize::MAX - 3, &mut buf[..8]));
    }

    #[test]
    fn names_a_libc_function() {
        let s = native_symbol(libc::getpid as *const () as usize).expect("dladdr knows libc");
        assert!(s.library.contains("libc"), "{s:?}");
        assert!(!s.symbol.is_empty());
    }

    #[test]
    fn a_mapped_file_holds_the_file_s_bytes_and_an_empty_one_is_not_mapped() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("clrprof-mapped-{}", std::process::id()));
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let mapped = MappedFile::map(&std::fs::File::open(&path).unwrap()).unwrap();
        // The mapping outlives the file's name.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(&mapped[..], &bytes[..]);
        let empty = dir.join(format!("clrprof-mapped-empty-{}", std::process::id()));
        std::fs::write(&empty, b"").unwrap();
        assert!(MappedFile::map(&std::fs::File::open(&empty).unwrap()).is_none());
        std::fs::remove_file(&empty).unwrap();
    }
}
