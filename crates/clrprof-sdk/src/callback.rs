//! [`Profiler`]: the trait a profiler implements to receive the runtime's callbacks.
//!
//! One method per `ICorProfilerCallback`..`ICorProfilerCallback11` method, in vtable order,
//! each with a default body that does nothing and succeeds; implement only what you enabled
//! in the event mask. Every method takes `&self`: the runtime calls from many threads at once
//! (and keeps calling after [`Profiler::shutdown`]), so state goes behind atomics, locks or
//! other `Sync` types.
//!
//! The SDK converts arguments before calling: ids are typed ([`FunctionId`], ...), `BOOL`s are
//! `bool`, arrays are slices, names are `&str`, enumerations are open newtypes
//! ([`SuspendReason`], ...). Borrowed arguments are valid only for the duration of the call.
//! Out-parameters are return values. Returning `Err` hands the error's HRESULT back to the
//! runtime, which ignores it for almost every callback; [`Profiler::initialize`] is the
//! exception (an error refuses the load). A panic is caught at the boundary, counted (see
//! [`crate::panics_caught`]) and reported as `E_FAIL`: it never unwinds into the runtime.
#![forbid(unsafe_code)]

use clrprof_sys::GUID;

use crate::callback_interfaces::{AssemblyReferenceProvider, FunctionControl};
use crate::error::{HResult, Result};
use crate::ids::*;
use crate::info::ProfilerInfo;
use crate::types::*;

/// The callbacks of a CoreCLR profiler. See the [module documentation](self).
#[allow(unused_variables)]
pub trait Profiler: Send + Sync + 'static {
    // ----- ICorProfilerCallback -----

    /// The profiler was loaded at startup; `info` is the highest ICorProfilerInfo version
    /// available. Set the event mask here. Returning `Err` unloads the profiler.
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        Ok(())
    }
    /// The runtime is shutting down (not called if the process exits abruptly); callbacks
    /// from other threads may still follow.
    fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    /// An application domain is being created.
    fn app_domain_creation_started(&self, app_domain: AppDomainId) -> Result<()> {
        Ok(())
    }
    /// An application domain was created (or failed to be).
    fn app_domain_creation_finished(&self, app_domain: AppDomainId, status: HResult) -> Result<()> {
        Ok(())
    }
    /// An application domain is being unloaded.
    fn app_domain_shutdown_started(&self, app_domain: AppDomainId) -> Result<()> {
        Ok(())
    }
    /// An application domain was unloaded.
    fn app_domain_shutdown_finished(&self, app_domain: AppDomainId, status: HResult) -> Result<()> {
        Ok(())
    }

    /// An assembly is being loaded.
    fn assembly_load_started(&self, assembly: AssemblyId) -> Result<()> {
        Ok(())
    }
    /// An assembly was loaded (or failed to load).
    fn assembly_load_finished(&self, assembly: AssemblyId, status: HResult) -> Result<()> {
        Ok(())
    }
    /// An assembly is being unloaded.
    fn assembly_unload_started(&self, assembly: AssemblyId) -> Result<()> {
        Ok(())
    }
    /// An assembly was unloaded.
    fn assembly_unload_finished(&self, assembly: AssemblyId, status: HResult) -> Result<()> {
        Ok(())
    }

    /// A module is being loaded.
    fn module_load_started(&self, module: ModuleId) -> Result<()> {
        Ok(())
    }
    /// A module was loaded; its metadata can be read from now on.
    fn module_load_finished(&self, module: ModuleId, status: HResult) -> Result<()> {
        Ok(())
    }
    /// A module is being unloaded.
    fn module_unload_started(&self, module: ModuleId) -> Result<()> {
        Ok(())
    }
    /// A module was unloaded; its id may be reused.
    fn module_unload_finished(&self, module: ModuleId, status: HResult) -> Result<()> {
        Ok(())
    }
    /// A module now belongs to `assembly`.
    fn module_attached_to_assembly(&self, module: ModuleId, assembly: AssemblyId) -> Result<()> {
        Ok(())
    }

    /// A type is being loaded.
    fn class_load_started(&self, class: ClassId) -> Result<()> {
        Ok(())
    }
    /// A type was loaded (or failed to load).
    fn class_load_finished(&self, class: ClassId, status: HResult) -> Result<()> {
        Ok(())
    }
    /// A type is being unloaded.
    fn class_unload_started(&self, class: ClassId) -> Result<()> {
        Ok(())
    }
    /// A type was unloaded.
    fn class_unload_finished(&self, class: ClassId, status: HResult) -> Result<()> {
        Ok(())
    }

    /// A function is about to be unloaded (its id becomes invalid after this call).
    fn function_unload_started(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }

    /// The JIT is about to compile `function`; the IL can still be replaced here.
    fn jit_compilation_started(&self, function: FunctionId, is_safe_to_block: bool) -> Result<()> {
        Ok(())
    }
    /// The JIT finished compiling `function`.
    fn jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    /// The runtime found precompiled code for `function`: return `false` to JIT it instead.
    fn jit_cached_function_search_started(&self, function: FunctionId) -> Result<bool> {
        Ok(true)
    }
    /// The search for precompiled code for `function` ended.
    fn jit_cached_function_search_finished(
        &self,
        function: FunctionId,
        result: JitCacheResult,
    ) -> Result<()> {
        Ok(())
    }
    /// JIT-compiled code of `function` was discarded (not raised by CoreCLR).
    fn jit_function_pitched(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// The JIT wants to inline `callee` into `caller`: return `false` to prevent it.
    fn jit_inlining(&self, caller: FunctionId, callee: FunctionId) -> Result<bool> {
        Ok(true)
    }

    /// A managed thread was created.
    fn thread_created(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    /// A managed thread was destroyed.
    fn thread_destroyed(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    /// A managed thread now runs on OS thread `os_thread_id`.
    fn thread_assigned_to_os_thread(&self, thread: ThreadId, os_thread_id: u32) -> Result<()> {
        Ok(())
    }

    /// Remoting: a client call starts (not raised by CoreCLR).
    fn remoting_client_invocation_started(&self) -> Result<()> {
        Ok(())
    }
    /// Remoting: a client sends a message (not raised by CoreCLR).
    fn remoting_client_sending_message(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        Ok(())
    }
    /// Remoting: a client receives a reply (not raised by CoreCLR).
    fn remoting_client_receiving_reply(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        Ok(())
    }
    /// Remoting: a client call ends (not raised by CoreCLR).
    fn remoting_client_invocation_finished(&self) -> Result<()> {
        Ok(())
    }
    /// Remoting: a server receives a message (not raised by CoreCLR).
    fn remoting_server_receiving_message(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        Ok(())
    }
    /// Remoting: a server call starts (not raised by CoreCLR).
    fn remoting_server_invocation_started(&self) -> Result<()> {
        Ok(())
    }
    /// Remoting: a server call returns (not raised by CoreCLR).
    fn remoting_server_invocation_returned(&self) -> Result<()> {
        Ok(())
    }
    /// Remoting: a server sends its reply (not raised by CoreCLR).
    fn remoting_server_sending_reply(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        Ok(())
    }

    /// Execution crosses from unmanaged into managed code (`function` is the managed side).
    fn unmanaged_to_managed_transition(
        &self,
        function: FunctionId,
        reason: TransitionReason,
    ) -> Result<()> {
        Ok(())
    }
    /// Execution crosses from managed into unmanaged code (`function` is the unmanaged stub).
    fn managed_to_unmanaged_transition(
        &self,
        function: FunctionId,
        reason: TransitionReason,
    ) -> Result<()> {
        Ok(())
    }

    /// The runtime starts suspending all managed threads.
    fn runtime_suspend_started(&self, reason: SuspendReason) -> Result<()> {
        Ok(())
    }
    /// All managed threads are suspended.
    fn runtime_suspend_finished(&self) -> Result<()> {
        Ok(())
    }
    /// The suspension was abandoned.
    fn runtime_suspend_aborted(&self) -> Result<()> {
        Ok(())
    }
    /// The runtime starts resuming threads.
    fn runtime_resume_started(&self) -> Result<()> {
        Ok(())
    }
    /// All threads have been resumed.
    fn runtime_resume_finished(&self) -> Result<()> {
        Ok(())
    }
    /// One thread was suspended.
    fn runtime_thread_suspended(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }
    /// One thread was resumed.
    fn runtime_thread_resumed(&self, thread: ThreadId) -> Result<()> {
        Ok(())
    }

    /// A compacting GC moved objects: range `i` of `lengths[i]` bytes went from
    /// `old_starts[i]` to `new_starts[i]` (32-bit lengths; prefer `moved_references2`).
    fn moved_references(
        &self,
        old_starts: &[ObjectId],
        new_starts: &[ObjectId],
        lengths: &[u32],
    ) -> Result<()> {
        Ok(())
    }
    /// An object was allocated.
    fn object_allocated(&self, object: ObjectId, class: ClassId) -> Result<()> {
        Ok(())
    }
    /// Instances per class allocated since the previous GC: `counts[i]` of `classes[i]`.
    fn objects_allocated_by_class(&self, classes: &[ClassId], counts: &[u32]) -> Result<()> {
        Ok(())
    }
    /// During a GC: the objects `object` refers to.
    fn object_references(
        &self,
        object: ObjectId,
        class: ClassId,
        references: &[ObjectId],
    ) -> Result<()> {
        Ok(())
    }
    /// During a GC: root references (prefer `root_references2`).
    fn root_references(&self, roots: &[ObjectId]) -> Result<()> {
        Ok(())
    }

    /// Managed code threw `exception`.
    fn exception_thrown(&self, exception: ObjectId) -> Result<()> {
        Ok(())
    }
    /// Search phase: entering a function's frame.
    fn exception_search_function_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Search phase: leaving that frame.
    fn exception_search_function_leave(&self) -> Result<()> {
        Ok(())
    }
    /// Search phase: running a filter in `function`.
    fn exception_search_filter_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Search phase: the filter returned.
    fn exception_search_filter_leave(&self) -> Result<()> {
        Ok(())
    }
    /// Search phase: `function` will catch the exception.
    fn exception_search_catcher_found(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Obsolete: an OS exception handler is entered.
    fn exception_os_handler_enter(&self) -> Result<()> {
        Ok(())
    }
    /// Obsolete: an OS exception handler is left.
    fn exception_os_handler_leave(&self) -> Result<()> {
        Ok(())
    }
    /// Unwind phase: unwinding `function`'s frame.
    fn exception_unwind_function_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Unwind phase: that frame is gone.
    fn exception_unwind_function_leave(&self) -> Result<()> {
        Ok(())
    }
    /// Unwind phase: running a `finally` in `function`.
    fn exception_unwind_finally_enter(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }
    /// Unwind phase: the `finally` finished.
    fn exception_unwind_finally_leave(&self) -> Result<()> {
        Ok(())
    }
    /// The `catch` in `function` starts handling `exception`.
    fn exception_catcher_enter(&self, function: FunctionId, exception: ObjectId) -> Result<()> {
        Ok(())
    }
    /// The `catch` block was left.
    fn exception_catcher_leave(&self) -> Result<()> {
        Ok(())
    }

    /// A COM-callable wrapper vtable for `implemented_iid` was created at `vtable_address`.
    fn com_classic_vtable_created(
        &self,
        wrapped_class: ClassId,
        implemented_iid: &GUID,
        vtable_address: usize,
        slots: u32,
    ) -> Result<()> {
        Ok(())
    }
    /// A COM-callable wrapper vtable was destroyed.
    fn com_classic_vtable_destroyed(
        &self,
        wrapped_class: ClassId,
        implemented_iid: &GUID,
        vtable_address: usize,
    ) -> Result<()> {
        Ok(())
    }

    /// Obsolete: the runtime found a catcher in its own code.
    fn exception_clr_catcher_found(&self) -> Result<()> {
        Ok(())
    }
    /// Obsolete: the runtime runs a catcher in its own code.
    fn exception_clr_catcher_execute(&self) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback2 -----

    /// A managed thread got a (new) name.
    fn thread_name_changed(&self, thread: ThreadId, name: &str) -> Result<()> {
        Ok(())
    }
    /// A GC starts, collecting `generations`.
    fn garbage_collection_started(&self, generations: Generations, reason: GcReason) -> Result<()> {
        Ok(())
    }
    /// After a non-compacting GC: ranges of `lengths[i]` bytes at `starts[i]` survived
    /// (32-bit lengths; prefer `surviving_references2`).
    fn surviving_references(&self, starts: &[ObjectId], lengths: &[u32]) -> Result<()> {
        Ok(())
    }
    /// The GC finished.
    fn garbage_collection_finished(&self) -> Result<()> {
        Ok(())
    }
    /// An object with a finalizer was queued for finalization.
    fn finalizeable_object_queued(&self, flags: FinalizerFlags, object: ObjectId) -> Result<()> {
        Ok(())
    }
    /// During a GC: roots, with their kind, flags and root id (all slices equally long).
    fn root_references2(
        &self,
        roots: &[ObjectId],
        kinds: &[GcRootKind],
        flags: &[GcRootFlags],
        root_ids: &[usize],
    ) -> Result<()> {
        Ok(())
    }
    /// A GC handle was created, pointing at `initial_object`.
    fn handle_created(&self, handle: GcHandleId, initial_object: ObjectId) -> Result<()> {
        Ok(())
    }
    /// A GC handle was destroyed.
    fn handle_destroyed(&self, handle: GcHandleId) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback3 -----

    /// The profiler was attached to a running process; `client_data` is what the attaching
    /// tool sent. Returning `Err` refuses the attach.
    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<()> {
        Ok(())
    }
    /// Attach finished: enumerate what was loaded before it.
    fn profiler_attach_complete(&self) -> Result<()> {
        Ok(())
    }
    /// Detach finished; no callback follows.
    fn profiler_detach_succeeded(&self) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback4 -----

    /// ReJIT of `function` starts.
    fn rejit_compilation_started(
        &self,
        function: FunctionId,
        rejit: ReJitId,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    /// Supply the new IL and code-generation flags for a requested ReJIT of `method`.
    fn get_rejit_parameters(
        &self,
        module: ModuleId,
        method: Token,
        control: &FunctionControl,
    ) -> Result<()> {
        Ok(())
    }
    /// ReJIT of `function` finished.
    fn rejit_compilation_finished(
        &self,
        function: FunctionId,
        rejit: ReJitId,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }
    /// A requested ReJIT failed (`function` may be null when the failure is per method).
    fn rejit_error(
        &self,
        module: ModuleId,
        method: Token,
        function: FunctionId,
        status: HResult,
    ) -> Result<()> {
        Ok(())
    }
    /// A compacting GC moved objects: range `i` of `lengths[i]` bytes went from
    /// `old_starts[i]` to `new_starts[i]`.
    fn moved_references2(
        &self,
        old_starts: &[ObjectId],
        new_starts: &[ObjectId],
        lengths: &[usize],
    ) -> Result<()> {
        Ok(())
    }
    /// After a non-compacting GC: ranges of `lengths[i]` bytes at `starts[i]` survived.
    fn surviving_references2(&self, starts: &[ObjectId], lengths: &[usize]) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback5 -----

    /// During a GC: dependent-handle pairs (`keys[i]` keeps `values[i]` alive via handle
    /// `handles[i]`).
    fn conditional_weak_table_element_references(
        &self,
        keys: &[ObjectId],
        values: &[ObjectId],
        handles: &[GcHandleId],
    ) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback6 -----

    /// The loader asks for extra references of the assembly at `assembly_path`.
    fn get_assembly_references(
        &self,
        assembly_path: &str,
        provider: &AssemblyReferenceProvider,
    ) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback7 -----

    /// The in-memory symbols of a dynamic module changed.
    fn module_in_memory_symbols_updated(&self, module: ModuleId) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback8 -----

    /// The JIT is about to compile a dynamic method (IL stub, `DynamicMethod`) whose IL header
    /// and body are `il_header`.
    fn dynamic_method_jit_compilation_started(
        &self,
        function: FunctionId,
        is_safe_to_block: bool,
        il_header: &[u8],
    ) -> Result<()> {
        Ok(())
    }
    /// The JIT finished compiling a dynamic method.
    fn dynamic_method_jit_compilation_finished(
        &self,
        function: FunctionId,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback9 -----

    /// A dynamic method was garbage-collected.
    fn dynamic_method_unloaded(&self, function: FunctionId) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback10 -----

    /// An EventPipe event written by a provider the profiler enabled.
    fn event_pipe_event_delivered(&self, event: &EventPipeEvent<'_>) -> Result<()> {
        Ok(())
    }
    /// An EventPipe provider was created.
    fn event_pipe_provider_created(&self, provider: EventPipeProviderId) -> Result<()> {
        Ok(())
    }

    // ----- ICorProfilerCallback11 -----

    /// Asked before `initialize`: return `true` to load as a notification-only profiler
    /// (one that may coexist with a main profiler and gets a restricted event mask).
    fn load_as_notification_only(&self) -> Result<bool> {
        Ok(false)
    }
}
