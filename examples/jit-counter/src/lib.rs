//! Example profiler: counts JIT compilations per module; at shutdown writes `<module file> <count>`
//! lines to the file named by `JIT_COUNTER_OUTPUT` (or stderr). Load it with
//! `CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER=<CLSID below> CORECLR_PROFILER_PATH=<this .so>`.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use clrprof_sdk::{EventMask, FunctionId, ModuleId, Profiler, ProfilerInfo, Result};

#[derive(Default)]
struct JitCounter {
    info: OnceLock<ProfilerInfo>,
    counts: Mutex<HashMap<ModuleId, u64>>,
}

impl Profiler for JitCounter {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        info.set_event_mask(EventMask::MONITOR_JIT_COMPILATION)?;
        let _ = self.info.set(info);
        Ok(())
    }

    // Runs on many threads at once: the counts are behind a mutex.
    fn jit_compilation_started(&self, function: FunctionId, _safe_to_block: bool) -> Result<()> {
        if let Some(info) = self.info.get() {
            let module = info.get_function_info(function)?.module;
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            *counts.entry(module).or_default() += 1;
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        let mut per_file = BTreeMap::<String, u64>::new();
        for (&module, &count) in self.counts.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let path = info.get_module_info(module)?.name;
            let file = path.rsplit(['/', '\\']).next().unwrap_or_default();
            *per_file.entry(file.to_string()).or_default() += count;
        }
        let report: String = per_file
            .iter()
            .map(|(file, n)| format!("{file} {n}\n"))
            .collect();
        let written = match std::env::var_os("JIT_COUNTER_OUTPUT") {
            Some(path) => std::fs::write(path, &report),
            None => std::io::stderr().write_all(report.as_bytes()),
        };
        if let Err(e) = written {
            eprintln!("jit-counter: cannot write the report: {e}");
        }
        Ok(())
    }
}

clrprof_sdk::export_profiler!(JitCounter, "{6C0F5B1E-2A4D-4E8B-9F37-5D1C8A2E7B40}");
