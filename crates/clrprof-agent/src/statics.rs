//! Static fields in heap snapshots: which object each static field of a reference type holds,
//! so that reports name a root by its field (`static Cache.Entries`).
//!
//! The runtime keeps the statics of reference types in arrays of its own (`object[]`, held by
//! a pinned handle), so a snapshot's roots alone lead to `root: handle -> object[] -> ...`.
//! With heap snapshots on, the agent looks at every class the runtime loads
//! (`ClassLoadFinished`): its static fields of reference types from the module's metadata
//! (`EnumFields`, `GetFieldProps`: `fdStatic` and not `fdLiteral`, a class, array, `string`,
//! `object` or generic class type), and their kind (`GetStaticFieldInfo`: ordinary or
//! `[ThreadStatic]`). Generic type definitions are left out (only their instantiations have
//! statics). In `GarbageCollectionFinished` of a snapshot's collection, while the program is
//! still suspended and before the heap walk, it asks where each field's value lives
//! (`GetAppDomainStaticAddress`, or `GetThreadStaticAddress2` for every managed thread the
//! agent knows), reads the reference there (already updated by the collection: it matches the
//! walk's object ids) and writes a `HeapStatic` record for every non-null one. The runtime's
//! own profiler tests make these calls from `GarbageCollectionFinished` too.
//!
//! Bounded: at most [`MAX_FIELDS`] fields are kept and at most [`MAX_RECORDS`] records written
//! per snapshot; what is left out is counted (`heap_static_fields_dropped`,
//! `heap_statics_dropped`). Statics whose class has not allocated them yet (its static
//! constructor has not run; for a thread static, on that thread) have no value
//! (`heap_statics_unset`): the runtime answers `CORPROF_E_DATAINCOMPLETE` (for a thread
//! static on a thread without the class's thread statics, `E_INVALIDARG`). Measured on 3.1.23
//! and 8.0.4: so does it for every static of a generic class's instantiation, assigned or
//! not (the runtime looks the field up on the generic type definition, never initialized).

use clrprof_trace::counters::CounterName;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use clrprof_sdk::info::{ReferenceStatic, holds_reference};
use clrprof_sdk::sys;
use clrprof_sdk::{AppDomainId, ClassId, ThreadId};
use clrprof_trace::{HeapStatic, Record};

use crate::config::HeapSnapshots;
use crate::session::Session;

/// The most static fields kept (of all loaded classes).
pub const MAX_FIELDS: usize = 65_536;
/// The most `HeapStatic` records of one snapshot.
pub const MAX_RECORDS: usize = 262_144;

/// A static field of a reference type of a loaded class.
struct Field {
    statics: ReferenceStatic,
    name: String,
}

/// The static fields of heap snapshots: the loaded classes' static fields of reference types
/// and the threads whose thread statics are read, kept from the session's start.
#[derive(Default)]
pub struct StaticFields {
    fields: Mutex<Vec<Field>>,
    /// Managed threads alive (their thread statics are read).
    threads: Mutex<Vec<ThreadId>>,
    /// The application domain (CoreCLR has one), from the first class load.
    domain: OnceLock<AppDomainId>,
    fields_dropped: AtomicU64,
    records_dropped: AtomicU64,
    unset: AtomicU64,
    failed: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn wanted(s: &Session) -> bool {
    s.config.heap_snapshots != HeapSnapshots::Off
}

impl StaticFields {
    /// `ThreadCreated`: the thread's statics are read from now on.
    pub fn thread_created(&self, s: &Session, thread: ThreadId) {
        if wanted(s) {
            self.add_thread(thread);
        }
    }

    fn add_thread(&self, thread: ThreadId) {
        let mut threads = lock(&self.threads);
        if !threads.contains(&thread) {
            threads.push(thread);
        }
    }

    /// `ThreadDestroyed`.
    pub fn thread_destroyed(&self, thread: ThreadId) {
        lock(&self.threads).retain(|&t| t != thread);
    }

    /// `ClassLoadFinished` (successful): keeps the class's static fields of reference types.
    pub fn class_loaded(&self, s: &Session, class: ClassId) {
        if !wanted(s) {
            return;
        }
        // The loading thread is a managed one (the main thread is announced by no
        // `ThreadCreated`: it is seen here first).
        if let Ok(thread) = s.info.get_current_thread_id()
            && !thread.is_null()
        {
            self.add_thread(thread);
            if self.domain.get().is_none()
                && let Ok(domain) = s.info.get_thread_app_domain(thread)
            {
                let _ = self.domain.set(domain);
            }
        }
        let Ok(ci) = s.info.get_class_id_info2(class) else {
            return;
        };
        if ci.token.is_nil() {
            return; // arrays and other classes without a TypeDef
        }
        let Ok(Some(import)) = s.defs.namer().metadata(&s.info, ci.module) else {
            return;
        };
        if ci.type_args.is_empty()
            && import
                .enum_generic_params(ci.token)
                .is_ok_and(|p| !p.is_empty())
        {
            return; // a generic type definition: only its instantiations have statics
        }
        let Ok(tokens) = import.enum_fields(ci.token) else {
            return;
        };
        let mut found = Vec::new();
        for field in tokens {
            let Ok(props) = import.get_field_props(field) else {
                continue;
            };
            if props.attributes & sys::fdStatic == 0
                || props.attributes & sys::fdLiteral != 0
                || !holds_reference(&props.signature)
            {
                continue;
            }
            let Ok(kind) = s.info.get_static_field_info(class, field) else {
                continue;
            };
            if let Some(statics) = ReferenceStatic::new(class, field, &props.signature, kind) {
                found.push(Field {
                    statics,
                    name: props.name,
                });
            }
        }
        if found.is_empty() {
            return;
        }
        let mut fields = lock(&self.fields);
        let room = MAX_FIELDS.saturating_sub(fields.len());
        if found.len() > room {
            self.fields_dropped
                .fetch_add((found.len() - room) as u64, Ordering::Relaxed);
            found.truncate(room);
        }
        fields.extend(found);
    }

    /// `ClassUnloadStarted`: the ClassID can be reused.
    pub fn class_unloaded(&self, class: ClassId) {
        lock(&self.fields).retain(|f| f.statics.class() != class);
    }

    /// In `GarbageCollectionFinished` of snapshot `snapshot`'s collection (the program is
    /// suspended): writes a `HeapStatic` for every static field that holds an object.
    pub fn snapshot(&self, s: &Session, snapshot: u32) {
        let Some(&domain) = self.domain.get() else {
            return;
        };
        let threads = lock(&self.threads).clone();
        let fields = lock(&self.fields);
        let mut written = 0usize;
        let mut write = |f: &Field, thread: ThreadId| {
            let object = match s.info.read_reference_static(&f.statics, domain, thread) {
                Ok(object) => object,
                Err(e) if e.is(sys::hresult::CORPROF_E_DATAINCOMPLETE) => {
                    self.unset.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                // A thread that has not allocated the class's thread statics: E_INVALIDARG.
                Err(e) if !thread.is_null() && e.is(sys::hresult::E_INVALIDARG) => {
                    self.unset.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(_) => {
                    self.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            if object.is_null() {
                return;
            }
            if written == MAX_RECORDS {
                self.records_dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            written += 1;
            s.defs.class(&s.info, &s.out, f.statics.class());
            s.out.push_record_or_drain(&Record::HeapStatic(HeapStatic {
                snapshot,
                object: object.as_u64(),
                class: f.statics.class().as_u64(),
                field: f.name.clone(),
                thread: thread.as_u64(),
            }));
        };
        for f in fields.iter() {
            if f.statics.is_thread_static() {
                for &thread in &threads {
                    write(f, thread);
                }
            } else {
                write(f, ThreadId::NULL);
            }
        }
    }
}

impl StaticFields {
    /// The counters of static fields (none without heap snapshots).
    pub fn counters(&self, s: &Session) -> Vec<(CounterName, u64)> {
        if !wanted(s) {
            return Vec::new();
        }
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        vec![
            (
                CounterName::HeapStaticFields,
                lock(&self.fields).len() as u64,
            ),
            (
                CounterName::HeapStaticFieldsDropped,
                load(&self.fields_dropped),
            ),
            (CounterName::HeapStaticsDropped, load(&self.records_dropped)),
            (CounterName::HeapStaticsUnset, load(&self.unset)),
            (CounterName::HeapStaticsFailed, load(&self.failed)),
        ]
    }
}
