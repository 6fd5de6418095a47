use super::*;

/// A fake stack address, far from anything this process maps (checked where it matters).
const FAKE_SP: usize = 0x5a5a_0000_0000;

/// No CFI, no managed shapes: the frame-pointer rule alone.
struct NoRules;

impl FrameRules for NoRules {
    fn cfi(&mut self, _at: FrameAt, _reader: &mut StackReader<'_>) -> Option<Step> {
        None
    }

    fn managed(&mut self, _at: FrameAt, _reader: &mut StackReader<'_>) -> Option<Step> {
        None
    }
}

fn bytes_of(words: &[usize]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A frame-pointer chain of three frames whose pcs are in no module, in a copy whose
/// addresses are fake, so every word must come from the copy.
fn synthetic_stack() -> (Vec<usize>, Regs, usize) {
    let at = |i: usize| FAKE_SP + i * 8;
    let mut words = vec![0usize; 32];
    words[4] = at(10); // frame record at word 4 -> caller's at 10
    words[5] = 0x10_1000;
    words[10] = at(20);
    words[11] = 0x10_2000;
    words[20] = 0; // outermost: zero return address
    words[21] = 0;
    let regs = Regs {
        rip: 0x10_0500,
        rsp: FAKE_SP,
        rbp: at(4),
    };
    (words, regs, at(32))
}

/// A thread interrupted at `regs` whose stack up to `hi` is `copy`, with no chain to follow.
pub(crate) fn interrupted(regs: Regs, copy: &[u8], hi: usize) -> Interrupted<'_> {
    Interrupted {
        regs,
        copy,
        chain: Chain::default(),
        stack_hi: hi,
    }
}

/// `unwinder`'s unwind of the stack `copy` (up to `hi`) from `regs`, with no chain to follow and
/// no managed shapes, appended to `out`.
fn unwind_into(unwinder: &mut Unwinder, regs: Regs, copy: &[u8], hi: usize, out: &mut Vec<usize>) {
    unwinder.unwind(interrupted(regs, copy, hi), None, out, &mut NoShapes);
}

fn run(unwinder: &mut Unwinder, regs: Regs, copy: &[u8], hi: usize) -> Vec<usize> {
    let mut out = Vec::new();
    unwind_into(unwinder, regs, copy, hi, &mut out);
    out
}

#[test]
fn frame_pointer_rule_for_pcs_in_no_module() {
    let mut buf = [0u8; 8];
    assert!(
        !sys::read_process_memory(FAKE_SP, &mut buf),
        "the fake stack is not mapped"
    );
    let mut u = Unwinder::new();
    let (words, regs, hi) = synthetic_stack();
    assert!(!u.modules().contains_native(regs.rip));
    let copy = bytes_of(&words);
    assert_eq!(
        run(&mut u, regs, &copy, hi),
        [0x10_0500, 0x10_1000, 0x10_2000]
    );
    let stats = u.last_stats();
    // A zero return address in a frame record is not the end of a stack (only CFI marks the
    // outermost frame): the walk stops there, reporting the record as unusable.
    assert_eq!(stats.stop, Stop::BadFramePointer);
    assert_eq!(
        (stats.fp_frames, stats.cfi_frames, stats.live_reads),
        (3, 0, 0)
    );
    assert_eq!(stats.stack_bytes, 22 * 8);

    // A misaligned frame pointer, or one below the stack pointer: only the pc.
    for rbp in [regs.rbp + 1, FAKE_SP - 16] {
        assert_eq!(run(&mut u, Regs { rbp, ..regs }, &copy, hi), [0x10_0500]);
        assert_eq!(u.last_stats().stop, Stop::BadFramePointer);
    }
    // A chain that goes back down, or leaves the stack, ends there.
    for next in [FAKE_SP + 4 * 8, FAKE_SP + 40 * 8] {
        let mut w = words.clone();
        w[10] = next;
        let out = run(&mut u, regs, &bytes_of(&w), hi);
        assert_eq!(out, [0x10_0500, 0x10_1000, 0x10_2000]);
        assert_eq!(u.last_stats().stop, Stop::BadFramePointer);
    }
    // No usable stack: only the pc.
    assert_eq!(run(&mut u, regs, &copy, FAKE_SP), [0x10_0500]);
    assert_eq!(u.last_stats().stop, Stop::NoStack);
    // A copy that ends early: the rest is read live, which fails on the fake address.
    assert_eq!(
        run(&mut u, regs, &copy[..8 * 8], hi),
        [0x10_0500, 0x10_1000]
    );
    let stats = u.last_stats();
    assert_eq!((stats.stop, stats.live_reads), (Stop::Unreadable, 1));
    // `out` is appended to, never beyond MAX_FRAMES.
    let mut out = vec![7; MAX_FRAMES - 1];
    unwind_into(&mut u, regs, &copy, hi, &mut out);
    assert_eq!(out.len(), MAX_FRAMES);
    assert_eq!(
        (out[MAX_FRAMES - 1], u.last_stats().stop),
        (0x10_0500, Stop::Limit)
    );
    unwind_into(&mut u, regs, &copy, hi, &mut out);
    assert_eq!(out.len(), MAX_FRAMES);
}

/// One walk of the stack `words` (at fake addresses, see [`synthetic_stack`]) with `tail`.
fn walk_with(
    words: &[usize],
    regs: Regs,
    hi: usize,
    tail: &mut Tail,
    rules: &mut dyn FrameRules,
) -> (Vec<usize>, UnwindStats) {
    let mut out = Vec::new();
    let copy = bytes_of(words);
    let stats = walk(
        interrupted(regs, &copy, hi),
        Some(tail),
        &mut out,
        &mut Vec::new(),
        rules,
        7,
    );
    (out, stats)
}

/// A walk beyond the first frame is remembered: the same callers with the same words give the
/// same frames without walking them again, and a word that changed walks them again.
#[test]
fn a_remembered_walk_is_used_only_where_every_word_it_read_is_the_same() {
    let (mut words, regs, hi) = synthetic_stack();
    let mut tail = Tail::default();
    let walk_once = |words: &[usize], regs: Regs, tail: &mut Tail| {
        walk_with(words, regs, hi, tail, &mut NoRules)
    };
    let (first, stats) = walk_once(&words, regs, &mut tail);
    assert_eq!(first, [0x10_0500, 0x10_1000, 0x10_2000]);
    assert_eq!(stats.memo_frames, 0);
    // Another instruction of the same function, the same callers: remembered.
    let moved = Regs {
        rip: 0x10_0510,
        ..regs
    };
    let (again, stats) = walk_once(&words, moved, &mut tail);
    assert_eq!(again, [0x10_0510, 0x10_1000, 0x10_2000]);
    assert_eq!((stats.memo_frames, stats.stop), (1, Stop::BadFramePointer));
    // The caller's caller changed (another call site): walked again.
    words[11] = 0x10_3000;
    let (changed, stats) = walk_once(&words, moved, &mut tail);
    assert_eq!(changed, [0x10_0510, 0x10_1000, 0x10_3000]);
    assert_eq!(stats.memo_frames, 0);
}

/// Frame-pointer frames, reported as CFI ones for pcs from 0x30_0000 on (a native library's).
struct CfiFrom30;

impl FrameRules for CfiFrom30 {
    fn cfi(&mut self, at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step> {
        (at.pc >= 0x30_0000).then(|| frame_pointer_step(reader, at.sp, at.bp))
    }

    fn managed(&mut self, _at: FrameAt, _reader: &mut StackReader<'_>) -> Option<Step> {
        None
    }
}

/// The native frames under the program's code are remembered from where the program's last
/// frame leads into them: a walk that reaches them from other callers (a recursion at
/// another depth) takes them as they are while every word they read is the same.
#[test]
fn the_native_frames_under_the_program_are_remembered_for_walks_from_other_callers() {
    let at = |i: usize| FAKE_SP + i * 8;
    let hi = at(64);
    let mut base = vec![0usize; 64];
    base[30] = at(40);
    base[31] = 0x30_1000; // the program's outermost frame returns into the native base
    base[40] = at(48);
    base[41] = 0x30_2000;
    base[48] = at(56);
    base[49] = 0x30_3000;
    // words 56, 57: zero, the outermost frame (its "CFI" says so)
    // The base under one frame of the program's, at pc `rip`, whose frame record at word
    // `record` returns to `ret` and leads into the base's first record.
    let program_frame = |record: usize, ret: usize, rip: usize| {
        let mut words = base.clone();
        words[record] = at(30);
        words[record + 1] = ret;
        let regs = Regs {
            rip,
            rsp: FAKE_SP,
            rbp: at(record),
        };
        (words, regs)
    };
    let (shallow, shallow_regs) = program_frame(20, 0x10_1000, 0x10_0500);
    let (mut deeper, deeper_regs) = program_frame(14, 0x10_1100, 0x10_0600);
    let mut tail = Tail::default();
    let walk_once = |words: &[usize], regs: Regs, tail: &mut Tail| {
        walk_with(words, regs, hi, tail, &mut CfiFrom30)
    };
    let (out, stats) = walk_once(&shallow, shallow_regs, &mut tail);
    assert_eq!(out, [0x10_0500, 0x10_1000, 0x30_1000, 0x30_2000, 0x30_3000]);
    assert_eq!((stats.memo_frames, stats.cfi_frames), (0, 3));
    assert_eq!(stats.stop, Stop::EndOfStack);
    // Another first caller, the same native base: its frames are remembered.
    let (out, stats) = walk_once(&deeper, deeper_regs, &mut tail);
    assert_eq!(out, [0x10_0600, 0x10_1100, 0x30_1000, 0x30_2000, 0x30_3000]);
    assert_eq!((stats.memo_frames, stats.cfi_frames), (2, 0));
    assert_eq!(stats.stop, Stop::EndOfStack);
    // A word of the base changed: walked again.
    deeper[49] = 0x30_4000;
    let moved = Regs {
        rip: 0x10_0610,
        ..deeper_regs
    };
    let (out, stats) = walk_once(&deeper, moved, &mut tail);
    assert_eq!(out, [0x10_0610, 0x10_1100, 0x30_1000, 0x30_2000, 0x30_4000]);
    assert_eq!(stats.memo_frames, 0);
}

#[test]
fn frame_pointer_chain_stops_at_max_frames() {
    let n = MAX_FRAMES + 50;
    let mut words = vec![0usize; 2 * n + 2];
    for f in 0..n {
        words[2 * f] = FAKE_SP + 16 * (f + 1);
        words[2 * f + 1] = 0x20_0000 + f;
    }
    let regs = Regs {
        rip: 0x10_0000,
        rsp: FAKE_SP,
        rbp: FAKE_SP,
    };
    let mut u = Unwinder::new();
    let out = run(&mut u, regs, &bytes_of(&words), FAKE_SP + words.len() * 8);
    assert_eq!(out.len(), MAX_FRAMES);
    assert_eq!(out[1..4], [0x20_0000, 0x20_0001, 0x20_0002]);
    assert_eq!(u.last_stats().stop, Stop::Limit);
}

#[test]
fn unwinder_can_move_to_the_sampler_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Unwinder>();
    assert_send::<ModuleMap>();
}

#[test]
fn garbage_never_panics() {
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use std::cell::RefCell;

    let unwinder = RefCell::new(Unwinder::new());
    let mut code = unwinder.borrow().modules().native_ranges();
    if code.is_empty() {
        code.push((0x40_0000, 0x50_0000));
    }
    // A real, mapped buffer, so that some garbage stacks are read live.
    let real: Vec<u8> = (0..64 * 1024).map(|i| (i * 7) as u8).collect();
    let real_at = real.as_ptr() as usize;
    let strategy = (
        (0u8..3, any::<usize>()),
        (0u8..3, any::<usize>()),
        any::<usize>(),
        vec((0u8..5, any::<usize>()), 0..600),
        (0u8..3, any::<usize>()),
    );
    let config = Config {
        cases: 3000,
        failure_persistence: None,
        ..Config::default()
    };
    let pick_code = |r: usize| {
        let (lo, hi) = code[r % code.len()];
        lo + (r / 7) % (hi - lo)
    };
    TestRunner::new(config)
        .run(
            &strategy,
            |((rip_kind, rip), (sp_kind, sp), rbp, words, (hi_kind, hi))| {
                let rip = if rip_kind == 0 { rip } else { pick_code(rip) };
                let rsp = match sp_kind {
                    0 => sp,
                    1 => real_at + (sp % 4096) * 8,
                    _ => sp % 0x1_0000,
                };
                let copy: Vec<u8> = words
                    .iter()
                    .flat_map(|&(kind, w)| {
                        let w = match kind {
                            0 => w,
                            1 => rsp.wrapping_add(w % 8192),
                            2 => pick_code(w),
                            3 => w % 256,
                            _ => 0,
                        };
                        w.to_le_bytes()
                    })
                    .collect();
                let stack_hi = match hi_kind {
                    0 => hi,
                    1 => rsp.saturating_add(copy.len()),
                    _ => rsp.saturating_add(hi % (128 * 1024)),
                };
                let mut out = Vec::new();
                unwind_into(
                    &mut unwinder.borrow_mut(),
                    Regs { rip, rsp, rbp },
                    &copy,
                    stack_hi,
                    &mut out,
                );
                prop_assert!(!out.is_empty() && out.len() <= MAX_FRAMES);
                prop_assert_eq!(out[0], rip);
                Ok(())
            },
        )
        .unwrap();
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod linux {
    use super::super::*;
    use super::unwind_into;
    use core::ffi::{c_int, c_void};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// The registers of the current instruction, as a signal handler would see them.
    macro_rules! current_regs {
        () => {{
            let (ip, sp, bp): (usize, usize, usize);
            // SAFETY: copies RIP, RSP and RBP into three output registers; touches no
            // memory, no stack and no flags.
            unsafe {
                core::arch::asm!(
                    "lea {ip}, [rip]",
                    "mov {sp}, rsp",
                    "mov {bp}, rbp",
                    ip = out(reg) ip,
                    sp = out(reg) sp,
                    bp = out(reg) bp,
                    options(nomem, nostack, preserves_flags),
                )
            };
            Regs {
                rip: ip,
                rsp: sp,
                rbp: bp,
            }
        }};
    }

    type Action = Box<dyn FnOnce(Regs)>;

    thread_local! {
        static ON_COMPARE: RefCell<Option<Action>> = const { RefCell::new(None) };
    }

    /// qsort's comparator: on its first call, runs the pending action with its own
    /// registers, while libc's qsort frames are live below it.
    unsafe extern "C" fn compare(a: *const c_void, b: *const c_void) -> c_int {
        let regs = current_regs!();
        if let Some(action) = ON_COMPARE.with(|c| c.borrow_mut().take()) {
            action(regs);
        }
        // SAFETY: qsort passes pointers to two elements of the u32 array it sorts.
        let (a, b) = unsafe { (*a.cast::<u32>(), *b.cast::<u32>()) };
        a.cmp(&b) as c_int
    }

    /// Sorts with libc's qsort (no frame pointers in distro builds), running `action`
    /// inside the comparator.
    #[inline(never)]
    fn sort_calling(values: &mut [u32], action: Action) {
        ON_COMPARE.with(|c| *c.borrow_mut() = Some(action));
        // SAFETY: `values` is a live array of `values.len()` u32s and `compare` compares
        // two of its elements.
        unsafe { libc::qsort(values.as_mut_ptr().cast(), values.len(), 4, Some(compare)) };
    }

    /// Nests `depth` more native frames (with CFI) before sorting, for deeper stacks.
    #[inline(never)]
    fn nest(depth: usize, values: &mut [u32], action: Action) {
        if depth == 0 {
            sort_calling(values, action);
        } else {
            nest(depth - 1, std::hint::black_box(values), action);
        }
        std::hint::black_box(depth);
    }

    /// The current thread's stack from `rsp` up (at most `max` bytes) and its top.
    fn copy_stack(rsp: usize, max: usize) -> (Vec<u8>, usize) {
        let (_, hi) = sys::current_stack_bounds().expect("stack bounds");
        let mut copy = vec![0u8; (hi - rsp).min(max)];
        assert!(sys::read_process_memory(rsp, &mut copy));
        (copy, hi)
    }

    struct Walks {
        full: Vec<usize>,
        full_stats: UnwindStats,
        short: Vec<usize>,
        short_stats: UnwindStats,
        fp_only: Vec<usize>,
    }

    fn in_libc(map: &ModuleMap, addr: usize) -> bool {
        map.module_at(addr - 1)
            .is_some_and(|m| m.path.contains("/libc.so") || m.path.contains("/libc-"))
    }

    #[test]
    fn unwinds_through_libc_qsort() {
        let result: Rc<RefCell<Option<Walks>>> = Rc::default();
        let sink = Rc::clone(&result);
        let mut values: Vec<u32> = (0..64).rev().collect();
        sort_calling(
            &mut values,
            Box::new(move |regs| {
                let (copy, hi) = copy_stack(regs.rsp, 256 * 1024);
                let mut u = Unwinder::new();
                let mut full = Vec::new();
                unwind_into(&mut u, regs, &copy, hi, &mut full);
                let full_stats = u.last_stats();
                let mut short = Vec::new();
                unwind_into(&mut u, regs, &copy[..64], hi, &mut short);
                let short_stats = u.last_stats();
                let mut fp_only = Vec::new();
                let mut window = Vec::new();
                walk(
                    crate::unwind::tests::interrupted(regs, &copy, hi),
                    None,
                    &mut fp_only,
                    &mut window,
                    &mut crate::unwind::tests::NoRules,
                    0,
                );
                *sink.borrow_mut() = Some(Walks {
                    full,
                    full_stats,
                    short,
                    short_stats,
                    fp_only,
                });
            }),
        );
        assert!(values.windows(2).all(|w| w[0] <= w[1]));
        let walks = result.borrow_mut().take().expect("the comparator ran");
        let map = ModuleMap::new();
        let caller = sort_calling as *const () as usize;
        let in_caller = |a: usize| (caller..caller + 4096).contains(&a);
        let full = &walks.full;
        let describe = || {
            full.iter()
                .map(|&a| {
                    let m = map.module_at(a.saturating_sub(1));
                    let s = sys::native_symbol(a.saturating_sub(1));
                    format!(
                        "{a:#x} {} {}",
                        m.map_or("?", |m| m.path),
                        s.map_or(String::new(), |s| s.symbol)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let libc_first = full[1..].iter().position(|&a| in_libc(&map, a));
        let back = full
            .iter()
            .skip(1)
            .position(|&a| in_caller(a))
            .map(|i| i + 1);
        let (Some(libc_first), Some(back)) = (libc_first, back) else {
            panic!(
                "no libc frame or no caller frame ({:?}):\n{}",
                walks.full_stats,
                describe()
            );
        };
        assert_eq!(
            libc_first,
            0,
            "the comparator returns into libc:\n{}",
            describe()
        );
        assert!(
            full[1..back].iter().all(|&a| in_libc(&map, a)),
            "only libc between the comparator and its caller:\n{}",
            describe()
        );
        assert!(
            full[1..back].iter().any(|&a| {
                sys::native_symbol(a - 1).is_some_and(|s| s.symbol.contains("qsort"))
            }),
            "a frame inside qsort:\n{}",
            describe()
        );
        assert!(
            walks.full_stats.cfi_frames as usize >= back,
            "{:?}",
            walks.full_stats
        );
        assert_eq!(walks.full_stats.live_reads, 0);
        // The walk goes on past the caller, up to the thread's first frame.
        assert!(full.len() > back + 2, "{}", describe());
        assert_eq!(walks.full_stats.stop, Stop::EndOfStack, "{}", describe());
        // A 64-byte copy: the rest of the stack is read live, with the same result.
        assert_eq!(&walks.short, full);
        assert!(walks.short_stats.live_reads > 0, "{:?}", walks.short_stats);
        // RBP is no frame pointer in libc: the frame-pointer walk loses the caller.
        eprintln!("{}", describe());
        eprintln!(
            "frame-pointer walk: {} frames, reaches the caller: {}",
            walks.fp_only.len(),
            walks.fp_only.iter().any(|&a| in_caller(a))
        );
    }

    #[test]
    fn module_map_lists_native_code() {
        let map = ModuleMap::new();
        let getpid = libc::getpid as *const () as usize;
        assert!(map.contains_native(getpid));
        let libc_module = map.module_at(getpid).expect("libc is a native module");
        assert!(libc_module.path.contains("libc"), "{libc_module:?}");
        let base = sys::native_symbol(getpid).expect("dladdr").base;
        assert_eq!(libc_module.load_bias, Some(base), "{libc_module:?}");
        let own = module_map_lists_native_code as *const () as usize;
        assert!(map.contains_native(own), "the test binary is native code");
        let heap = Box::new(0u64);
        assert!(!map.contains_native(&*heap as *const u64 as usize));
        assert!(!map.contains_native(0) && !map.contains_native(usize::MAX));
        let ranges = map.native_ranges();
        assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "sorted, merged");
        assert!(ranges.iter().any(|&(lo, hi)| lo <= getpid && getpid < hi));
        assert!(
            ranges
                .iter()
                .any(|&(lo, _)| map.module_at(lo).is_some_and(|m| m.path == "[vdso]")),
            "the vDSO is native code"
        );
    }

    #[test]
    fn refresh_sees_new_mappings() {
        refresh_sees_new_mappings_with(ModuleMap::new());
        refresh_sees_new_mappings_with(ModuleMap::asking(sys::MapsQuery::unsupported()));
    }

    #[test]
    fn the_kernels_list_of_code_makes_the_map_the_whole_text_makes() {
        let asked = ModuleMap::new();
        let read = ModuleMap::asking(sys::MapsQuery::unsupported());
        assert!(read.latest_read().is_some(), "the whole map was read");
        if asked.latest_read().is_some() {
            eprintln!("this kernel cannot list mappings one at a time: nothing to compare");
            return;
        }
        let ranges = asked.native_ranges();
        assert_eq!(ranges, read.native_ranges());
        assert!(ranges.len() > 2, "{ranges:?}");
        for &(lo, hi) in &ranges {
            for addr in [lo, hi - 1] {
                let (a, r) = (asked.module_at(addr), read.module_at(addr));
                assert_eq!(
                    a.map(|m| (m.start, m.end, m.path, m.load_bias)),
                    r.map(|m| (m.start, m.end, m.path, m.load_bias)),
                    "{addr:#x}"
                );
            }
        }
        let getpid = libc::getpid as *const () as usize;
        assert!(
            asked
                .module_at(getpid)
                .is_some_and(|m| m.path.contains("libc"))
        );
    }

    fn refresh_sees_new_mappings_with(mut map: ModuleMap) {
        use std::os::fd::AsRawFd;

        let len = 4096;
        let map_exec = |fd: i32| {
            let flags = if fd < 0 { libc::MAP_ANONYMOUS } else { 0 };
            // SAFETY: a private mapping at no fixed address of `len` bytes (of `fd`'s file
            // from offset 0, or anonymous); nothing else is touched. Unmapped below.
            let p = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_EXEC,
                    libc::MAP_PRIVATE | flags,
                    fd,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            p
        };
        // SAFETY: unmaps exactly a mapping made by `map_exec`.
        let unmap = |p: *mut libc::c_void| assert_eq!(unsafe { libc::munmap(p, len) }, 0);

        // A new anonymous executable mapping (a new JIT code heap): code, not native.
        let before = map.generation();
        let anon = map_exec(-1);
        map.refresh();
        assert!(map.contains_code(anon as usize), "known as code");
        assert!(!map.contains_native(anon as usize), "but not native");
        assert_eq!(map.generation(), before, "no native module changed");
        unmap(anon);

        // A new executable mapping of an ELF file (a library being loaded): native.
        let getpid = libc::getpid as *const () as usize;
        let libc_path = map.module_at(getpid).expect("libc").path.to_owned();
        let file = std::fs::File::open(&libc_path).expect("open libc");
        let elf = map_exec(file.as_raw_fd());
        assert!(!map.contains_native(elf as usize));
        assert!(map.refresh(), "a native module appeared");
        assert!(map.generation() > before);
        let module = map
            .module_at(elf as usize)
            .expect("the new mapping is native");
        assert_eq!(
            (module.path, module.load_bias),
            (&*libc_path, Some(elf as usize))
        );
        unmap(elf);
        assert!(map.refresh(), "a native module went away");
        assert!(!map.contains_code(elf as usize));
    }

    /// Cost of one unwind of a libc -> native (CFI) -> ... stack, warm caches. Run with
    /// `cargo test --release -p clrprof-agent unwind_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn unwind_cost() {
        let mut values: Vec<u32> = (0..64).rev().collect();
        nest(
            20,
            &mut values,
            Box::new(|regs| {
                let (copy, hi) = copy_stack(regs.rsp, 256 * 1024);
                let started = std::time::Instant::now();
                let mut u = Unwinder::new();
                let mut out = Vec::with_capacity(MAX_FRAMES);
                unwind_into(&mut u, regs, &copy, hi, &mut out);
                let cold = started.elapsed();
                let stats = u.last_stats();
                eprintln!(
                    "cold (maps + CFI loads + first unwind): {cold:?}; {} frames, {stats:?}",
                    out.len()
                );
                let mut map = ModuleMap::new();
                let started = std::time::Instant::now();
                for _ in 0..100 {
                    map.refresh();
                }
                eprintln!(
                    "ModuleMap::refresh (nothing new, {} native ranges): {:?}",
                    map.native_ranges().len(),
                    started.elapsed() / 100
                );
                for (label, copy_len) in [
                    ("16 KiB copy", 16 * 1024),
                    ("needed copy", stats.stack_bytes),
                    ("1 KiB copy + live reads", 1024),
                ] {
                    let copy = &copy[..copy_len.min(copy.len())];
                    let rounds = 20_000;
                    let started = std::time::Instant::now();
                    for _ in 0..rounds {
                        out.clear();
                        unwind_into(&mut u, regs, copy, hi, &mut out);
                    }
                    let per = started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
                    eprintln!(
                        "{label}: {per:.2} us per unwind, {} frames ({:.0} ns/frame), {:?}",
                        out.len(),
                        per * 1000.0 / out.len() as f64,
                        u.last_stats()
                    );
                }
            }),
        );
    }
}
