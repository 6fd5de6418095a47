//! Code coverage: a counter probe at the start of every basic block of the methods the JIT
//! compiles, inserted in `JITCompilationStarted`, and the counts written at shutdown.
//!
//! Which methods: those of modules loaded from a file outside the framework's directory (the
//! directory of `System.Private.CoreLib`), or, when `cover_include` names assemblies, of those
//! assemblies only; never those of `cover_exclude`. An assembly is named by its file name
//! without the extension. The JIT's inlining is turned off, so that every call runs the
//! instrumented body (an inlined copy would have been made from the original IL); with an
//! include list, precompiled (ReadyToRun) code is turned off too, so that framework methods
//! are JIT-compiled and can be covered.
//!
//! The probes are the SDK's block counters (`clrprof_sdk::il::counters`: a plain 8-byte
//! increment per block entry, no call; exact for single-threaded code, concurrent entries of
//! one block may count once). Counters are allocated once per method and never freed (code
//! may run after shutdown). Several instantiations of a generic method share one body and so
//! one set of counters. Methods the JIT never compiled are reported with zero counts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use clrprof_sdk::flags::EventMask;
use clrprof_sdk::il::{BasicBlock, Method, counters};
use clrprof_sdk::info::FunctionInfo;
use clrprof_sdk::{FunctionId, ModuleId, ProfilerInfo, Result, Token};
use clrprof_trace::{CoverageBlock, CoverageMethod, Record};

use crate::config::Config;
use crate::session::Session;

/// The session's coverage state, when coverage is on.
static COVERAGE: OnceLock<Coverage> = OnceLock::new();

/// Turns coverage on if `config` asks for it (once, at initialization).
pub fn start(config: &Config) {
    if let Some(c) = Coverage::new(config) {
        let _ = COVERAGE.set(c);
    }
}

/// The session's coverage state, if coverage is on.
pub fn get() -> Option<&'static Coverage> {
    COVERAGE.get()
}

/// A method: its module and MethodDef token.
pub type MethodKey = (ModuleId, Token);

/// The IL range of a block in the original body: start and end offsets.
type IlRange = (u32, u32);

/// One instrumented method.
struct Instrumented {
    /// IL ranges of the blocks in the original body.
    ranges: Vec<IlRange>,
    counters: &'static [AtomicU64],
}

/// The coverage state of a session.
#[derive(Default)]
pub struct Coverage {
    include: Vec<String>,
    exclude: Vec<String>,
    framework_dir: OnceLock<PathBuf>,
    /// Whether to instrument each module seen so far.
    modules: Mutex<HashMap<ModuleId, bool>>,
    /// Methods seen at JIT time: `None` while being instrumented, or if they could not be.
    methods: Mutex<HashMap<(ModuleId, Token), Option<Instrumented>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The assembly name coverage filters use: the file name without its extension.
fn assembly_name(path: &str) -> &str {
    Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path)
}

impl Coverage {
    /// Coverage for `config`, if it asks for it.
    pub fn new(config: &Config) -> Option<Coverage> {
        config.coverage.then(|| Coverage {
            include: config.cover_include.clone(),
            exclude: config.cover_exclude.clone(),
            ..Coverage::default()
        })
    }

    /// The callbacks and codegen settings coverage needs.
    pub fn event_mask(&self) -> EventMask {
        let mut mask = EventMask::MONITOR_JIT_COMPILATION
            | EventMask::MONITOR_MODULE_LOADS
            | EventMask::DISABLE_INLINING;
        if !self.include.is_empty() {
            mask |= EventMask::DISABLE_ALL_NGEN_IMAGES;
        }
        mask
    }

    /// Notes where the framework lives (the first module loaded is the core library).
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

    fn wants_module(&self, info: &ProfilerInfo, module: ModuleId) -> bool {
        if let Some(&wanted) = lock(&self.modules).get(&module) {
            return wanted;
        }
        let wanted = info.get_module_info(module).is_ok_and(|m| {
            let path = Path::new(&m.name);
            let name = assembly_name(&m.name);
            if m.base_address == 0 || !path.is_absolute() || self.exclude.iter().any(|e| e == name)
            {
                false
            } else if !self.include.is_empty() {
                self.include.iter().any(|i| i == name)
            } else {
                self.framework_dir
                    .get()
                    .is_some_and(|dir| path.parent() != Some(dir.as_path()))
            }
        });
        lock(&self.modules).insert(module, wanted);
        wanted
    }

    /// `JITCompilationStarted`, first step: reserves the method `f` (of `function`) if its
    /// module is covered and its body was not instrumented yet. The caller then reads the
    /// body and calls [`Coverage::instrument`] with the key returned.
    pub fn reserve(&self, info: &ProfilerInfo, f: &FunctionInfo) -> Option<MethodKey> {
        if !self.wants_module(info, f.module) {
            return None;
        }
        // Reserve the method, then instrument it without holding the lock (the runtime is
        // called meanwhile). Another instantiation of a generic method compiled at the same
        // moment on another thread may miss the counters.
        let key = (f.module, f.token);
        let mut methods = lock(&self.methods);
        if methods.contains_key(&key) {
            return None;
        }
        methods.insert(key, None);
        Some(key)
    }

    /// `JITCompilationStarted`, second step: instruments the method reserved as `key`, whose
    /// original IL body is `body` (`None` if it has none).
    pub fn instrument(
        &self,
        session: &Session,
        function: FunctionId,
        key: MethodKey,
        body: Option<&[u8]>,
    ) {
        let (module, token) = key;
        let Some(body) = body else {
            return;
        };
        match instrument(&session.info, function, module, token, body) {
            Ok(Some((m, map_error))) => {
                lock(&self.methods).insert(key, Some(m));
                if let Some(e) = map_error {
                    session.warn(format!(
                        "coverage: the runtime refused the IL offset map of method {:#010x}: {e}",
                        token.0
                    ));
                }
            }
            Ok(None) => {}
            Err(e) => session.warn(format!(
                "coverage: cannot instrument method {:#010x} of module {}: {e}",
                token.0, module
            )),
        }
    }

    /// Writes one `CoverageMethod` record per method with IL of every covered module: the
    /// counts of those the JIT compiled, zeros for the others.
    pub fn write(&self, session: &Session) {
        let info = &session.info;
        let methods = lock(&self.methods);
        let mut modules: Vec<ModuleId> = lock(&self.modules)
            .iter()
            .filter(|(_, wanted)| **wanted)
            .map(|(m, _)| *m)
            .collect();
        modules.sort();
        for module in modules {
            let Ok(Some(import)) = session.defs.namer().metadata(info, module) else {
                continue;
            };
            let mut tokens: Vec<Token> = import
                .enum_type_defs()
                .unwrap_or_default()
                .into_iter()
                .flat_map(|t| import.enum_methods(t).unwrap_or_default())
                .collect();
            tokens.sort();
            for token in tokens {
                let blocks: Vec<CoverageBlock> = match methods.get(&(module, token)) {
                    Some(Some(m)) => m
                        .ranges
                        .iter()
                        .zip(m.counters)
                        .map(|(&(il_start, il_end), c)| CoverageBlock {
                            il_start,
                            il_end,
                            hits: c.load(Ordering::Relaxed),
                        })
                        .collect(),
                    Some(None) | None => match uncovered_blocks(info, module, token) {
                        Some(ranges) => ranges
                            .into_iter()
                            .map(|(il_start, il_end)| CoverageBlock {
                                il_start,
                                il_end,
                                hits: 0,
                            })
                            .collect(),
                        None => continue,
                    },
                };
                let name = session
                    .defs
                    .namer()
                    .get_method_name(info, module, token)
                    .ok();
                let (type_name, method_name, signature) = name.map_or_else(
                    || (String::new(), format!("{token}"), String::new()),
                    |n| (n.type_name, n.method_name, n.signature),
                );
                session.defs.module(info, &session.out, module);
                session
                    .out
                    .push_record_or_drain(&Record::CoverageMethod(CoverageMethod {
                        module: module.as_u64(),
                        token: token.0,
                        type_name,
                        method_name,
                        signature,
                        blocks,
                    }));
            }
        }
    }
}

/// The blocks of a method that was never compiled; `None` for a method without IL.
fn uncovered_blocks(
    info: &ProfilerInfo,
    module: ModuleId,
    token: Token,
) -> Option<Vec<(u32, u32)>> {
    let bytes = info.get_il_function_body(module, token).ok()?;
    let method = Method::parse(&bytes).ok()?;
    let (ranges, _) = block_ranges(&method).ok()?;
    Some(ranges)
}

/// The probed blocks of `method` and their IL ranges.
fn block_ranges(method: &Method) -> Result<(Vec<IlRange>, Vec<BasicBlock>)> {
    let blocks = counters::probed_blocks(method);
    let ranges = counters::block_ranges(method, &blocks)?;
    Ok((ranges, blocks))
}

/// Adds probes to `body`, the original body of `token`, and installs it; `None` for a
/// method without blocks to probe. Also returns why the runtime refused the IL offset map,
/// if it did.
fn instrument(
    info: &ProfilerInfo,
    function: FunctionId,
    module: ModuleId,
    token: Token,
    body: &[u8],
) -> Result<Option<(Instrumented, Option<clrprof_sdk::Error>)>> {
    let mut method = Method::parse(body)?;
    let (ranges, blocks) = block_ranges(&method)?;
    if blocks.is_empty() {
        return Ok(None);
    }
    let counters = counters::leak_counters(blocks.len());
    counters::add_block_counters(&mut method, &blocks, counters);
    let (body, layout) = method.to_body()?;
    info.replace_il_function_body(module, token, &body)?;
    // The debugger's view of the original offsets (counting works without it).
    let map = info
        .set_il_instrumented_code_map(function, true, &method.il_map(&layout))
        .err();
    Ok(Some((Instrumented { ranges, counters }, map)))
}
