//! A peer to check clrprof's CPU profiles against: Linux `perf` (Debian's `linux-perf`), which
//! samples in the kernel. Both become flat profiles, each function's share of the self CPU
//! time, under names normalized so that one function has one name whichever tool named it,
//! and the agreement of two flat profiles is their histogram intersection (the sum over
//! functions of the smaller share: 1 when they are the same, 0 when they share nothing).
//!
//! perf names JIT-compiled code from the runtime's perf map (`/tmp/perf-PID.map`, written when
//! `DOTNET_PerfMapEnabled=1`); it cannot name precompiled (ReadyToRun) code, so the programs
//! compared run with `DOTNET_ReadyToRun=0` under both tools ([`PEER_ENV`]). Time in the kernel
//! is charged to the user frame that entered it, as clrprof charges it: a sample's first
//! frame outside the kernel.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use clrprof_analysis::model::{FrameKind, Profile, SampleKind};

use crate::run_command;

/// The environment of a program compared under both tools: every method JIT-compiled (perf
/// cannot name precompiled code) and the runtime's perf map written, on both runtimes.
pub const PEER_ENV: &[(&str, &str)] = &[
    ("DOTNET_ReadyToRun", "0"),
    ("COMPlus_ReadyToRun", "0"),
    ("DOTNET_PerfMapEnabled", "1"),
    ("COMPlus_PerfMapEnabled", "1"),
    // CoreCLR 3.1 writes its perf map into TMPDIR; perf reads it from /tmp.
    ("TMPDIR", "/tmp"),
    // .NET 7 and later map JIT-compiled code twice (W^X) from a deleted memfd, which perf
    // does not look up in the perf map: one anonymous mapping, as in 3.1.
    ("DOTNET_EnableWriteXorExecute", "0"),
];

/// A flat profile: each function's share of the self CPU time (the shares add up to 1).
pub type Flat = HashMap<String, f64>;

/// Whether `perf` can sample here: `Err` says why not (not installed, or the kernel refuses
/// perf events to this process).
pub fn perf_usable() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-e", "task-clock", "--", "true"])
        .output()
        .map_err(|e| format!("cannot run perf ({e}); `cargo xtask setup` installs linux-perf"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "perf cannot count task-clock here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `perf record` sampling each thread's CPU time every millisecond with call chains, writing
/// `data`: the program to run follows (`-- dotnet program.dll ...`).
pub fn perf_record_command(data: &Path) -> Command {
    perf_record_command_every(data, 1_000_000)
}

/// [`perf_record_command`] with a sample every `period_ns` of a thread's CPU time.
pub fn perf_record_command_every(data: &Path, period_ns: u64) -> Command {
    let mut cmd = Command::new("perf");
    // Sample times on the realtime clock, which clrprof's session start is on too.
    cmd.args(["record", "-q", "-k", "realtime", "-e", "task-clock", "-c"])
        .arg(period_ns.to_string())
        .args(["-g", "-o"])
        .arg(data)
        .arg("--");
    cmd
}

/// `perf record` (as [`perf_record_command_every`] runs it) around `cmd`, with `cmd`'s
/// arguments, environment and directory: to see one run of a program under several tools,
/// `cmd` being a `clrprof record` of it (perf follows the program, which `clrprof` starts).
pub fn under_perf(cmd: &Command, data: &Path, period_ns: u64) -> Command {
    let mut wrapped = perf_record_command_every(data, period_ns);
    wrapped.arg(cmd.get_program()).args(cmd.get_args());
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

/// The flat profile of what `perf record` wrote to `data` (the perf map of the process is
/// mended first, and removed after): of its first process.
pub fn flat_of_perf_data(data: &Path) -> Result<Flat, String> {
    let pid = perf_script(data, "pid")?
        .split_whitespace()
        .next()
        .and_then(|p| p.parse::<u32>().ok())
        .ok_or("perf recorded no sample")?;
    Ok(flats_of_perf_data(&[data], pid, 0)?.remove(0))
}

/// The flat profiles of process `pid` from `from_unix_ns` on, in what several `perf record`s
/// of it wrote to `datas` (the perf map of the process is mended first, and removed after).
pub fn flats_of_perf_data(
    datas: &[&Path],
    pid: u32,
    from_unix_ns: u64,
) -> Result<Vec<Flat>, String> {
    mend_perf_map(pid);
    let flats = datas
        .iter()
        .map(|data| {
            perf_script(data, "comm,pid,tid,time,period,ip,sym,dso")
                .map(|text| flat_of_perf_script(&text, pid, from_unix_ns))
        })
        .collect();
    remove_perf_maps(pid);
    flats
}

/// `perf script -F <fields> -i <data>`'s output.
fn perf_script(data: &Path, fields: &str) -> Result<String, String> {
    let out = run_command(
        Command::new("perf")
            .args(["script", "--ns", "-F", fields, "-i"])
            .arg(data),
    );
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("perf script failed: {out:?}"))
    }
}

/// Mends the perf map of process `pid` as .NET 8.0.4 writes it: some entries end with a NUL
/// byte instead of a newline (`...::Initialize(int32)[QuickJitted]\0` then the next entry),
/// and perf then names neither's code after the first.
fn mend_perf_map(pid: u32) {
    let path = format!("/tmp/perf-{pid}.map");
    if let Ok(mut bytes) = std::fs::read(&path)
        && bytes.contains(&0)
    {
        bytes
            .iter_mut()
            .filter(|b| **b == 0)
            .for_each(|b| *b = b'\n');
        let _ = std::fs::write(&path, bytes);
    }
}

/// Removes the perf map files of process `pid` (the runtime never does).
pub fn remove_perf_maps(pid: u32) {
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    let _ = std::fs::remove_file(format!("/tmp/perfinfo-{pid}.map"));
}

/// The header of a sample in `perf script --ns -F comm,pid,tid,time,period,...` output:
/// `COMM PID/TID SECONDS.NANOSECONDS: PERIOD` (the command may hold spaces: `.NET
/// ThreadPool`; the time is left out where it was not asked for).
struct SampleHeader<'a> {
    comm: &'a str,
    pid: u32,
    time_ns: Option<u64>,
    period: f64,
}

impl<'a> SampleHeader<'a> {
    fn parse(line: &'a str) -> Option<SampleHeader<'a>> {
        let (rest, period) = line.trim_end().rsplit_once(char::is_whitespace)?;
        let (mut rest, mut last) = rest.trim_end().rsplit_once(char::is_whitespace)?;
        let mut time_ns = None;
        if let Some(time) = last.strip_suffix(':') {
            let (secs, nanos) = time.split_once('.')?;
            time_ns = Some(secs.parse::<u64>().ok()? * 1_000_000_000 + nanos.parse::<u64>().ok()?);
            (rest, last) = rest.trim_end().rsplit_once(char::is_whitespace)?;
        }
        let (pid, _tid) = last.split_once('/')?;
        Some(SampleHeader {
            comm: rest.trim(),
            pid: pid.parse().ok()?,
            time_ns,
            period: period.parse().ok()?,
        })
    }
}

/// The flat profile of process `pid`'s program from `from_unix_ns` on (the start of a
/// clrprof session: perf also sees the runtime's start before the agent is loaded, 1-2% of
/// this test program's CPU), in `perf script --ns -F comm,pid,tid,time,period,ip,sym,dso`
/// output (with call chains: a header line per sample, then a tab-indented line per frame):
/// each sample's period charged to its first frame outside the kernel. What perf saw of
/// clrprof's agent is left out, as clrprof leaves it out of its profile (it reports it as the
/// profiler's cost): its threads (named `clrprof-...`) and samples with any of its frames
/// (its signal handler, its callbacks, and what they call).
pub fn flat_of_perf_script(text: &str, pid: u32, from_unix_ns: u64) -> Flat {
    let mut weights: HashMap<String, f64> = HashMap::new();
    // The sample being read: its period, whether it is the program's, its first frame
    // outside the kernel, and whether any frame is the agent's.
    let mut period = 0.0;
    let mut program = false;
    let mut first: Option<String> = None;
    let mut agent = false;
    let mut finish = |period: f64, program: bool, first: Option<String>, agent: bool| {
        if let (true, Some(name), false) = (program, first, agent) {
            *weights.entry(name).or_default() += period;
        }
    };
    for line in text.lines() {
        if !line.starts_with('\t') {
            // A sample's header (or a blank line between samples).
            if let Some(h) = SampleHeader::parse(line) {
                finish(period, program, first.take(), agent);
                period = h.period;
                program = h.pid == pid
                    && !h.comm.starts_with("clrprof-")
                    && h.time_ns.unwrap_or(u64::MAX) >= from_unix_ns;
                agent = false;
            }
            continue;
        }
        let Some((ip_sym, dso)) = line.trim().rsplit_once(" (") else {
            continue;
        };
        let dso = dso.trim_end_matches(')');
        if dso == "[kernel.kallsyms]" || dso.starts_with("[kernel") {
            continue;
        }
        agent |= dso.contains("libclrprof_agent");
        if first.is_none() {
            let sym = ip_sym.split_once(' ').map_or("", |(_, s)| s).trim();
            first = Some(perf_name(sym, dso));
        }
    }
    finish(period, program, first, agent);
    normalize(weights)
}

/// The flat self CPU profile of a clrprof profile (all threads).
pub fn clrprof_flat(p: &Profile) -> Flat {
    let mut weights: HashMap<String, f64> = HashMap::new();
    for t in &p.threads {
        for s in t.samples.iter().filter(|s| s.kind == SampleKind::Cpu) {
            let Some(stack) = s.stack else { continue };
            let Some(&leaf) = p.stack_frames(stack).last() else {
                continue;
            };
            let f = p.frame(leaf);
            if f.kind == FrameKind::Truncated && f.name.starts_with("[CPU ") {
                // CPU after a thread's last sample, or of samples missed: no place is known
                // for it, and perf drops what its last period did not reach, without saying.
                continue;
            }
            let name = match f.kind {
                FrameKind::Managed | FrameKind::Generated => managed_name(&f.name),
                FrameKind::Native => native_name(&f.name, &f.module),
                _ => f.name.clone(),
            };
            *weights.entry(name).or_default() += s.cpu_ns as f64;
        }
    }
    normalize(weights)
}

/// The flat profile of the clrprof trace at `trace`, and the id of the process it recorded.
pub fn flat_of_trace(trace: &Path) -> Result<(Flat, Option<u32>), String> {
    let loaded = clrprof_analysis::trace::load(trace)
        .map_err(|e| format!("cannot read {}: {e}", trace.display()))?;
    let pid = loaded.session.as_ref().map(|s| s.pid);
    Ok((clrprof_flat(&clrprof_analysis::profile::of(&loaded)), pid))
}

/// The name of every runtime stub in a flat profile.
const STUBS: &str = "[runtime stubs]";

/// The histogram intersection of two flat profiles: how much they agree, from 0 to 1.
pub fn agreement(a: &Flat, b: &Flat) -> f64 {
    a.iter()
        .map(|(k, &va)| va.min(b.get(k).copied().unwrap_or(0.0)))
        .sum()
}

/// The functions on which two flat profiles differ most (for failure messages).
pub fn largest_differences(a: &Flat, b: &Flat, n: usize) -> Vec<(String, f64, f64)> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<(String, f64, f64)> = keys
        .into_iter()
        .map(|k| {
            (
                k.clone(),
                a.get(k).copied().unwrap_or(0.0),
                b.get(k).copied().unwrap_or(0.0),
            )
        })
        .collect();
    rows.sort_by(|x, y| (y.1 - y.2).abs().total_cmp(&(x.1 - x.2).abs()));
    rows.truncate(n);
    rows
}

fn normalize(weights: HashMap<String, f64>) -> Flat {
    let total: f64 = weights.values().sum();
    if total <= 0.0 {
        return Flat::new();
    }
    weights.into_iter().map(|(k, v)| (k, v / total)).collect()
}

/// A perf frame's name: JIT-compiled code named by the runtime's perf map (managed names),
/// native code by its symbol, code perf cannot name by its module.
fn perf_name(sym: &str, dso: &str) -> String {
    let file = dso.rsplit('/').next().unwrap_or(dso);
    if sym.is_empty() || sym == "[unknown]" {
        return format!("[{file}]");
    }
    if file.starts_with("perf-") && file.ends_with(".map") {
        // The runtime's stubs: `stub<12> GenerateResolveStub<GenerateResolveStub>`.
        if sym.starts_with("stub<") {
            return STUBS.to_string();
        }
        return managed_name(sym);
    }
    native_name(sym, file)
}

/// A native function's name: its symbol without parameters (perf demangles C++ names with
/// them), the vDSO's prefix or glibc's internal prefixes (the tools pick different aliases of
/// one address: `__munmap` and `munmap`); a function clrprof names by its module and offset
/// only (a stripped library) by its module, as perf does.
fn native_name(name: &str, module: &str) -> String {
    let file = module.rsplit('/').next().unwrap_or(module);
    // clrprof names stubs by kind (`[stub: interface resolve]`), perf by the function that
    // made them: one name for all.
    if name.starts_with("[stub") || name.starts_with("[runtime stub") {
        return STUBS.to_string();
    }
    if name.contains("!+0x") || name.starts_with("[") {
        return format!("[{file}]");
    }
    let name = name.split('(').next().unwrap_or(name).trim();
    let name = name.strip_prefix("__vdso_").unwrap_or(name);
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    let name = name.trim_start_matches('_');
    let name = name.strip_prefix("libc_").unwrap_or(name);
    // glibc's large-file aliases (`mmap64` of `__mmap`, `pread64`): one name.
    let name = match name.strip_suffix("64") {
        Some(base) if file.starts_with("libc.") => base,
        _ => name,
    };
    name.to_string()
}

/// A managed method's name as both tools give it: `Namespace.Type.Method`, without
/// parameters, generic arguments, return type, assembly or tier, nested types joined with `.`,
/// C# keywords spelled as the types they stand for.
pub fn managed_name(name: &str) -> String {
    // The perf map's form: `[instance] <return type> [<assembly>] Type::Method(args)[tier]`.
    // clrprof's bodies that share a name are numbered (`M() #2`): the number goes with the
    // parameters.
    let head = name.split('(').next().unwrap_or(name).trim();
    let mut out = String::with_capacity(head.len());
    let mut depth = 0usize;
    let mut prev = '.';
    let mut chars = head.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // Generic arguments follow a name: `List<int>`, `` Dictionary`2[A,B] ``.
            '<' if depth > 0 || prev.is_alphanumeric() || prev == '_' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            '`' if depth == 0 => {
                while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                    chars.next();
                }
                if chars.peek() == Some(&'[') {
                    let mut brackets = 0;
                    for c in chars.by_ref() {
                        match c {
                            '[' => brackets += 1,
                            ']' => {
                                brackets -= 1;
                                if brackets == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ if depth > 0 => {}
            c => {
                out.push(c);
                prev = c;
            }
        }
    }
    let out = out.rsplit(' ').next().unwrap_or(&out);
    let out = out.replace("::", ".").replace('+', ".");
    // `string.Concat` is `System.String.Concat`.
    let (ty, method) = out.rsplit_once('.').unwrap_or(("", &out));
    let ty = match ty {
        "string" => "System.String",
        "object" => "System.Object",
        "int" => "System.Int32",
        "uint" => "System.UInt32",
        "long" => "System.Int64",
        "ulong" => "System.UInt64",
        "short" => "System.Int16",
        "ushort" => "System.UInt16",
        "byte" => "System.Byte",
        "sbyte" => "System.SByte",
        "bool" => "System.Boolean",
        "char" => "System.Char",
        "double" => "System.Double",
        "float" => "System.Single",
        "decimal" => "System.Decimal",
        "nint" => "System.IntPtr",
        "nuint" => "System.UIntPtr",
        // A DynamicMethod's: the runtime's perf map says `dynamicClass`, its stack traces (and
        // clrprof) `DynamicClass`.
        "dynamicClass" => "DynamicClass",
        ty => ty,
    };
    if ty.is_empty() {
        method.to_string()
    } else {
        format!("{ty}.{method}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_method_one_name_whichever_tool_named_it() {
        for (perf, ours) in [
            (
                "bool [Anonymously Hosted DynamicMethods Assembly] dynamicClass::Regex1_TryMatchAtCurrentPosition(class System.Text.RegularExpressions.RegexRunner,valuetype System.ReadOnlySpan`1<wchar>)[Optimized]",
                "DynamicClass.Regex1_TryMatchAtCurrentPosition(RegexRunner, ReadOnlySpan<char>)",
            ),
            (
                "instance void [System.Private.CoreLib] System.Runtime.InteropServices.Marshal::WriteByte(native int,int32,uint8)[OptimizedTier1]",
                "System.Runtime.InteropServices.Marshal.WriteByte(nint, int, byte)",
            ),
            (
                "int64 [KernelTime] KernelTime::Arith(int64)[QuickJitted]",
                "KernelTime.Arith(long)",
            ),
            (
                "instance bool [System.Private.CoreLib] System.Collections.Generic.Dictionary`2[System.__Canon,System.__Canon]::FindValue(!0)[Optimized]",
                "System.Collections.Generic.Dictionary<__Canon, __Canon>.FindValue(__Canon)",
            ),
            (
                "string [System.Private.CoreLib] System.String::Concat(string,string)[Optimized]",
                "string.Concat(string, string)",
            ),
            (
                "void [App] App.Outer+Inner::<Main>b__0_0()[Optimized]",
                "App.Outer.Inner.<Main>b__0_0() #2",
            ),
        ] {
            assert_eq!(managed_name(perf), managed_name(ours), "{perf}");
        }
        assert_eq!(
            native_name("MethodDesc::DoPrestub(MethodTable*)", "libcoreclr.so"),
            "MethodDesc::DoPrestub"
        );
        assert_eq!(
            native_name("libcoreclr.so!+0x1e15c0", "libcoreclr.so"),
            "[libcoreclr.so]"
        );
        assert_eq!(
            perf_name("[unknown]", "/x/libcoreclr.so"),
            "[libcoreclr.so]"
        );
        assert_eq!(perf_name("__vdso_clock_gettime", "[vdso]"), "clock_gettime");
        assert_eq!(
            perf_name("__munmap", "/lib/libc.so.6"),
            native_name("munmap", "libc.so.6")
        );
        assert_eq!(perf_name("__GI___libc_read", "/lib/libc.so.6"), "read");
        assert_eq!(
            perf_name("__mmap", "/lib/libc.so.6"),
            native_name("mmap64", "libc.so.6")
        );
        assert_eq!(
            perf_name(
                "stub<12> GenerateResolveStub<GenerateResolveStub>",
                "/tmp/perf-42.map"
            ),
            native_name("[stub: interface resolve]", "")
        );
    }

    #[test]
    fn kernel_time_goes_to_the_frame_that_entered_the_kernel() {
        let script = "\
          dotnet 19133/19133 1700000000.000000100:    1000000 
\tffffffff821e86a7 clear_page_erms ([kernel.kallsyms])
\tffffffff81000c82 asm_exc_page_fault ([kernel.kallsyms])
\t7f00 instance void [System.Private.CoreLib] System.Runtime.InteropServices.Marshal::WriteByte(native int,int32,uint8)[Optimized] (/tmp/perf-19133.map)
\t7f10 int64 [K] K::Main()[Optimized] (/tmp/perf-19133.map)

          dotnet 19133/19133    3000000 
\t7f20 int64 [K] K::Arith(int64)[Optimized] (/tmp/perf-19133.map)
";
        let flat = flat_of_perf_script(script, 19133, 0);
        assert_eq!(
            flat["System.Runtime.InteropServices.Marshal.WriteByte"],
            0.25
        );
        assert_eq!(flat["K.Arith"], 0.75);
        let same = agreement(&flat, &flat);
        assert!((same - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_agent_other_processes_and_what_came_before_the_session_are_left_out() {
        let script = "\
  .NET ThreadPool 19133/19140    2000000 
\t7f20 int64 [K] K::Arith(int64)[Optimized] (/tmp/perf-19133.map)

  clrprof-sampler 19133/19135    5000000 
\t7100 clrprof_agent::sampler::tick (/work/target/release/libclrprof_agent.so)

          dotnet 19133/19133    3000000 
\t7300 syscall (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t7200 clrprof_agent::recorder::capture::handler (/work/target/release/libclrprof_agent.so)
\t7f20 int64 [K] K::Arith(int64)[Optimized] (/tmp/perf-19133.map)

          dotnet 19133/19133    1000000 
\tffffffff81000c82 asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
\t7200 clrprof_agent::recorder::capture::handler (/work/target/release/libclrprof_agent.so)
\t7f20 int64 [K] K::Arith(int64)[Optimized] (/tmp/perf-19133.map)

         clrprof 19120/19120    7000000 
\t5000 clrprof::main (/work/target/release/clrprof)

          dotnet 19133/19133 1700000000.000000100:    9000000 
\t7f20 int64 [K] K::Arith(int64)[Optimized] (/tmp/perf-19133.map)

          dotnet 19133/19133 1699999999.999999999:    9000000 
\t7f30 int64 [K] K::Main()[Optimized] (/tmp/perf-19133.map)
";
        let flat = flat_of_perf_script(script, 19133, 1_700_000_000_000_000_000);
        assert_eq!(flat.len(), 1, "{flat:?}");
        assert_eq!(flat["K.Arith"], 1.0);
    }
}
