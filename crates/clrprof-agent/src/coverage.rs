//! Code coverage: a counter probe at the start of every basic block of the methods the JIT
//! compiles, inserted in `JITCompilationStarted`, and the counts written at shutdown.
//!
//! Which methods: those of the modules `instrument::ModuleFilter` picks from `cover_include`
//! and `cover_exclude`. The JIT's inlining is turned off, so that every call runs the
//! instrumented body (an inlined copy would have been made from the original IL); with an
//! include list, precompiled (ReadyToRun) code is turned off too, so that framework methods
//! are JIT-compiled and can be covered.
//!
//! The probes are the SDK's block counters (`clrprof_sdk::il::counters`: a plain 8-byte
//! increment per block entry, no call; exact for single-threaded code, concurrent entries of
//! one block may count once). Counters are allocated once per method and never freed (code
//! may run after shutdown). Several instantiations of a generic method share one body and so
//! one set of counters. Methods the JIT never compiled are reported with zero counts.

use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::il::{BasicBlock, Method, counters};
use clrprof_sdk::info::FunctionInfo;
use clrprof_sdk::{FunctionId, ModuleId, ProfilerInfo, Result, Token};
use clrprof_trace::{CoverageBlock, CoverageMethod, Record};

use crate::config::Config;
pub use crate::instrument::MethodKey;
use crate::instrument::{Methods, ModuleFilter, install};
use crate::session::{Feature, Session};

/// The IL range of a block in the original body: start and end offsets.
type IlRange = (u32, u32);

/// One instrumented method.
struct Instrumented {
    /// IL ranges of the blocks in the original body.
    ranges: Vec<IlRange>,
    counters: &'static [AtomicU64],
}

/// The coverage state of a session.
pub struct Coverage {
    filter: ModuleFilter,
    /// Methods seen at JIT time.
    methods: Methods<Instrumented>,
}

impl Coverage {
    /// Coverage for `config`, if it asks for it.
    pub fn new(config: &Config) -> Option<Coverage> {
        config.coverage.then(|| Coverage {
            filter: ModuleFilter::new(&config.cover_include, &config.cover_exclude),
            methods: Methods::default(),
        })
    }

    /// `ModuleLoadFinished`.
    pub fn module_loaded(&self, info: &ProfilerInfo, module: ModuleId) {
        self.filter.module_loaded(info, module);
    }

    /// `JITCompilationStarted`, first step: reserves the method `f` (of `function`) if its
    /// module is covered and its body was not instrumented yet. The caller then reads the
    /// body and calls [`Coverage::instrument`] with the key returned.
    pub fn reserve(&self, info: &ProfilerInfo, f: &FunctionInfo) -> Option<MethodKey> {
        if !self.filter.wants(info, f.module) {
            return None;
        }
        // Another instantiation of a generic method compiled at the same moment on another
        // thread may miss the counters.
        let key = (f.module, f.token);
        self.methods.reserve(key).then_some(key)
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
                self.methods.set(key, m);
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
        let methods = self.methods.lock();
        for module in self.filter.wanted() {
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
    let map = install(info, function, module, token, &mut method)?;
    Ok(Some((Instrumented { ranges, counters }, map)))
}

impl Feature for Coverage {
    /// The callbacks and codegen settings coverage needs.
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        self.filter.event_mask(
            EventMask::MONITOR_JIT_COMPILATION
                | EventMask::MONITOR_MODULE_LOADS
                | EventMask::DISABLE_INLINING,
        )
    }
}
