//! probe-info: a test profiler that calls the SDK's general ICorProfilerInfo wrappers from
//! its callbacks and writes what it learned, one JSON object per line, to the file named by
//! `PROBE_OUTPUT`. `tests/sdk_info.rs` runs it against `tests/programs/InfoProbe.cs` and
//! compares the lines with what the program itself prints.
//!
//! Every line has a `"kind"`. Results are written as they are: a value, or an error object
//! (`{"failed": method, "hr": n}` or `{"not_supported": method, "required": n, "available": n}`).
//! The probe never holds a lock while it calls the runtime, since some calls load types and
//! re-enter the probe's callbacks on the same thread.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::sync::{Mutex, MutexGuard, OnceLock};

use clrprof_sdk::info::{CodeInfo, ModuleFlags};
use clrprof_sdk::{
    AppDomainId, ClassId, Error, EventMask, FrameInfo, FunctionId, HResult, HighEventMask,
    ModuleId, ObjectId, Profiler, ProfilerInfo, ReJitId, Result, ThreadId, Token,
};

/// The probe's CLSID (what `CORECLR_PROFILER` names).
pub const CLSID: &str = "{5D1C7E0A-3B8F-4A61-9C2E-7F04B1D9A6E3}";

clrprof_sdk::export_profiler!(InfoProbe, CLSID);

/// The events the probe asks for.
fn event_mask() -> EventMask {
    EventMask::MONITOR_MODULE_LOADS
        | EventMask::MONITOR_ASSEMBLY_LOADS
        | EventMask::MONITOR_APPDOMAIN_LOADS
        | EventMask::MONITOR_CLASS_LOADS
        | EventMask::MONITOR_JIT_COMPILATION
        | EventMask::MONITOR_THREADS
        | EventMask::MONITOR_EXCEPTIONS
}

#[derive(Default)]
struct InfoProbe {
    info: OnceLock<ProfilerInfo>,
    out: Mutex<Option<File>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    program_module: Option<ModuleId>,
    corelib_module: Option<ModuleId>,
    thread_names: HashMap<ThreadId, String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ----- a tiny JSON writer -----

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON object under construction.
struct Obj(String);

impl Obj {
    fn new(kind: &str) -> Obj {
        Obj(format!("{{\"kind\":{}", quote(kind)))
    }
    fn raw(mut self, key: &str, json: impl AsRef<str>) -> Obj {
        let _ = write!(self.0, ",{}:{}", quote(key), json.as_ref());
        self
    }
    fn s(self, key: &str, value: &str) -> Obj {
        self.raw(key, quote(value))
    }
    fn n(self, key: &str, value: u64) -> Obj {
        self.raw(key, value.to_string())
    }
    fn b(self, key: &str, value: bool) -> Obj {
        self.raw(key, value.to_string())
    }
    /// A `Result`: the value as `f` writes it, or the error object.
    fn res<T>(self, key: &str, r: &Result<T>, f: impl FnOnce(&T) -> String) -> Obj {
        let json = match r {
            Ok(v) => f(v),
            Err(e) => err_json(e),
        };
        self.raw(key, json)
    }
    fn done(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

fn err_json(e: &Error) -> String {
    match e {
        Error::Failed { method, hr } => {
            format!("{{\"failed\":{},\"hr\":{}}}", quote(method), hr.0 as u32)
        }
        Error::NotSupported {
            method,
            required,
            available,
        } => format!(
            "{{\"not_supported\":{},\"required\":{required},\"available\":{available}}}",
            quote(method)
        ),
        other => format!("{{\"error\":{}}}", quote(&other.to_string())),
    }
}

fn unit(_: &()) -> String {
    "null".to_string()
}

fn num(v: u64) -> String {
    v.to_string()
}

fn nums(values: impl IntoIterator<Item = u64>) -> String {
    let items: Vec<String> = values.into_iter().map(num).collect();
    format!("[{}]", items.join(","))
}

fn ranges(r: &[CodeInfo]) -> String {
    let items: Vec<String> = r
        .iter()
        .map(|c| format!("[{},{}]", c.start, c.size))
        .collect();
    format!("[{}]", items.join(","))
}

fn opt_str(v: &Option<String>) -> String {
    v.as_deref().map_or("null".to_string(), quote)
}

// ----- the probe -----

impl InfoProbe {
    fn info(&self) -> Option<&ProfilerInfo> {
        self.info.get()
    }

    fn emit(&self, line: Obj) {
        if let Some(file) = lock(&self.out).as_mut() {
            let _ = writeln!(file, "{}", line.done());
            let _ = file.flush();
        }
    }

    fn program_module(&self) -> Option<ModuleId> {
        lock(&self.state).program_module
    }

    /// Where a ClassID is defined, as JSON: `{"class":id,"module":id,"token":t,"corelib":b}`.
    fn describe_class(&self, info: &ProfilerInfo, class: ClassId) -> String {
        let corelib = lock(&self.state).corelib_module;
        match info.get_class_id_info(class) {
            Ok(c) => format!(
                "{{\"class\":{},\"module\":{},\"token\":{},\"corelib\":{}}}",
                class.0,
                c.module.0,
                c.token.0,
                Some(c.module) == corelib
            ),
            Err(e) => err_json(&e),
        }
    }

    fn initialize_checks(&self, info: &ProfilerInfo) {
        let mask_set = info.set_event_mask2(event_mask(), HighEventMask::NONE);
        let runtime = info.get_runtime_information();
        let line = Obj::new("init")
            .n("version", u64::from(info.version()))
            .res("set_event_mask2", &mask_set, unit)
            .res("event_mask", &info.get_event_mask(), |m| num(m.bits().into()))
            .res("event_mask2", &info.get_event_mask2(), |(l, h)| {
                nums([l.bits().into(), h.bits().into()])
            })
            .n("expected_mask", event_mask().bits().into())
            .res("runtime", &runtime, |r| {
                format!(
                    "{{\"clr_instance_id\":{},\"runtime_type\":{},\"major\":{},\"minor\":{},\"build\":{},\"qfe\":{},\"version_string\":{}}}",
                    r.clr_instance_id,
                    r.runtime_type.0,
                    r.major,
                    r.minor,
                    r.build,
                    r.qfe,
                    quote(&r.version_string)
                )
            })
            .res("initialize_current_thread", &info.initialize_current_thread(), unit)
            .res("current_thread", &info.get_current_thread_id(), |t| num(t.as_u64()));
        self.emit(line);

        // Environment variables, as the runtime sees them.
        let set = info.set_environment_variable("CLRPROF_PROBE_SET", Some("from-profiler"));
        let tmp_set = info.set_environment_variable("CLRPROF_PROBE_TMP", Some("temporary"));
        let tmp_read = info.get_environment_variable("CLRPROF_PROBE_TMP");
        let tmp_unset = info.set_environment_variable("CLRPROF_PROBE_TMP", None);
        let tmp_after = info.get_environment_variable("CLRPROF_PROBE_TMP");
        let long = "L".repeat(3000);
        let long_set = info.set_environment_variable("CLRPROF_PROBE_LONG", Some(&long));
        let long_read = info.get_environment_variable("CLRPROF_PROBE_LONG");
        self.emit(
            Obj::new("env")
                .res(
                    "probe_output",
                    &info.get_environment_variable("PROBE_OUTPUT"),
                    opt_str,
                )
                .res("set", &set, unit)
                .res("tmp_set", &tmp_set, unit)
                .res("tmp_read", &tmp_read, opt_str)
                .res("tmp_unset", &tmp_unset, unit)
                .res("tmp_after_unset", &tmp_after, opt_str)
                .res("long_set", &long_set, unit)
                .res("long_read_len", &long_read, |v| {
                    num(v.as_ref().map_or(0, |s| s.len() as u64))
                })
                .b(
                    "long_read_matches",
                    matches!(&long_read, Ok(Some(v)) if *v == long),
                )
                .res(
                    "never_set",
                    &info.get_environment_variable("CLRPROF_PROBE_NEVER_SET_ANYWHERE"),
                    opt_str,
                ),
        );

        // The obsolete in-process debugging methods: whatever the runtime answers.
        self.emit(
            Obj::new("obsolete")
                .res(
                    "get_inproc_inspection_interface",
                    &info.get_inproc_inspection_interface(),
                    |p| p.is_some().to_string(),
                )
                .res(
                    "get_inproc_inspection_i_this_thread",
                    &info.get_inproc_inspection_i_this_thread(),
                    |p| p.is_some().to_string(),
                )
                .res(
                    "begin_inproc_debugging",
                    &info.begin_inproc_debugging(true),
                    |c| num((*c).into()),
                )
                .res("end_inproc_debugging", &info.end_inproc_debugging(0), unit),
        );
    }

    fn module_checks(&self, info: &ProfilerInfo, module: ModuleId, kind: &str) {
        let mi = info.get_module_info2(module);
        let mut line = Obj::new(kind)
            .n("module", module.as_u64())
            .res("info", &mi, |m| {
                format!(
                    "{{\"name\":{},\"base\":{},\"assembly\":{},\"flags\":{}}}",
                    quote(&m.name),
                    m.base_address,
                    m.assembly.0,
                    m.flags.bits()
                )
            });
        let Ok(mi) = mi else {
            self.emit(line);
            return;
        };
        let is_program = mi.name.ends_with("InfoProbe.dll");
        let is_corelib = mi.name.ends_with("System.Private.CoreLib.dll");
        {
            let mut state = lock(&self.state);
            if is_program {
                state.program_module = Some(module);
            }
            if is_corelib {
                state.corelib_module = Some(module);
            }
        }
        if is_program || is_corelib {
            let assembly = info.get_assembly_info(mi.assembly);
            line = line
                .b("disk", mi.flags.contains(ModuleFlags::DISK))
                .b("resource", mi.flags.contains(ModuleFlags::RESOURCE))
                .res("assembly_info", &assembly, |a| {
                    format!(
                        "{{\"name\":{},\"app_domain\":{},\"manifest_module\":{}}}",
                        quote(&a.name),
                        a.app_domain.0,
                        a.manifest_module.0
                    )
                })
                .res(
                    "app_domains",
                    &info.get_app_domains_containing_module(module),
                    |d| nums(d.iter().map(|a| a.as_u64())),
                )
                .res(
                    "in_memory_symbols",
                    &info.get_in_memory_symbols_length(module),
                    |n| num((*n).into()),
                );
            if let Ok(a) = &assembly {
                line = line.res(
                    "app_domain_info",
                    &info.get_app_domain_info(a.app_domain),
                    |d| {
                        format!(
                            "{{\"name\":{},\"process_id\":{}}}",
                            quote(&d.name),
                            d.process_id
                        )
                    },
                );
            }
        }
        self.emit(line);
    }

    fn class_checks(&self, info: &ProfilerInfo, class: ClassId) {
        let Some(program) = self.program_module() else {
            return;
        };
        let Ok(c2) = info.get_class_id_info2(class) else {
            return;
        };
        if c2.module != program {
            return;
        }
        let args: Vec<String> = c2
            .type_args
            .iter()
            .map(|a| self.describe_class(info, *a))
            .collect();
        self.emit(
            Obj::new("class")
                .n("class", class.as_u64())
                .n("module", c2.module.as_u64())
                .n("token", c2.token.0.into())
                .n("parent", c2.parent.as_u64())
                .raw("parent_info", self.describe_class(info, c2.parent))
                .raw("type_args", format!("[{}]", args.join(",")))
                .res("class_id_info", &info.get_class_id_info(class), |c| {
                    format!("[{},{}]", c.module.0, c.token.0)
                })
                .res("is_array_class", &info.is_array_class(class), |a| {
                    a.is_some().to_string()
                }),
        );
    }

    fn jit_checks(&self, info: &ProfilerInfo, function: FunctionId) {
        let Some(program) = self.program_module() else {
            return;
        };
        let Ok(f2) = info.get_function_info2(function, FrameInfo::NULL) else {
            return;
        };
        if f2.module != program {
            return;
        }
        let args: Vec<String> = f2
            .type_args
            .iter()
            .map(|a| self.describe_class(info, *a))
            .collect();
        let mut line = Obj::new("jit")
            .n("function", function.as_u64())
            .n("token", f2.token.0.into())
            .n("class", f2.class.as_u64())
            .raw("class_info", self.describe_class(info, f2.class))
            .raw("type_args", format!("[{}]", args.join(",")))
            .res(
                "from_token",
                &info.get_function_from_token(program, f2.token),
                |f| num(f.as_u64()),
            )
            .res("is_dynamic", &info.is_function_dynamic(function), |d| {
                d.to_string()
            })
            .res(
                "clause_outside_exception",
                &info.get_notified_exception_clause_info(),
                |c| c.is_some().to_string(),
            );

        // The generic paths: rebuild this function and its class from tokens and type args.
        if !f2.type_args.is_empty() {
            line = line.res(
                "from_token_and_type_args",
                &info.get_function_from_token_and_type_args(
                    program,
                    f2.token,
                    f2.class,
                    &f2.type_args,
                ),
                |f| num(f.as_u64()),
            );
        }
        if let Ok(ci) = info.get_class_id_info2(f2.class) {
            line = line
                .res(
                    "class_from_token",
                    &info.get_class_from_token(ci.module, ci.token),
                    |c| num(c.as_u64()),
                )
                .res(
                    "class_from_token_and_type_args",
                    &info.get_class_from_token_and_type_args(ci.module, ci.token, &ci.type_args),
                    |c| num(c.as_u64()),
                );
        }

        // Code: ranges, code versions, IP lookups, IL maps.
        let code2 = info.get_code_info2(function);
        line = line
            .res("code_info", &info.get_code_info(function), |c| {
                format!("[{},{}]", c.start, c.size)
            })
            .res("code_info2", &code2, |r| ranges(r))
            .res(
                "code_info3",
                &info.get_code_info3(function, ReJitId(0)),
                |r| ranges(r),
            );
        let starts = info.get_native_code_start_addresses(function, ReJitId(0));
        line = line.res("native_code_starts", &starts, |s| {
            nums(s.iter().map(|a| *a as u64))
        });
        if let Ok(Some(first)) = code2.as_ref().map(|r| r.first().copied()) {
            let ips = [first.start, first.start + first.size / 2, first.end() - 1];
            let lookups: Vec<String> = ips
                .iter()
                .map(|&ip| {
                    let v1 = info.get_function_from_ip(ip);
                    let v2 = info.get_function_from_ip2(ip);
                    let v3 = info.get_function_from_ip3(ip);
                    format!(
                        "{{\"ip\":{},\"v1\":{},\"v2\":{},\"v3\":{}}}",
                        ip,
                        v1.as_ref().map_or_else(err_json, |f| num(f.as_u64())),
                        v2.as_ref().map_or_else(err_json, |f| {
                            nums([f.function.as_u64(), f.rejit.as_u64()])
                        }),
                        v3.as_ref().map_or_else(err_json, |f| {
                            nums([f.function.as_u64(), f.rejit.as_u64()])
                        }),
                    )
                })
                .collect();
            line = line
                .raw("ip_lookups", format!("[{}]", lookups.join(",")))
                .res("code_info4", &info.get_code_info4(first.start), |r| {
                    ranges(r)
                })
                .res(
                    "il_map3_len",
                    &info.get_il_to_native_mapping3(first.start),
                    |m| num(m.len() as u64),
                );
        }
        let map1 = info.get_il_to_native_mapping(function);
        let map2 = info.get_il_to_native_mapping2(function, ReJitId(0));
        line = line
            .res("il_map_len", &map1, |m| num(m.len() as u64))
            .res("il_map2_len", &map2, |m| num(m.len() as u64))
            .b(
                "il_maps_equal",
                matches!((&map1, &map2), (Ok(a), Ok(b)) if a == b),
            )
            .b(
                "il_map_has_offset_0",
                matches!(&map1, Ok(m) if m.iter().any(|e| e.il_offset == clrprof_sdk::info::IlOffset::Offset(0))),
            );
        self.emit(line);

        self.snapshot_checks(info, function, f2.token);
    }

    /// Whole-process enumerations, done at every JIT of a program function (few of them);
    /// the test reads the one done while `Checkpoint` was compiled.
    fn snapshot_checks(&self, info: &ProfilerInfo, function: FunctionId, token: Token) {
        let current = info.get_current_thread_id();
        let names = lock(&self.state).thread_names.clone();
        let threads = info.enum_threads().and_then(|e| e.into_vec());
        let thread_json = |ts: &Vec<ThreadId>| {
            let items: Vec<String> = ts
                .iter()
                .map(|t| {
                    let os = info.get_thread_info(*t);
                    format!(
                        "{{\"thread\":{},\"name\":{},\"os_tid\":{}}}",
                        t.0,
                        names.get(t).map_or("null".to_string(), |n| quote(n)),
                        os.as_ref().map_or_else(err_json, |v| num((*v).into()))
                    )
                })
                .collect();
            format!("[{}]", items.join(","))
        };
        let modules = info.enum_modules().and_then(|e| e.into_vec());
        let module_names = |ms: &Vec<ModuleId>| {
            let items: Vec<String> = ms
                .iter()
                .map(|m| {
                    info.get_module_info2(*m)
                        .map_or_else(|e| err_json(&e), |mi| quote(&mi.name))
                })
                .collect();
            format!("[{}]", items.join(","))
        };
        let jited = info.enum_jited_functions().and_then(|e| e.into_vec());
        let jited2 = info.enum_jited_functions2().and_then(|e| e.into_vec());
        let corelib = lock(&self.state).corelib_module;
        let program = self.program_module();

        // An inlining query: the program is not precompiled (no inlining table), CoreLib is.
        let corelib_method = jited.as_ref().ok().and_then(|fs| {
            fs.iter().find_map(|f| {
                let fi = info.get_function_info2(f.function, FrameInfo::NULL).ok()?;
                (Some(fi.module) == corelib).then_some(fi.token)
            })
        });
        let inliners_program = program.map(|p| {
            info.enum_ngen_module_methods_inlining_this_method(p, p, token)
                .and_then(|i| Ok((i.methods.into_vec()?.len(), i.incomplete)))
        });
        let inliners_corelib = match (corelib, corelib_method) {
            (Some(c), Some(m)) => Some(
                info.enum_ngen_module_methods_inlining_this_method(c, c, m)
                    .and_then(|i| Ok((i.methods.into_vec()?.len(), i.incomplete))),
            ),
            _ => None,
        };

        let mut line = Obj::new("snapshot")
            .n("function", function.as_u64())
            .n("token", token.0.into())
            .res("current_thread", &current, |t| num(t.as_u64()))
            .res(
                "current_os_tid",
                &current.clone().and_then(|t| info.get_thread_info(t)),
                |v| num((*v).into()),
            )
            .res(
                "current_app_domain",
                &info.get_thread_app_domain(ThreadId::NULL),
                |d| num(d.as_u64()),
            )
            .res("threads", &threads, thread_json)
            .res("modules", &modules, module_names)
            .res("jited_count", &jited, |j| num(j.len() as u64))
            .b(
                "jited_includes_self",
                matches!(&jited, Ok(j) if j.iter().any(|f| f.function == function)),
            )
            .b(
                "jited_rejit_ids_zero",
                matches!(&jited, Ok(j) if j.iter().all(|f| f.rejit.is_null())),
            )
            .res("jited2_count", &jited2, |j| num(j.len() as u64))
            .b(
                "jited2_includes_self",
                matches!(&jited2, Ok(j) if j.iter().any(|f| f.function == function)),
            );
        if let Some(r) = &inliners_program {
            line = line.res("inliners_program", r, |(n, inc)| format!("[{n},{inc}]"));
        }
        if let Some(r) = &inliners_corelib {
            line = line.res("inliners_corelib", r, |(n, inc)| format!("[{n},{inc}]"));
        }
        self.emit(line);
    }

    fn clause_checks(&self, info: &ProfilerInfo, kind: &str, function: FunctionId) {
        let Some(program) = self.program_module() else {
            return;
        };
        match info.get_function_info2(function, FrameInfo::NULL) {
            Ok(f) if f.module == program => {}
            _ => return,
        }
        let clause = info.get_notified_exception_clause_info();
        let mut line =
            Obj::new(kind)
                .n("function", function.as_u64())
                .res("clause", &clause, |c| match c {
                    Some(c) => format!(
                        "{{\"type\":{},\"pc\":{},\"frame\":{}}}",
                        c.clause_type.0, c.program_counter, c.frame_pointer
                    ),
                    None => "null".to_string(),
                });
        if let Ok(Some(c)) = &clause {
            line = line.res(
                "function_at_pc",
                &info.get_function_from_ip(c.program_counter),
                |f| num(f.as_u64()),
            );
        }
        self.emit(line);
    }

    fn dynamic_checks(&self, info: &ProfilerInfo, function: FunctionId) {
        let code = info.get_code_info2(function);
        let mut line = Obj::new("dynamic")
            .n("function", function.as_u64())
            .res("is_dynamic", &info.is_function_dynamic(function), |d| {
                d.to_string()
            })
            .res("info", &info.get_dynamic_function_info(function), |d| {
                format!(
                    "{{\"name\":{},\"module\":{},\"signature_len\":{}}}",
                    quote(&d.name),
                    d.module.0,
                    d.signature.len()
                )
            })
            .res("code_info2", &code, |r| ranges(r));
        if let Ok(Some(first)) = code.as_ref().map(|r| r.first().copied()) {
            line = line
                .res("from_ip", &info.get_function_from_ip(first.start), |f| {
                    num(f.as_u64())
                })
                .res("from_ip3", &info.get_function_from_ip3(first.start), |f| {
                    num(f.function.as_u64())
                });
        }
        self.emit(line);
    }
}

impl Profiler for InfoProbe {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        if let Some(path) = std::env::var_os("PROBE_OUTPUT") {
            *lock(&self.out) = File::create(path).ok();
        }
        self.initialize_checks(&info);
        let _ = self.info.set(info);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.emit(Obj::new("shutdown").n("panics_caught", clrprof_sdk::panics_caught()));
        Ok(())
    }

    fn module_load_finished(&self, module: ModuleId, _status: HResult) -> Result<()> {
        if let Some(info) = self.info() {
            self.module_checks(info, module, "module");
        }
        Ok(())
    }

    fn module_attached_to_assembly(
        &self,
        module: ModuleId,
        _assembly: clrprof_sdk::AssemblyId,
    ) -> Result<()> {
        if let Some(info) = self.info() {
            self.module_checks(info, module, "module_attached");
        }
        Ok(())
    }

    fn app_domain_creation_finished(
        &self,
        app_domain: AppDomainId,
        _status: HResult,
    ) -> Result<()> {
        if let Some(info) = self.info() {
            self.emit(
                Obj::new("app_domain")
                    .n("app_domain", app_domain.as_u64())
                    .res("info", &info.get_app_domain_info(app_domain), |d| {
                        quote(&d.name)
                    }),
            );
        }
        Ok(())
    }

    fn class_load_finished(&self, class: ClassId, _status: HResult) -> Result<()> {
        if let Some(info) = self.info() {
            self.class_checks(info, class);
        }
        Ok(())
    }

    fn jit_compilation_finished(
        &self,
        function: FunctionId,
        _status: HResult,
        _is_safe_to_block: bool,
    ) -> Result<()> {
        if let Some(info) = self.info() {
            self.jit_checks(info, function);
        }
        Ok(())
    }

    fn dynamic_method_jit_compilation_finished(
        &self,
        function: FunctionId,
        _status: HResult,
        _is_safe_to_block: bool,
    ) -> Result<()> {
        if let Some(info) = self.info() {
            self.dynamic_checks(info, function);
        }
        Ok(())
    }

    fn thread_name_changed(&self, thread: ThreadId, name: &str) -> Result<()> {
        lock(&self.state)
            .thread_names
            .insert(thread, name.to_string());
        if let Some(info) = self.info() {
            self.emit(
                Obj::new("thread_name")
                    .n("thread", thread.as_u64())
                    .s("name", name)
                    .res("current_thread", &info.get_current_thread_id(), |t| {
                        num(t.as_u64())
                    })
                    .res(
                        "os_tid",
                        &info.get_thread_info(thread),
                        |v| num((*v).into()),
                    )
                    .res("app_domain", &info.get_thread_app_domain(thread), |d| {
                        num(d.as_u64())
                    })
                    .res("context", &info.get_thread_context(thread), |c| {
                        num(c.as_u64())
                    })
                    .res("handle", &info.get_handle_from_thread(thread), |h| {
                        (h.0 != 0).to_string()
                    }),
            );
        }
        Ok(())
    }

    fn exception_catcher_enter(&self, function: FunctionId, _exception: ObjectId) -> Result<()> {
        if let Some(info) = self.info() {
            self.clause_checks(info, "catch", function);
        }
        Ok(())
    }

    fn exception_unwind_finally_enter(&self, function: FunctionId) -> Result<()> {
        if let Some(info) = self.info() {
            self.clause_checks(info, "finally", function);
        }
        Ok(())
    }
}
