//! The `with_info` scenario: slow-path hooks that read arguments and return values.
//!
//! Every function is hooked (so the xmm-preserving wrappers run around every call of the test
//! program); the `FloatMath` methods are the targets, found by name in the function id mapper,
//! which keeps the FunctionID as the client id. For each target the first call's arguments
//! and return value are formatted by parameter type (`double`, `float`, `int`, `long`,
//! `Pair`) and by return length (4 = float, 8 = double, 16/32 = 2/4 doubles).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use clrprof_sdk::elt::{self, ArgumentRange, EltInfoHandlers};
use clrprof_sdk::{ClientId, EltInfo, EventMask, FunctionId, ProfilerInfo, Result};

use super::{INFO, NAMER, emit, error, lock};

const MAX_TARGETS: usize = 16;

struct Target {
    function: AtomicUsize,
    entered: AtomicBool,
    left: AtomicBool,
    enter: AtomicU64,
    leave: AtomicU64,
    tailcall: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const NO_TARGET: Target = Target {
    function: AtomicUsize::new(0),
    entered: AtomicBool::new(false),
    left: AtomicBool::new(false),
    enter: AtomicU64::new(0),
    leave: AtomicU64::new(0),
    tailcall: AtomicU64::new(0),
};

static TARGETS: [Target; MAX_TARGETS] = [NO_TARGET; MAX_TARGETS];
static TARGET_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Name and parameter types of each target, by index.
static TARGET_NAMES: Mutex<Vec<(String, Vec<String>)>> = Mutex::new(Vec::new());
static HOOKS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

pub fn start(info: &ProfilerInfo) -> Result<()> {
    info.set_event_mask(
        EventMask::MONITOR_ENTERLEAVE
            | EventMask::ENABLE_FUNCTION_ARGS
            | EventMask::ENABLE_FUNCTION_RETVAL
            | EventMask::ENABLE_FRAME_INFO,
    )?;
    elt::set_function_id_mapper(info, map)?;
    elt::install_hooks_with_info(
        info,
        EltInfoHandlers {
            enter: Some(on_enter),
            leave: Some(on_leave),
            tailcall: Some(on_tailcall),
        },
    )
}

fn map(function: FunctionId) -> Option<usize> {
    let info = INFO.get()?;
    if let Ok(n) = NAMER.get_function_name(info, function)
        && n.type_name == "FloatMath"
    {
        let mut names = lock(&TARGET_NAMES);
        let index = names.len();
        if index < MAX_TARGETS {
            let params = n
                .signature
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(", ")
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
            names.push((n.full_name(), params));
            TARGETS[index].function.store(function.0, Ordering::Release);
            TARGET_COUNT.store(index + 1, Ordering::Release);
        }
    }
    Some(function.0)
}

fn target(id: ClientId) -> Option<(usize, &'static Target)> {
    let n = TARGET_COUNT.load(Ordering::Acquire);
    TARGETS[..n]
        .iter()
        .enumerate()
        .find(|(_, t)| t.function.load(Ordering::Acquire) == id.0)
}

fn on_enter(id: ClientId, elt: EltInfo) {
    HOOKS[0].fetch_add(1, Ordering::Relaxed);
    let Some((index, t)) = target(id) else { return };
    t.enter.fetch_add(1, Ordering::Relaxed);
    if t.entered.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(info) = INFO.get() else { return };
    let (name, params) = lock(&TARGET_NAMES)[index].clone();
    match info.get_function_enter3_info(FunctionId(id.0), elt) {
        Ok(enter) => {
            let values: Vec<String> = enter
                .args
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    // SAFETY: inside the enter hook that obtained the ranges.
                    unsafe { format_arg(params.get(i).map(String::as_str), r) }
                })
                .collect();
            emit(format!(
                "enter\t{name}\t{}\ttotal={}\tframe={}",
                values.join(" "),
                enter.args.total_size(),
                !enter.frame.is_null()
            ));
        }
        Err(e) => error(&format!("GetFunctionEnter3Info {name}"), e),
    }
}

fn on_leave(id: ClientId, elt: EltInfo) {
    HOOKS[1].fetch_add(1, Ordering::Relaxed);
    let Some((index, t)) = target(id) else { return };
    t.leave.fetch_add(1, Ordering::Relaxed);
    if t.left.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(info) = INFO.get() else { return };
    let name = lock(&TARGET_NAMES)[index].0.clone();
    match info.get_function_leave3_info(FunctionId(id.0), elt) {
        Ok(leave) => {
            let value = match leave.retval {
                // SAFETY: inside the leave hook that obtained the range.
                Some(r) => unsafe { format_by_len(&r) },
                None => "void".to_string(),
            };
            emit(format!("leave\t{name}\t{value}"));
        }
        Err(e) => error(&format!("GetFunctionLeave3Info {name}"), e),
    }
}

fn on_tailcall(id: ClientId, elt: EltInfo) {
    HOOKS[2].fetch_add(1, Ordering::Relaxed);
    let Some((_, t)) = target(id) else { return };
    t.tailcall.fetch_add(1, Ordering::Relaxed);
    if let Some(info) = INFO.get()
        && let Err(e) = info.get_function_tailcall3_info(FunctionId(id.0), elt)
    {
        error("GetFunctionTailcall3Info", e);
    }
}

/// Formats an argument by its C# type.
///
/// # Safety
/// Only inside the hook that obtained `r`.
unsafe fn format_arg(ty: Option<&str>, r: &ArgumentRange) -> String {
    // SAFETY: forwarded: we are inside the hook.
    unsafe {
        let value = match ty {
            Some("double") => r.read::<f64>().map(|v| v.to_string()),
            Some("float") => r.read::<f32>().map(|v| v.to_string()),
            Some("int") => r.read::<i32>().map(|v| v.to_string()),
            Some("long") => r.read::<i64>().map(|v| v.to_string()),
            Some("Pair") => r.read::<[f64; 2]>().map(|[x, y]| format!("Pair({x}, {y})")),
            _ => None,
        };
        value.unwrap_or_else(|| format!("{}:{}", ty.unwrap_or("?"), hex(r.bytes())))
    }
}

/// Formats a floating-point return value by its length.
///
/// # Safety
/// Only inside the hook that obtained `r`.
unsafe fn format_by_len(r: &ArgumentRange) -> String {
    // SAFETY: forwarded: we are inside the hook.
    unsafe {
        match r.len {
            4 => r.read::<f32>().map(|v| v.to_string()),
            8 => r.read::<f64>().map(|v| v.to_string()),
            16 => r.read::<[f64; 2]>().map(|[a, b]| format!("({a}, {b})")),
            32 => r
                .read::<[f64; 4]>()
                .map(|[a, b, c, d]| format!("({a}, {b}, {c}, {d})")),
            _ => None,
        }
        .unwrap_or_else(|| format!("len{}:{}", r.len, hex(r.bytes())))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn report(_info: &ProfilerInfo) {
    let names = lock(&TARGET_NAMES).clone();
    for (i, (name, _)) in names.iter().enumerate() {
        let t = &TARGETS[i];
        emit(format!(
            "calls\t{name}\t{}\t{}\t{}",
            t.enter.load(Ordering::Relaxed),
            t.leave.load(Ordering::Relaxed),
            t.tailcall.load(Ordering::Relaxed)
        ));
    }
    emit(format!(
        "hooks\tenter={}\tleave={}\ttail={}",
        HOOKS[0].load(Ordering::Relaxed),
        HOOKS[1].load(Ordering::Relaxed),
        HOOKS[2].load(Ordering::Relaxed)
    ));
}
