//! Trace mode's data: one calling context tree (CCT) per thread, and a shadow stack of caller
//! stack pointers that keeps it in step with the real stack.
//!
//! A CCT node stands for one call path (`Main → Parse → ReadLine`); entering a function moves
//! the thread's `current` pointer to the matching child node (creating it on first use) and
//! bumps its call count; leaving moves back to the parent. Deep recursion is a chain of nodes,
//! one per depth. The hot part of enter/leave is hand-written assembly (`hooks.rs`) that reads
//! the `#[repr(C)]` layouts below by offset; everything rare (a new thread, a new child, a
//! mismatch) is Rust, reached through a full register save.
//!
//! Each hooked frame also pushes its *caller's stack pointer* (the runtime hands it over in
//! r15 at enter and rsi at leave). A frame is popped only when both the function and that
//! stack pointer match; frames that were skipped without a leave (unwound by an exception
//! without callbacks) are recognised because their stack pointer lies below the leaving
//! frame's, and are dropped. So the tree never drifts, whatever the runtime reports.
//!
//! Memory: nodes come from per-thread chunks allocated on the slow path, under a global node
//! budget; at the budget, further new paths are not recorded (counted, and the frames are
//! skipped consistently). Thread states are never freed: a thread can still run hooked code
//! after the runtime reported its end, and the final report reads every tree at shutdown.

use core::alloc::Layout;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::threads::{self, ThreadSlot};
use super::{sys, tls};

/// Nodes per allocation chunk.
pub const CHUNK_NODES: usize = 4096;
/// Chunks per thread (so at most `CHUNK_NODES * MAX_CHUNKS` nodes per thread).
pub const MAX_CHUNKS: usize = 1024;
/// Depth of the shadow stack: address space is reserved up front, pages are used as touched.
pub const SHADOW_DEPTH: usize = 1 << 20;
/// The bottom entry of every shadow stack: never equal to, nor below, a real stack pointer.
const SENTINEL: usize = usize::MAX;
/// log2 of the number of entries of each thread's child cache.
pub const CHILD_CACHE_BITS: u32 = 14;
/// How far the function id is rotated before it is mixed with the parent's address: both vary
/// in the same low bits, so a plain XOR of the two makes many pairs collide.
pub const CHILD_CACHE_ROTATION: u32 = 29;

/// The multiplier of the child cache's hash (2^64 / golden ratio): the top bits of the product
/// depend on every bit of the key. The enter hook has no free register for a 64-bit immediate,
/// so it multiplies by this static in memory.
pub static CHILD_CACHE_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// One entry of a thread's child cache: `(parent, function) -> child`. 32 bytes, so that the
/// assembly finds entry `h` at `cache + (h << 5)`.
#[repr(C)]
pub struct CacheEntry {
    parent: AtomicPtr<Node>,
    function: AtomicUsize,
    child: AtomicPtr<Node>,
    _pad: usize,
}

const _: () = assert!(core::mem::size_of::<CacheEntry>() == 32);

/// The cache slot of `(parent, function)`: the same hash as the enter fast path computes,
/// `((parent ^ rotl(function, 29)) * M) >> (64 - bits)`.
pub fn child_cache_index(parent: usize, function: usize) -> usize {
    let key = (parent as u64) ^ (function as u64).rotate_left(CHILD_CACHE_ROTATION);
    (key.wrapping_mul(CHILD_CACHE_MULTIPLIER) >> (64 - CHILD_CACHE_BITS)) as usize
}

/// One call path, in exactly one cache line. Field offsets are used by the assembly in
/// `hooks.rs`; the enter hook checks `last_child_function` in the current node's own line before
/// touching the child's.
#[repr(C, align(64))]
pub struct Node {
    /// The function (FunctionID or mapped client id); 0 for the root.
    pub function: AtomicUsize,
    /// The caller's node; null for the root.
    pub parent: AtomicPtr<Node>,
    /// Exact number of calls along this path.
    pub calls: AtomicU64,
    /// The child entered last: checked first on the next enter.
    pub last_child: AtomicPtr<Node>,
    /// That child's function (0 while there is none).
    pub last_child_function: AtomicUsize,
    /// Head of the children list.
    pub first_child: AtomicPtr<Node>,
    /// Next sibling in the parent's children list.
    pub next_sibling: AtomicPtr<Node>,
    /// Per-thread id, 1-based in creation order (parents before children); the root is 0.
    pub id: AtomicU32,
    /// The sampler's interned stack id for this path (0 until computed). Sampler only.
    pub stack_id: AtomicU32,
}

/// The sampled time of one node, kept apart from the nodes (the hooks never touch it) in
/// arrays parallel to the node chunks. Sampler only.
#[derive(Default)]
pub struct NodeTimes {
    /// Samples in which the node was the innermost frame.
    pub self_samples: AtomicU64,
    /// CPU time of those samples.
    pub self_cpu_ns: AtomicU64,
    /// Wall time of those samples.
    pub self_wall_ns: AtomicU64,
}

/// A thread's trace-mode state. The first four fields' offsets are used by `hooks.rs`.
#[repr(C)]
pub struct ThreadState {
    /// The innermost node: the path the thread is in now.
    pub current: AtomicPtr<Node>,
    /// Top of the shadow stack of caller stack pointers.
    pub sp_top: AtomicPtr<usize>,
    /// Last usable shadow stack entry (the enter fast path stops below it).
    pub sp_limit: *mut usize,
    /// The child cache: `1 << CHILD_CACHE_BITS` entries mapping (parent node, function) to the
    /// child node, so that a node calling several functions in turn finds each child in one
    /// probe. A cache only: the children lists stay the truth; the slow path refills it.
    pub child_cache: *mut CacheEntry,
    /// Frames entered but not recorded (shadow stack full or node budget spent), still live.
    pub overflow: AtomicUsize,
    /// The root node (no function).
    pub root: Node,
    /// The root's sampled time.
    root_times: NodeTimes,
    /// Kernel id of the owning thread.
    pub tid: AtomicU32,
    /// The function of the last `ExceptionUnwindFunctionEnter`, until its matching leave.
    pub unwinding: AtomicUsize,
    /// Set once the tree was written out (at thread end).
    pub dumped: AtomicBool,
    node_count: AtomicU32,
    sp_base: *mut usize,
    chunks: [AtomicPtr<Node>; MAX_CHUNKS],
    time_chunks: [AtomicPtr<NodeTimes>; MAX_CHUNKS],
}

// Offsets the assembly relies on.
const _: () = {
    assert!(core::mem::offset_of!(ThreadState, current) == 0);
    assert!(core::mem::offset_of!(ThreadState, sp_top) == 8);
    assert!(core::mem::offset_of!(ThreadState, sp_limit) == 16);
    assert!(core::mem::offset_of!(ThreadState, child_cache) == 24);
    assert!(core::mem::offset_of!(Node, function) == 0);
    assert!(core::mem::offset_of!(Node, parent) == 8);
    assert!(core::mem::offset_of!(Node, calls) == 16);
    assert!(core::mem::offset_of!(Node, last_child) == 24);
    assert!(core::mem::offset_of!(Node, last_child_function) == 32);
    assert!(core::mem::offset_of!(Node, first_child) == 40);
    assert!(core::mem::offset_of!(Node, next_sibling) == 48);
    assert!(core::mem::size_of::<Node>() == 64);
};

// SAFETY: the raw pointers are owned by the state (its shadow stack) and written only by the
// owning thread; other threads read the atomics only.
unsafe impl Sync for ThreadState {}
// SAFETY: as above.
unsafe impl Send for ThreadState {}

/// Counters reported in the trace.
pub struct Stats {
    /// Nodes allocated, all threads.
    pub nodes: AtomicU64,
    /// New call paths not recorded because the node budget was spent.
    pub nodes_dropped: AtomicU64,
    /// Calls not recorded (shadow stack full or no node).
    pub calls_unrecorded: AtomicU64,
    /// Leaves that matched no recorded frame, and frames dropped because a caller left first.
    pub mismatches: AtomicU64,
    /// Threads whose state could not be created.
    pub threads_dropped: AtomicU64,
    /// Enters that took the slow path (new thread, new call path, cache miss, full stack).
    pub slow_enters: AtomicU64,
}

/// The process-wide counters.
pub static STATS: Stats = Stats {
    nodes: AtomicU64::new(0),
    nodes_dropped: AtomicU64::new(0),
    calls_unrecorded: AtomicU64::new(0),
    mismatches: AtomicU64::new(0),
    threads_dropped: AtomicU64::new(0),
    slow_enters: AtomicU64::new(0),
};

static NODE_BUDGET: AtomicU64 = AtomicU64::new(2_000_000);

/// A node that could not be made: gives back the budget it took and counts it dropped.
fn node_not_made<T>() -> Option<T> {
    STATS.nodes.fetch_sub(1, Ordering::Relaxed);
    STATS.nodes_dropped.fetch_add(1, Ordering::Relaxed);
    None
}

/// Sets the maximum number of nodes, all threads together.
pub fn set_node_budget(nodes: u64) {
    NODE_BUDGET.store(nodes, Ordering::Relaxed);
}

impl Node {
    /// The node's function.
    pub fn function(&self) -> usize {
        self.function.load(Ordering::Relaxed)
    }

    /// The parent node, or `None` for the root.
    pub fn parent(&self) -> Option<&Node> {
        let p = self.parent.load(Ordering::Acquire);
        // SAFETY: nodes are never freed while the process lives (see the module docs).
        (!p.is_null()).then(|| unsafe { &*p })
    }

    fn children(&self) -> impl Iterator<Item = &Node> {
        let mut next = self.first_child.load(Ordering::Acquire);
        core::iter::from_fn(move || {
            // SAFETY: the children list only links live nodes of the same thread state.
            let node = (!next.is_null()).then(|| unsafe { &*next })?;
            next = node.next_sibling.load(Ordering::Acquire);
            Some(node)
        })
    }
}

/// The trace-mode state of `slot`'s thread, if it has one.
pub fn state_of(slot: &ThreadSlot) -> Option<&'static ThreadState> {
    let p = slot.trace.load(Ordering::Acquire).cast::<ThreadState>();
    // SAFETY: the slot's pointer is null or a leaked `ThreadState` (stored by
    // `create_for_current_thread`), freed only by the sampler after it released the slot, so a
    // non-null pointer read from a used slot is live.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The calling thread's state, if it has one.
pub fn current_state() -> Option<&'static ThreadState> {
    let p = tls::thread_state();
    // SAFETY: the TLS slot holds null or a leaked `ThreadState` that is never freed.
    (p != 0).then(|| unsafe { &*(p as *const ThreadState) })
}

/// The calling thread's state, created (and the thread registered) on first use.
pub fn state_for_current_thread() -> Option<&'static ThreadState> {
    current_state().or_else(create_for_current_thread)
}

fn create_for_current_thread() -> Option<&'static ThreadState> {
    let Some(slot) = threads::register_current(0) else {
        STATS.threads_dropped.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    let sp_base = sys::reserve_zeroed(SHADOW_DEPTH * core::mem::size_of::<usize>()).cast::<usize>();
    let child_cache =
        sys::reserve_zeroed((1usize << CHILD_CACHE_BITS) * core::mem::size_of::<CacheEntry>())
            .cast::<CacheEntry>();
    if sp_base.is_null() || child_cache.is_null() {
        STATS.threads_dropped.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    // SAFETY: `sp_base` points at a fresh mapping of SHADOW_DEPTH words.
    unsafe { sp_base.write(SENTINEL) };
    let boxed = Box::<ThreadState>::new_zeroed();
    // SAFETY: every field of ThreadState is an atomic, a raw pointer, a bool or an integer,
    // for all of which all-zero bytes are a valid value.
    let mut state = unsafe { boxed.assume_init() };
    state.sp_base = sp_base;
    state.child_cache = child_cache;
    // SAFETY: SHADOW_DEPTH - 1 is within the mapping.
    state.sp_limit = unsafe { sp_base.add(SHADOW_DEPTH - 1) };
    state.sp_top = AtomicPtr::new(sp_base);
    state.tid = AtomicU32::new(sys::gettid());
    let state: &'static ThreadState = Box::leak(state);
    state
        .current
        .store(&state.root as *const Node as *mut Node, Ordering::Release);
    slot.trace.store(
        (state as *const ThreadState).cast_mut().cast::<()>(),
        Ordering::Release,
    );
    tls::set_thread_state(state as *const ThreadState as usize);
    Some(state)
}

impl ThreadState {
    /// The node the thread is in now.
    pub fn current(&self) -> &Node {
        // SAFETY: `current` always points at the root or a node of this state; never freed.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Number of nodes (not counting the root).
    pub fn node_count(&self) -> u32 {
        self.node_count.load(Ordering::Acquire)
    }

    /// Kernel id of the thread.
    pub fn tid(&self) -> u32 {
        self.tid.load(Ordering::Relaxed)
    }

    fn top(&self) -> *mut usize {
        self.sp_top.load(Ordering::Relaxed)
    }

    fn top_value(&self) -> usize {
        // SAFETY: `sp_top` stays within [sp_base, sp_limit], all inside the mapping.
        unsafe { *self.top() }
    }

    /// Slow path of a hooked call (the fast path found no cached child, or no room).
    pub fn enter(&self, function: usize, caller_sp: usize) {
        STATS.slow_enters.fetch_add(1, Ordering::Relaxed);
        let top = self.top();
        if top >= self.sp_limit {
            self.skip_frame();
            return;
        }
        let current = self.current();
        let child = match current.children().find(|c| c.function() == function) {
            Some(child) => child,
            None => match self.new_node(current, function) {
                Some(child) => child,
                None => {
                    self.skip_frame();
                    return;
                }
            },
        };
        current
            .last_child
            .store(child as *const Node as *mut Node, Ordering::Relaxed);
        current
            .last_child_function
            .store(function, Ordering::Relaxed);
        self.cache_child(current, function, child);
        // SAFETY: `top < sp_limit`, so `top + 1` is within the mapping.
        let top = unsafe { top.add(1) };
        // SAFETY: as above; only this thread writes its shadow stack.
        unsafe { top.write(caller_sp) };
        self.sp_top.store(top, Ordering::Relaxed);
        child.calls.fetch_add(1, Ordering::Relaxed);
        self.current
            .store(child as *const Node as *mut Node, Ordering::Release);
    }

    /// Puts `(parent, function) -> child` first in its two-way set (the other way keeps the
    /// previous first entry), as the enter fast path probes slot `i`, then slot `i ^ 1`.
    fn cache_child(&self, parent: &Node, function: usize, child: &Node) {
        let index = child_cache_index(parent as *const Node as usize, function);
        // SAFETY: `child_cache` holds `1 << CHILD_CACHE_BITS` entries and `index` and
        // `index ^ 1` are below that (the hash keeps its top CHILD_CACHE_BITS bits); only this
        // thread uses its cache.
        let (first, second) = unsafe {
            (
                &*self.child_cache.add(index),
                &*self.child_cache.add(index ^ 1),
            )
        };
        let parent_ptr = parent as *const Node as *mut Node;
        let already_first = first.parent.load(Ordering::Relaxed) == parent_ptr
            && first.function.load(Ordering::Relaxed) == function;
        if !already_first {
            second
                .parent
                .store(first.parent.load(Ordering::Relaxed), Ordering::Relaxed);
            second
                .function
                .store(first.function.load(Ordering::Relaxed), Ordering::Relaxed);
            second
                .child
                .store(first.child.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        first.parent.store(parent_ptr, Ordering::Relaxed);
        first.function.store(function, Ordering::Relaxed);
        first
            .child
            .store(child as *const Node as *mut Node, Ordering::Relaxed);
    }

    fn skip_frame(&self) {
        self.overflow.fetch_add(1, Ordering::Relaxed);
        STATS.calls_unrecorded.fetch_add(1, Ordering::Relaxed);
    }

    /// Slow path of a leave or tail call that did not match the top frame.
    pub fn leave(&self, function: usize, caller_sp: usize) {
        // Frames deeper than the one leaving (a smaller caller SP) are dead: they were unwound
        // without a leave.
        loop {
            let v = self.top_value();
            if v == SENTINEL || v >= caller_sp {
                break;
            }
            self.pop();
            STATS.mismatches.fetch_add(1, Ordering::Relaxed);
        }
        if self.top_value() == caller_sp && self.current().function() == function {
            self.pop();
        } else if self.overflow.load(Ordering::Relaxed) > 0 {
            self.overflow.fetch_sub(1, Ordering::Relaxed);
        } else {
            STATS.mismatches.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `ExceptionUnwindFunctionEnter`: remember which frame is being unwound.
    pub fn unwind_function_enter(&self, function: usize) {
        self.unwinding.store(function, Ordering::Relaxed);
    }

    /// `ExceptionUnwindFunctionLeave`: the frame named by the last unwind-enter is gone.
    pub fn unwind_function_leave(&self) {
        let function = self.unwinding.swap(0, Ordering::Relaxed);
        if function != 0 && self.current().function() == function {
            self.pop();
        } else if self.overflow.load(Ordering::Relaxed) > 0 {
            self.overflow.fetch_sub(1, Ordering::Relaxed);
        } else {
            STATS.mismatches.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn pop(&self) {
        let current = self.current();
        let Some(parent) = current.parent() else {
            return;
        };
        let top = self.top();
        if top > self.sp_base {
            // SAFETY: `top > sp_base`, so `top - 1` is within the mapping.
            self.sp_top.store(unsafe { top.sub(1) }, Ordering::Relaxed);
        }
        self.current
            .store(parent as *const Node as *mut Node, Ordering::Release);
    }

    fn new_node(&self, parent: &Node, function: usize) -> Option<&Node> {
        if STATS.nodes.fetch_add(1, Ordering::Relaxed) >= NODE_BUDGET.load(Ordering::Relaxed) {
            return node_not_made();
        }
        let n = self.node_count.load(Ordering::Relaxed) as usize;
        let (c, i) = (n / CHUNK_NODES, n % CHUNK_NODES);
        let Some(chunk_slot) = self.chunks.get(c) else {
            return node_not_made();
        };
        let mut chunk = chunk_slot.load(Ordering::Relaxed);
        if chunk.is_null() {
            let nodes = Layout::array::<Node>(CHUNK_NODES).expect("chunk layout");
            let times = Layout::array::<NodeTimes>(CHUNK_NODES).expect("chunk layout");
            // SAFETY: both layouts have a non-zero size; all-zero bytes are a valid `Node` and a
            // valid `NodeTimes`.
            let (n, t) = unsafe {
                (
                    std::alloc::alloc_zeroed(nodes),
                    std::alloc::alloc_zeroed(times),
                )
            };
            if n.is_null() || t.is_null() {
                return node_not_made();
            }
            chunk = n.cast::<Node>();
            self.time_chunks[c].store(t.cast::<NodeTimes>(), Ordering::Release);
            chunk_slot.store(chunk, Ordering::Release);
        }
        // SAFETY: `i < CHUNK_NODES` and the chunk holds CHUNK_NODES zeroed nodes, never freed.
        let node = unsafe { &*chunk.add(i) };
        node.function.store(function, Ordering::Relaxed);
        node.parent
            .store(parent as *const Node as *mut Node, Ordering::Relaxed);
        node.id.store(n as u32 + 1, Ordering::Relaxed);
        node.next_sibling.store(
            parent.first_child.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        parent
            .first_child
            .store(node as *const Node as *mut Node, Ordering::Release);
        self.node_count.store(n as u32 + 1, Ordering::Release);
        Some(node)
    }

    /// The sampled time of `node`, a node of this state.
    pub fn times(&self, node: &Node) -> &NodeTimes {
        let id = node.id.load(Ordering::Relaxed) as usize;
        if id == 0 {
            return &self.root_times;
        }
        let n = id - 1;
        let chunk = self
            .time_chunks
            .get(n / CHUNK_NODES)
            .map_or(core::ptr::null_mut(), |c| c.load(Ordering::Acquire));
        if chunk.is_null() {
            return &self.root_times;
        }
        // SAFETY: the times chunk of node `n` was allocated (CHUNK_NODES zeroed entries) and
        // published before the node's id was; it is never freed.
        unsafe { &*chunk.add(n % CHUNK_NODES) }
    }

    /// Every node in creation order (so parents come before their children), with its
    /// parent's id (0 for children of the root).
    pub fn nodes(&self) -> impl Iterator<Item = (&Node, u32)> {
        let count = self.node_count() as usize;
        (0..count).filter_map(move |n| {
            let chunk = self.chunks.get(n / CHUNK_NODES)?.load(Ordering::Acquire);
            if chunk.is_null() {
                return None;
            }
            // SAFETY: node `n` was initialized before `node_count` was raised past it.
            let node = unsafe { &*chunk.add(n % CHUNK_NODES) };
            let parent_id = node.parent().map_or(0, |p| p.id.load(Ordering::Relaxed));
            Some((node, parent_id))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_new_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    fn path(state: &ThreadState) -> Vec<usize> {
        let mut out = Vec::new();
        let mut n = Some(state.current());
        while let Some(node) = n {
            if node.function() != 0 {
                out.push(node.function());
            }
            n = node.parent();
        }
        out.reverse();
        out
    }

    #[test]
    fn enter_leave_builds_exact_counts() {
        on_new_thread(|| {
            let st = state_for_current_thread().unwrap();
            // main(sp 1000) calls a (sp 900) three times; a calls b (sp 800) twice each time.
            st.enter(1, 1000);
            for _ in 0..3 {
                st.enter(2, 900);
                st.enter(3, 800);
                st.leave(3, 800);
                st.enter(3, 800);
                st.leave(3, 800);
                st.leave(2, 900);
            }
            assert_eq!(path(st), vec![1]);
            st.leave(1, 1000);
            assert_eq!(path(st), Vec::<usize>::new());
            let nodes: Vec<(usize, u64, u32)> = st
                .nodes()
                .map(|(n, p)| (n.function(), n.calls.load(Ordering::Relaxed), p))
                .collect();
            assert_eq!(nodes, vec![(1, 1, 0), (2, 3, 1), (3, 6, 2)]);
        });
    }

    #[test]
    fn recursion_is_a_chain_and_unwinds_by_stack_pointer() {
        on_new_thread(|| {
            let st = state_for_current_thread().unwrap();
            st.enter(7, 100_000);
            for depth in 1..=60_000usize {
                st.enter(8, 100_000 - depth);
            }
            assert_eq!(st.node_count(), 60_001);
            // An exception unwinds all 60,000 frames without leaves; then main returns.
            let before = STATS.mismatches.load(Ordering::Relaxed);
            st.leave(7, 100_000);
            assert_eq!(path(st), Vec::<usize>::new());
            assert!(STATS.mismatches.load(Ordering::Relaxed) - before >= 60_000);
        });
    }

    #[test]
    fn unwind_callbacks_pop_the_named_frame() {
        on_new_thread(|| {
            let st = state_for_current_thread().unwrap();
            st.enter(1, 1000);
            st.enter(2, 900);
            st.enter(3, 800);
            st.unwind_function_enter(3);
            st.unwind_function_leave();
            st.unwind_function_enter(2);
            st.unwind_function_leave();
            st.unwind_function_enter(1); // the catcher: no leave follows
            assert_eq!(path(st), vec![1]);
            st.enter(4, 900); // the catch block calls something
            st.leave(4, 900);
            st.leave(1, 1000);
            assert_eq!(path(st), Vec::<usize>::new());
        });
    }

    #[test]
    fn child_cache_index_stays_in_range_and_spreads() {
        let mut seen = std::collections::HashSet::new();
        for parent in (0x7f00_0000_1000usize..).step_by(80).take(64) {
            for function in (0x7f10_0000_2000usize..).step_by(24).take(64) {
                let i = child_cache_index(parent, function);
                assert!(i < 1 << CHILD_CACHE_BITS);
                seen.insert(i);
            }
        }
        assert!(
            seen.len() > 3500,
            "4096 pairs hit only {} slots",
            seen.len()
        );
    }

    #[test]
    fn tail_call_replaces_the_frame() {
        on_new_thread(|| {
            let st = state_for_current_thread().unwrap();
            st.enter(1, 1000);
            st.enter(2, 900);
            st.leave(2, 900); // the tailcall hook of 2
            st.enter(3, 900); // 3 takes 2's place, returning to 1
            assert_eq!(path(st), vec![1, 3]);
            st.leave(3, 900);
            st.leave(1, 1000);
            assert_eq!(path(st), Vec::<usize>::new());
        });
    }
}
