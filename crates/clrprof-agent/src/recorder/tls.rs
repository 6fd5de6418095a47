//! Three initial-exec TLS slots, readable from the hook stubs and the signal handler: the
//! trace-mode state, the registry slot, and the async chain the thread runs (`async_chains`).
//!
//! Stable Rust's `thread_local!` in a shared library uses the general-dynamic model: the first
//! access on a thread may call `__tls_get_addr`, which can allocate. Neither the enter/leave
//! fast paths (which may touch only a few registers) nor a signal handler can afford that. So
//! the slots are declared in assembly in `.tbss` and read with an `@GOTTPOFF` load: the
//! initial-exec model, one load from the GOT and one `fs:`-relative load, never a call. The
//! dynamic linker reserves the 24 bytes for every thread when the agent is loaded (glibc keeps
//! about 1.6 KiB of static TLS for libraries loaded later; CoreCLR itself uses none of it on
//! x86-64).

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use core::arch::{asm, global_asm};

    /// One 8-byte slot: its `.tbss` symbol, and a getter and a setter that read and write it
    /// with an `@GOTTPOFF` load.
    macro_rules! tls_slot {
        ($symbol:literal, $(#[$get_doc:meta])* $get:ident, $(#[$set_doc:meta])* $set:ident, $ty:ty) => {
            global_asm!(
                ".section .tbss,\"awT\",@nobits",
                ".p2align 3",
                concat!(".globl ", $symbol),
                concat!(".hidden ", $symbol),
                concat!(".type ", $symbol, ",@object"),
                concat!(".size ", $symbol, ", 8"),
                concat!($symbol, ":"),
                ".zero 8",
                ".text",
            );

            $(#[$get_doc])*
            #[inline(always)]
            pub fn $get() -> $ty {
                let value: $ty;
                // SAFETY: reads this thread's 8-byte slot in the static TLS block; touches no
                // memory but the GOT entry and the slot.
                unsafe {
                    asm!(
                        concat!("mov {v}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                        "mov {v}, qword ptr fs:[{v}]",
                        v = out(reg) value,
                        options(nostack, readonly, preserves_flags),
                    )
                };
                value
            }

            $(#[$set_doc])*
            #[inline(always)]
            pub fn $set(value: $ty) {
                // SAFETY: writes this thread's own 8-byte slot in the static TLS block.
                unsafe {
                    asm!(
                        concat!("mov {t}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                        "mov qword ptr fs:[{t}], {v}",
                        t = out(reg) _,
                        v = in(reg) value,
                        options(nostack, preserves_flags),
                    )
                };
            }
        };
    }

    tls_slot!(
        "clrprof_tls_thread_state",
        /// The calling thread's trace-mode state pointer (null until its first hooked call).
        thread_state,
        /// Sets the calling thread's trace-mode state pointer.
        set_thread_state,
        usize
    );
    tls_slot!(
        "clrprof_tls_thread_slot",
        /// The calling thread's registry slot pointer (null until registered).
        thread_slot,
        /// Sets the calling thread's registry slot pointer.
        set_thread_slot,
        usize
    );
    tls_slot!(
        "clrprof_tls_async",
        /// The calling thread's async state (see `recorder::chains`: the chain running and the
        /// chain resumed, 32 bits each).
        async_state,
        /// Sets the calling thread's async state.
        set_async_state,
        u64
    );
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    //! Hooks and signal sampling are x86-64 Linux only; elsewhere the slots stay empty.
    pub fn async_state() -> u64 {
        0
    }
    pub fn set_async_state(_value: u64) {}
    pub fn thread_state() -> usize {
        0
    }
    pub fn set_thread_state(_value: usize) {}
    pub fn thread_slot() -> usize {
        0
    }
    pub fn set_thread_slot(_value: usize) {}
}

pub use imp::*;

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn slots_are_per_thread() {
        set_thread_state(11);
        set_thread_slot(22);
        set_async_state(44);
        let other = std::thread::spawn(|| {
            let before = (thread_state(), thread_slot(), async_state());
            set_thread_state(33);
            (before, thread_state())
        })
        .join()
        .unwrap();
        assert_eq!(other, ((0, 0, 0), 33));
        assert_eq!((thread_state(), thread_slot(), async_state()), (11, 22, 44));
        set_thread_state(0);
        set_thread_slot(0);
        set_async_state(0);
    }
}
