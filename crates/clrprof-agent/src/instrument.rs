//! What coverage (`coverage.rs`) and count mode (`count.rs`) share to add probes to the IL
//! of the methods the JIT compiles: which modules to instrument, the methods already
//! instrumented, and installing a rewritten body.
//!
//! Which modules: those loaded from a file outside the framework's directory (the directory
//! of `System.Private.CoreLib`), or, when an include list names assemblies, those assemblies
//! only; never those of the exclude list. An assembly is named by its file name without the
//! extension.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::il::Method;
use clrprof_sdk::{FunctionId, ModuleId, ProfilerInfo, Result, Token};

/// A method: its module and MethodDef token.
pub type MethodKey = (ModuleId, Token);

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The assembly name the filters use: the file name without its extension.
pub fn assembly_name(path: &str) -> &str {
    Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path)
}

/// Which modules to instrument.
#[derive(Default)]
pub struct ModuleFilter {
    include: Vec<String>,
    exclude: Vec<String>,
    framework_dir: OnceLock<PathBuf>,
    /// The decision for each module seen so far.
    modules: Mutex<HashMap<ModuleId, bool>>,
}

impl ModuleFilter {
    /// Instruments the `include` assemblies (every assembly outside the framework if empty)
    /// except the `exclude` ones.
    pub fn new(include: &[String], exclude: &[String]) -> ModuleFilter {
        ModuleFilter {
            include: include.to_vec(),
            exclude: exclude.to_vec(),
            ..ModuleFilter::default()
        }
    }

    /// Whether precompiled (ReadyToRun) code must be turned off, so that the framework
    /// assemblies an include list may name are JIT-compiled and can be instrumented.
    pub fn needs_jit_for_framework(&self) -> bool {
        !self.include.is_empty()
    }

    /// The callbacks `needed` by a feature that rewrites the IL of this filter's modules, with
    /// precompiled code turned off where the framework must be JIT-compiled.
    pub fn event_mask(&self, needed: EventMask) -> (EventMask, HighEventMask) {
        let mut mask = needed;
        if self.needs_jit_for_framework() {
            mask |= EventMask::DISABLE_ALL_NGEN_IMAGES;
        }
        (mask, HighEventMask::empty())
    }

    /// `ModuleLoadFinished`: notes where the framework lives (the first module loaded is the
    /// core library).
    pub fn module_loaded(&self, info: &ProfilerInfo, module: ModuleId) {
        if self.framework_dir.get().is_some() {
            return;
        }
        if let Ok(m) = info.get_module_info(module)
            && assembly_name(&m.name) == "System.Private.CoreLib"
            && let Some(dir) = Path::new(&m.name).parent()
        {
            let _ = self.framework_dir.set(dir.to_path_buf());
        }
    }

    /// Whether to instrument the methods of `module`. Decided the first time a method of the
    /// module is compiled (not at its load), and remembered only once the runtime could say
    /// what the module is: a module the agent could not look at yet is asked about again.
    pub fn wants(&self, info: &ProfilerInfo, module: ModuleId) -> bool {
        if let Some(&wanted) = lock(&self.modules).get(&module) {
            return wanted;
        }
        let Ok(m) = info.get_module_info(module) else {
            return false;
        };
        let path = Path::new(&m.name);
        let name = assembly_name(&m.name);
        let wanted =
            if m.base_address == 0 || !path.is_absolute() || self.exclude.iter().any(|e| e == name)
            {
                false
            } else if !self.include.is_empty() {
                self.include.iter().any(|i| i == name)
            } else {
                match self.framework_dir.get() {
                    Some(dir) => path.parent() != Some(dir.as_path()),
                    // The core library was not seen yet: nothing outside it runs before it.
                    None => return false,
                }
            };
        lock(&self.modules).insert(module, wanted);
        wanted
    }

    /// The modules instrumented so far, in id order.
    pub fn wanted(&self) -> Vec<ModuleId> {
        let mut modules: Vec<ModuleId> = lock(&self.modules)
            .iter()
            .filter(|(_, wanted)| **wanted)
            .map(|(m, _)| *m)
            .collect();
        modules.sort();
        modules
    }
}

/// The methods seen at JIT time, each with what instrumenting it gave: `None` while it is
/// being instrumented, or when it could not be.
pub struct Methods<T> {
    map: Mutex<HashMap<MethodKey, Option<T>>>,
}

impl<T> Default for Methods<T> {
    fn default() -> Self {
        Methods {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Methods<T> {
    /// Reserves `key` for instrumenting: false if it was seen before. The caller then
    /// instruments the method without holding the lock (the runtime is called meanwhile)
    /// and calls [`Methods::set`].
    pub fn reserve(&self, key: MethodKey) -> bool {
        let mut map = lock(&self.map);
        if map.contains_key(&key) {
            return false;
        }
        map.insert(key, None);
        true
    }

    /// What instrumenting `key` gave.
    pub fn set(&self, key: MethodKey, value: T) {
        lock(&self.map).insert(key, Some(value));
    }

    /// The methods and what instrumenting them gave, locked.
    pub fn lock(&self) -> MutexGuard<'_, HashMap<MethodKey, Option<T>>> {
        lock(&self.map)
    }
}

/// Installs `method` as the new body of `token` (the method `function` is an instance of),
/// with the map from its original IL offsets. Returns why the runtime refused the map, if it
/// did: counting works without it (only a debugger needs it).
pub fn install(
    info: &ProfilerInfo,
    function: FunctionId,
    module: ModuleId,
    token: Token,
    method: &mut Method,
) -> Result<Option<clrprof_sdk::Error>> {
    let (body, layout) = method.to_body()?;
    info.replace_il_function_body(module, token, &body)?;
    Ok(info
        .set_il_instrumented_code_map(function, true, &method.il_map(&layout))
        .err())
}
