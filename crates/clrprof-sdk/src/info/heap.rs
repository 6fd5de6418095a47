//! Objects and the GC heap: sizes, layouts, generations, references, handles, forced GCs.
//!
//! An [`ObjectId`] is an address that a GC may move or free. Use these methods where objects
//! stay put: inside GC and allocation callbacks (`ObjectAllocated`, `ObjectReferences`,
//! `GarbageCollectionFinished`...), or while the runtime is suspended. Methods that read an
//! object (`get_array_object_info`, `get_object_generation`, `enumerate_object_references`)
//! must not be called between `GarbageCollectionStarted` and `GarbageCollectionFinished`
//! except from the GC's own callbacks.

use core::any::Any;
use core::ffi::c_void;
use core::ptr;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use clrprof_sys::{
    BOOL, COR_FIELD_OFFSET, COR_PRF_GC_GENERATION_RANGE, COR_PRF_NONGC_HEAP_RANGE, ClassID, FALSE,
    ICorProfilerInfo2Vtbl, ICorProfilerInfo3Vtbl, ICorProfilerInfo4Vtbl, ICorProfilerInfo10Vtbl,
    ICorProfilerInfo13Vtbl, ICorProfilerInfo14Vtbl, ICorProfilerInfo15Vtbl, ICorProfilerInfoVtbl,
    ObjectHandleID, ObjectID, TRUE, ULONG,
};

use super::buffers::{from_bool, read_array};
use super::enumerators::ObjectEnum;
use super::{ProfilerInfo, ok};
use crate::error::{Error, Result};
use crate::ids::{ClassId, GcHandleId, ModuleId, ObjectId, Token};
use crate::types::{GcGeneration, GcHandleType};

/// The most dimensions an array has.
const MAX_ARRAY_RANK: usize = 32;

/// An array object's shape and data (`GetArrayObjectInfo`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ArrayObjectInfo {
    /// The element type, a `CorElementType` (`ELEMENT_TYPE_I4`, `ELEMENT_TYPE_CLASS`...).
    pub element_type: u32,
    /// The element class (null when the runtime has none, e.g. for some primitives).
    pub element_class: ClassId,
    /// The length of each dimension; one entry for a vector (`T[]`).
    pub dims: Vec<u32>,
    /// The lower bound of each dimension (0 for vectors).
    pub lower_bounds: Vec<i32>,
    /// Address of the first element; elements are laid out row-major, C style.
    pub data: usize,
}

impl ArrayObjectInfo {
    /// Total number of elements (the product of the dimensions).
    pub fn len(&self) -> u64 {
        self.dims.iter().map(|&d| d as u64).product()
    }

    /// True when some dimension is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One field of a class layout: its FieldDef token and offset.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FieldOffset {
    /// The field's FieldDef token.
    pub field: Token,
    /// Offset of the field from the ObjectID (which points at the MethodTable pointer, so the
    /// first field of a reference type is at pointer size); from the start of the value for
    /// value types.
    pub offset: u32,
}

/// The instance fields a class itself declares and its size (`GetClassLayout`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ClassLayout {
    /// The fields declared by this class (not its base classes), in the runtime's order.
    pub fields: Vec<FieldOffset>,
    /// For reference types the base instance size (object header and MethodTable pointer
    /// included, at least 24 bytes on 64-bit); for value types the size of the fields.
    pub size: u32,
}

/// Where a string's length and characters are (`GetStringLayout`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct StringLayout {
    /// Offset of a `DWORD` with the buffer length (on CoreCLR the same as the string
    /// length).
    pub buffer_length_offset: u32,
    /// Offset of a `DWORD` with the number of UTF-16 units.
    pub string_length_offset: u32,
    /// Offset of the first UTF-16 unit.
    pub buffer_offset: u32,
}

/// Where a string's length and characters are (`GetStringLayout2`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct StringLayout2 {
    /// Offset of a `DWORD` with the number of UTF-16 units.
    pub string_length_offset: u32,
    /// Offset of the first UTF-16 unit.
    pub buffer_offset: u32,
}

impl StringLayout2 {
    /// Reads a `System.String` object: at most `max_units` UTF-16 units of it (unpaired
    /// surrogates become U+FFFD), and whether it was longer.
    ///
    /// # Safety
    /// `string` must be a live `System.String` (null is allowed and reads as empty) that no
    /// GC moves or frees while this runs: an object the runtime handed to the current
    /// callback, or read from such an object's field, on the callback's thread.
    pub unsafe fn read(&self, string: ObjectId, max_units: usize) -> (String, bool) {
        if string.is_null() {
            return (String::new(), false);
        }
        let base = string.0 as *const u8;
        // SAFETY: the caller guarantees a live string; the runtime says where its length is.
        let len = unsafe {
            ptr::read_unaligned(base.add(self.string_length_offset as usize).cast::<u32>())
        } as usize;
        let n = len.min(max_units);
        // SAFETY: the string's `len` UTF-16 units follow the buffer offset; `n <= len`.
        let units = unsafe {
            core::slice::from_raw_parts(base.add(self.buffer_offset as usize).cast::<u16>(), n)
        };
        (String::from_utf16_lossy(units), n < len)
    }
}

/// Reads an object reference stored in a field of an object.
///
/// # Safety
/// `object` must be a live object that no GC moves while this runs (see
/// [`StringLayout2::read`]), and `offset` the offset of a reference-type field of its class or
/// of a base class, as [`ProfilerInfo::get_class_layout`] gives it.
pub unsafe fn read_reference_field(object: ObjectId, offset: u32) -> ObjectId {
    // SAFETY: the caller guarantees a live object with a pointer-sized reference at `offset`.
    ObjectId(unsafe {
        ptr::read_unaligned((object.0 as *const u8).add(offset as usize).cast::<usize>())
    })
}

/// A range of memory holding objects of one generation (`COR_PRF_GC_GENERATION_RANGE`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct GenerationRange {
    /// The generation (0, 1, 2, large or pinned object heap).
    pub generation: GcGeneration,
    /// First byte of the range.
    pub start: usize,
    /// Bytes in use (exact only when asked from a GC callback).
    pub length: usize,
    /// Bytes reserved for the range.
    pub reserved: usize,
}

impl GenerationRange {
    /// True when `object` lies in the used part of the range.
    pub fn contains(&self, object: ObjectId) -> bool {
        object.0 >= self.start && object.0 - self.start < self.length
    }
}

impl From<COR_PRF_GC_GENERATION_RANGE> for GenerationRange {
    fn from(raw: COR_PRF_GC_GENERATION_RANGE) -> Self {
        GenerationRange {
            generation: GcGeneration(raw.generation),
            start: raw.rangeStart,
            length: raw.rangeLength,
            reserved: raw.rangeLengthReserved,
        }
    }
}

/// A range of the non-GC (frozen) heap (`COR_PRF_NONGC_HEAP_RANGE`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct NonGcHeapRange {
    /// First byte of the range.
    pub start: usize,
    /// Bytes in use.
    pub length: usize,
    /// Bytes reserved.
    pub reserved: usize,
}

/// One reference held by an object (`EnumerateObjectReferences`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ObjectReference {
    /// Offset of the reference field (or array element) from the ObjectID.
    pub offset: usize,
    /// The object it points to (never null: null references are skipped).
    pub target: ObjectId,
}

/// What a callback trampoline carries: the closure and a panic it caught.
struct Visit<'f, F> {
    f: &'f mut F,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

/// Runs `visit.f(arg)` catching a panic; a panic (or `false`) stops the enumeration.
fn visit_step<F: FnMut(T) -> bool, T>(visit: &mut Visit<'_, F>, arg: T) -> BOOL {
    if visit.panic.is_some() {
        return FALSE;
    }
    match catch_unwind(AssertUnwindSafe(|| (visit.f)(arg))) {
        Ok(true) => TRUE,
        Ok(false) => FALSE,
        Err(payload) => {
            visit.panic = Some(payload);
            FALSE
        }
    }
}

unsafe extern "system" fn reference_trampoline<F: FnMut(ObjectReference) -> bool>(
    root: ObjectID,
    reference: *mut ObjectID,
    client_data: *mut c_void,
) -> BOOL {
    // SAFETY: `client_data` is the `&mut Visit<F>` passed to EnumerateObjectReferences by
    // `enumerate_object_references`, alive and unaliased for the whole (synchronous) call.
    let visit = unsafe { &mut *client_data.cast::<Visit<'_, F>>() };
    if reference.is_null() {
        return TRUE;
    }
    // SAFETY: the GC passes the address of a reference slot inside `root`, readable while it
    // walks the object.
    let target = unsafe { reference.read() };
    let item = ObjectReference {
        offset: (reference as usize).wrapping_sub(root),
        target: ObjectId(target),
    };
    visit_step(visit, item)
}

unsafe extern "system" fn object_trampoline<F: FnMut(ObjectId) -> bool>(
    object: ObjectID,
    client_data: *mut c_void,
) -> BOOL {
    // SAFETY: `client_data` is the `&mut Visit<F>` passed to EnumerateGCHeapObjects by
    // `enumerate_gc_heap_objects`, alive and unaliased for the whole (synchronous) call.
    let visit = unsafe { &mut *client_data.cast::<Visit<'_, F>>() };
    visit_step(visit, ObjectId(object))
}

impl ProfilerInfo {
    /// The class of an object (`ICorProfilerInfo::GetClassFromObject`).
    pub fn get_class_from_object(&self, object: ObjectId) -> Result<ClassId> {
        const M: &str = "ICorProfilerInfo::GetClassFromObject";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut class: ClassID = 0;
        // SAFETY: `this` is live; `class` is a valid local.
        ok(M, unsafe {
            (vt.GetClassFromObject)(self.this(), object.0, &mut class)
        })?;
        Ok(ClassId(class))
    }

    /// An object's size in bytes, header included (`ICorProfilerInfo::GetObjectSize`;
    /// fails for objects over 4 GB: prefer [`ProfilerInfo::get_object_size2`]).
    pub fn get_object_size(&self, object: ObjectId) -> Result<u32> {
        const M: &str = "ICorProfilerInfo::GetObjectSize";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut size: ULONG = 0;
        // SAFETY: `this` is live; `size` is a valid local.
        ok(M, unsafe {
            (vt.GetObjectSize)(self.this(), object.0, &mut size)
        })?;
        Ok(size)
    }

    /// An object's size in bytes, header included (`ICorProfilerInfo4::GetObjectSize2`).
    pub fn get_object_size2(&self, object: ObjectId) -> Result<usize> {
        const M: &str = "ICorProfilerInfo4::GetObjectSize2";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        let mut size: usize = 0;
        // SAFETY: `this` is live; `size` is a valid local.
        ok(M, unsafe {
            (vt.GetObjectSize2)(self.this(), object.0, &mut size)
        })?;
        Ok(size)
    }

    /// Dimensions, lower bounds and data address of an array
    /// (`ICorProfilerInfo2::GetArrayObjectInfo`, after `IsArrayClass` on its class for the
    /// rank and element type). `E_INVALIDARG` if `object` is not an array.
    pub fn get_array_object_info(&self, object: ObjectId) -> Result<ArrayObjectInfo> {
        const M: &str = "ICorProfilerInfo2::GetArrayObjectInfo";
        self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let class = self.get_class_from_object(object)?;
        let Some(array) = self.is_array_class(class)? else {
            return Err(Error::Failed {
                method: M,
                hr: crate::error::HResult(clrprof_sys::E_INVALIDARG),
            });
        };
        let mut dims = [0u32; MAX_ARRAY_RANK];
        let mut lower_bounds = [0i32; MAX_ARRAY_RANK];
        let (rank, data) =
            self.array_object_info_into(object, array.rank, &mut dims, &mut lower_bounds)?;
        Ok(ArrayObjectInfo {
            element_type: array.element_type,
            element_class: array.element_class,
            dims: dims[..rank].to_vec(),
            lower_bounds: lower_bounds[..rank].to_vec(),
            data,
        })
    }

    /// The number of elements of `object`, an array of rank `rank` (from
    /// [`ProfilerInfo::is_array_class`] on its class): the product of its dimensions
    /// (`ICorProfilerInfo2::GetArrayObjectInfo`). Does not allocate.
    pub fn get_array_len(&self, object: ObjectId, rank: u32) -> Result<u64> {
        let mut dims = [0u32; MAX_ARRAY_RANK];
        let mut lower_bounds = [0i32; MAX_ARRAY_RANK];
        let (rank, _) = self.array_object_info_into(object, rank, &mut dims, &mut lower_bounds)?;
        Ok(dims[..rank].iter().map(|&d| u64::from(d)).product())
    }

    /// `GetArrayObjectInfo` into `dims` and `lower_bounds`: the rank used (`rank`, at most
    /// [`MAX_ARRAY_RANK`]) and the address of the first element.
    fn array_object_info_into(
        &self,
        object: ObjectId,
        rank: u32,
        dims: &mut [u32; MAX_ARRAY_RANK],
        lower_bounds: &mut [i32; MAX_ARRAY_RANK],
    ) -> Result<(usize, usize)> {
        const M: &str = "ICorProfilerInfo2::GetArrayObjectInfo";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        // Never trust a rank larger than an array can have.
        let rank = (rank as usize).min(MAX_ARRAY_RANK);
        let mut data: *mut u8 = ptr::null_mut();
        // SAFETY: `this` is live; both arrays hold MAX_ARRAY_RANK >= max(rank, 1) elements
        // and `data` is a valid local.
        ok(M, unsafe {
            (vt.GetArrayObjectInfo)(
                self.this(),
                object.0,
                rank as u32,
                dims.as_mut_ptr(),
                lower_bounds.as_mut_ptr(),
                &mut data,
            )
        })?;
        Ok((rank, data as usize))
    }

    /// The instance fields a class declares, with their offsets, and its size
    /// (`ICorProfilerInfo2::GetClassLayout`). Base classes' fields are not included: walk
    /// the parents (`get_class_id_info2`). `E_INVALIDARG` for arrays and `String`.
    pub fn get_class_layout(&self, class: ClassId) -> Result<ClassLayout> {
        const M: &str = "ICorProfilerInfo2::GetClassLayout";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut size: ULONG = 0;
        let raw = read_array(M, |cap, count, out: *mut COR_FIELD_OFFSET| {
            // SAFETY: `this` is live; `out` is null with `cap == 0` or holds `cap` elements;
            // `count` and `size` are valid locals.
            unsafe { (vt.GetClassLayout)(self.this(), class.0, out, cap, count, &mut size) }
        })?;
        Ok(ClassLayout {
            fields: raw
                .into_iter()
                .map(|f| FieldOffset {
                    field: Token(f.ridOfField),
                    offset: f.ulOffset,
                })
                .collect(),
            size,
        })
    }

    /// Offset of the value inside a boxed value type of class `class`
    /// (`ICorProfilerInfo2::GetBoxClassLayout`).
    pub fn get_box_class_layout(&self, class: ClassId) -> Result<u32> {
        const M: &str = "ICorProfilerInfo2::GetBoxClassLayout";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut offset = 0u32;
        // SAFETY: `this` is live; `offset` is a valid local.
        ok(M, unsafe {
            (vt.GetBoxClassLayout)(self.this(), class.0, &mut offset)
        })?;
        Ok(offset)
    }

    /// Where strings keep their length and characters (`ICorProfilerInfo2::GetStringLayout`;
    /// deprecated in favour of [`ProfilerInfo::get_string_layout2`]).
    pub fn get_string_layout(&self) -> Result<StringLayout> {
        const M: &str = "ICorProfilerInfo2::GetStringLayout";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let (mut buffer_length, mut string_length, mut buffer) = (0u32, 0u32, 0u32);
        // SAFETY: `this` is live; the out-params are valid locals.
        ok(M, unsafe {
            (vt.GetStringLayout)(
                self.this(),
                &mut buffer_length,
                &mut string_length,
                &mut buffer,
            )
        })?;
        Ok(StringLayout {
            buffer_length_offset: buffer_length,
            string_length_offset: string_length,
            buffer_offset: buffer,
        })
    }

    /// Where strings keep their length and characters (`ICorProfilerInfo3::GetStringLayout2`).
    pub fn get_string_layout2(&self) -> Result<StringLayout2> {
        const M: &str = "ICorProfilerInfo3::GetStringLayout2";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let (mut string_length, mut buffer) = (0u32, 0u32);
        // SAFETY: `this` is live; the out-params are valid locals.
        ok(M, unsafe {
            (vt.GetStringLayout2)(self.this(), &mut string_length, &mut buffer)
        })?;
        Ok(StringLayout2 {
            string_length_offset: string_length,
            buffer_offset: buffer,
        })
    }

    /// The memory ranges of every generation (`ICorProfilerInfo2::GetGenerationBounds`).
    /// `E_FAIL` before the first GC has published them. Not between
    /// `GarbageCollectionStarted` and `GarbageCollectionFinished` (except in those two).
    pub fn get_generation_bounds(&self) -> Result<Vec<GenerationRange>> {
        const M: &str = "ICorProfilerInfo2::GetGenerationBounds";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let raw = read_array(M, |cap, count, out: *mut COR_PRF_GC_GENERATION_RANGE| {
            // SAFETY: `this` is live; `out` is null with `cap == 0` or holds `cap` elements.
            unsafe { (vt.GetGenerationBounds)(self.this(), cap, count, out) }
        })?;
        Ok(raw.into_iter().map(GenerationRange::from).collect())
    }

    /// The generation an object is in, with the range holding it
    /// (`ICorProfilerInfo2::GetObjectGeneration`). Same timing rules as
    /// [`ProfilerInfo::get_generation_bounds`].
    pub fn get_object_generation(&self, object: ObjectId) -> Result<GenerationRange> {
        const M: &str = "ICorProfilerInfo2::GetObjectGeneration";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut range = COR_PRF_GC_GENERATION_RANGE::default();
        // SAFETY: `this` is live; `range` is a valid local.
        ok(M, unsafe {
            (vt.GetObjectGeneration)(self.this(), object.0, &mut range)
        })?;
        Ok(range.into())
    }

    /// The frozen (preallocated, read-only) objects of a module
    /// (`ICorProfilerInfo2::EnumModuleFrozenObjects`; CoreCLR has none).
    pub fn enum_module_frozen_objects(&self, module: ModuleId) -> Result<ObjectEnum> {
        const M: &str = "ICorProfilerInfo2::EnumModuleFrozenObjects";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `out` is a valid local.
        ok(M, unsafe {
            (vt.EnumModuleFrozenObjects)(self.this(), module.0, &mut out)
        })?;
        // SAFETY: on success `out` is an owned ICorProfilerObjectEnum reference (or null).
        unsafe { ObjectEnum::from_raw(M, out) }
    }

    /// Calls `f` for every non-null reference `object` holds, in field order, until it
    /// returns false (`ICorProfilerInfo10::EnumerateObjectReferences`). Returns false if the
    /// object's type has no reference fields at all (the runtime's `S_FALSE`; `f` is not
    /// called). A panic in `f` stops the walk and is resumed once the runtime has returned.
    pub fn enumerate_object_references<F>(&self, object: ObjectId, mut f: F) -> Result<bool>
    where
        F: FnMut(ObjectReference) -> bool,
    {
        const M: &str = "ICorProfilerInfo10::EnumerateObjectReferences";
        let vt = self.vt::<ICorProfilerInfo10Vtbl>(10, M)?;
        let mut visit = Visit {
            f: &mut f,
            panic: None,
        };
        // SAFETY: `this` is live; the trampoline matches ObjectReferenceCallback and casts
        // `client_data` back to exactly the `Visit<F>` we pass, which outlives the call (the
        // runtime calls back synchronously and keeps nothing).
        let hr = unsafe {
            (vt.EnumerateObjectReferences)(
                self.this(),
                object.0,
                Some(reference_trampoline::<F>),
                (&mut visit as *mut Visit<'_, F>).cast(),
            )
        };
        if let Some(payload) = visit.panic {
            resume_unwind(payload);
        }
        let hr = crate::error::check(M, hr)?;
        Ok(hr == crate::error::HResult::OK)
    }

    /// Every non-null reference `object` holds ([`ProfilerInfo::enumerate_object_references`]).
    pub fn object_references(&self, object: ObjectId) -> Result<Vec<ObjectReference>> {
        let mut refs = Vec::new();
        self.enumerate_object_references(object, |r| {
            refs.push(r);
            true
        })?;
        Ok(refs)
    }

    /// True if the object is in a read-only (frozen) segment
    /// (`ICorProfilerInfo10::IsFrozenObject`).
    pub fn is_frozen_object(&self, object: ObjectId) -> Result<bool> {
        const M: &str = "ICorProfilerInfo10::IsFrozenObject";
        let vt = self.vt::<ICorProfilerInfo10Vtbl>(10, M)?;
        let mut frozen: BOOL = FALSE;
        // SAFETY: `this` is live; `frozen` is a valid local.
        ok(M, unsafe {
            (vt.IsFrozenObject)(self.this(), object.0, &mut frozen)
        })?;
        Ok(from_bool(frozen))
    }

    /// The size from which objects go to the large object heap
    /// (`ICorProfilerInfo10::GetLOHObjectSizeThreshold`; 85000 by default).
    pub fn get_loh_object_size_threshold(&self) -> Result<u32> {
        const M: &str = "ICorProfilerInfo10::GetLOHObjectSizeThreshold";
        let vt = self.vt::<ICorProfilerInfo10Vtbl>(10, M)?;
        let mut threshold = 0u32;
        // SAFETY: `this` is live; `threshold` is a valid local.
        ok(M, unsafe {
            (vt.GetLOHObjectSizeThreshold)(self.this(), &mut threshold)
        })?;
        Ok(threshold)
    }

    /// Runs a full, blocking garbage collection (`ICorProfilerInfo::ForceGC`). Only from a
    /// thread with no profiler callback on its stack and that runs no managed code (a thread
    /// of the profiler's own); `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` otherwise.
    pub fn force_gc(&self) -> Result<()> {
        const M: &str = "ICorProfilerInfo::ForceGC";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live; no arguments.
        ok(M, unsafe { (vt.ForceGC)(self.this()) })
    }

    /// A GC handle of kind `kind` to `object`, owned by the profiler until
    /// [`ProfilerInfo::destroy_handle`] (`ICorProfilerInfo13::CreateHandle`).
    pub fn create_handle(&self, object: ObjectId, kind: GcHandleType) -> Result<GcHandleId> {
        const M: &str = "ICorProfilerInfo13::CreateHandle";
        let vt = self.vt::<ICorProfilerInfo13Vtbl>(13, M)?;
        let mut handle: ObjectHandleID = ptr::null_mut();
        // SAFETY: `this` is live; `handle` is a valid local.
        ok(M, unsafe {
            (vt.CreateHandle)(self.this(), object.0, kind.0, &mut handle)
        })?;
        Ok(GcHandleId(handle as usize))
    }

    /// Frees a handle from [`ProfilerInfo::create_handle`] (`ICorProfilerInfo13::DestroyHandle`).
    pub fn destroy_handle(&self, handle: GcHandleId) -> Result<()> {
        const M: &str = "ICorProfilerInfo13::DestroyHandle";
        let vt = self.vt::<ICorProfilerInfo13Vtbl>(13, M)?;
        // SAFETY: `this` is live; the runtime validates the handle value.
        ok(M, unsafe {
            (vt.DestroyHandle)(self.this(), handle.0 as ObjectHandleID)
        })
    }

    /// The object a handle refers to now; null for a weak handle whose object was collected
    /// (`ICorProfilerInfo13::GetObjectIDFromHandle`).
    pub fn get_object_id_from_handle(&self, handle: GcHandleId) -> Result<ObjectId> {
        const M: &str = "ICorProfilerInfo13::GetObjectIDFromHandle";
        let vt = self.vt::<ICorProfilerInfo13Vtbl>(13, M)?;
        let mut object: ObjectID = 0;
        // SAFETY: `this` is live; `object` is a valid local.
        ok(M, unsafe {
            (vt.GetObjectIDFromHandle)(self.this(), handle.0 as ObjectHandleID, &mut object)
        })?;
        Ok(ObjectId(object))
    }

    /// The objects on the non-GC (frozen) heap, e.g. string literals on .NET 8+
    /// (`ICorProfilerInfo14::EnumerateNonGCObjects`).
    pub fn enumerate_non_gc_objects(&self) -> Result<ObjectEnum> {
        const M: &str = "ICorProfilerInfo14::EnumerateNonGCObjects";
        let vt = self.vt::<ICorProfilerInfo14Vtbl>(14, M)?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `out` is a valid local.
        ok(M, unsafe {
            (vt.EnumerateNonGCObjects)(self.this(), &mut out)
        })?;
        // SAFETY: on success `out` is an owned ICorProfilerObjectEnum reference (or null).
        unsafe { ObjectEnum::from_raw(M, out) }
    }

    /// The memory ranges of the non-GC heap (`ICorProfilerInfo14::GetNonGCHeapBounds`).
    pub fn get_non_gc_heap_bounds(&self) -> Result<Vec<NonGcHeapRange>> {
        const M: &str = "ICorProfilerInfo14::GetNonGCHeapBounds";
        let vt = self.vt::<ICorProfilerInfo14Vtbl>(14, M)?;
        let raw = read_array(M, |cap, count, out: *mut COR_PRF_NONGC_HEAP_RANGE| {
            // SAFETY: `this` is live; `out` is null with `cap == 0` or holds `cap` elements.
            unsafe { (vt.GetNonGCHeapBounds)(self.this(), cap, count, out) }
        })?;
        Ok(raw
            .into_iter()
            .map(|r| NonGcHeapRange {
                start: r.rangeStart,
                length: r.rangeLength,
                reserved: r.rangeLengthReserved,
            })
            .collect())
    }

    /// Calls `f` for every object on the GC heap until it returns false
    /// (`ICorProfilerInfo15::EnumerateGCHeapObjects`). The runtime suspends itself for the
    /// walk unless the profiler already did (`SuspendRuntime`); `f` must not allocate managed
    /// objects or wait for managed threads. A panic in `f` stops the walk and is resumed once
    /// the runtime has returned.
    pub fn enumerate_gc_heap_objects<F>(&self, mut f: F) -> Result<()>
    where
        F: FnMut(ObjectId) -> bool,
    {
        const M: &str = "ICorProfilerInfo15::EnumerateGCHeapObjects";
        let vt = self.vt::<ICorProfilerInfo15Vtbl>(15, M)?;
        let mut visit = Visit {
            f: &mut f,
            panic: None,
        };
        // SAFETY: `this` is live; the trampoline matches ObjectCallback and casts the state
        // back to exactly the `Visit<F>` we pass, which outlives the synchronous call.
        let hr = unsafe {
            (vt.EnumerateGCHeapObjects)(
                self.this(),
                Some(object_trampoline::<F>),
                (&mut visit as *mut Visit<'_, F>).cast(),
            )
        };
        if let Some(payload) = visit.panic {
            resume_unwind(payload);
        }
        ok(M, hr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls the reference trampoline the way the runtime does.
    fn call_reference<F: FnMut(ObjectReference) -> bool>(
        visit: &mut Visit<'_, F>,
        root: ObjectID,
        slot: *mut ObjectID,
    ) -> BOOL {
        let data = (visit as *mut Visit<'_, F>).cast::<c_void>();
        // SAFETY: `data` is a live Visit<F>; `slot` points at a readable ObjectID.
        unsafe { reference_trampoline::<F>(root, slot, data) }
    }

    /// Calls the object trampoline the way the runtime does.
    fn call_object<F: FnMut(ObjectId) -> bool>(visit: &mut Visit<'_, F>, object: ObjectID) -> BOOL {
        let data = (visit as *mut Visit<'_, F>).cast::<c_void>();
        // SAFETY: `data` is a live Visit<F>.
        unsafe { object_trampoline::<F>(object, data) }
    }

    #[test]
    fn trampolines_report_references_and_stop() {
        // Simulate the runtime: an "object" of three slots, the middle one null.
        let slots: [ObjectID; 3] = [0x1000, 0, 0x2000];
        let root = slots.as_ptr() as usize - 8;
        let mut seen = Vec::new();
        let mut f = |r: ObjectReference| {
            seen.push(r);
            true
        };
        let mut visit = Visit {
            f: &mut f,
            panic: None,
        };
        for slot in [0usize, 2] {
            let p = slots.as_ptr().wrapping_add(slot).cast_mut();
            assert_eq!(call_reference(&mut visit, root, p), TRUE);
        }
        assert_eq!(
            seen,
            [
                ObjectReference {
                    offset: 8,
                    target: ObjectId(0x1000)
                },
                ObjectReference {
                    offset: 24,
                    target: ObjectId(0x2000)
                },
            ]
        );
    }

    #[test]
    fn trampoline_catches_panics_and_stops() {
        let mut calls = 0;
        let mut f = |o: ObjectId| {
            calls += 1;
            if o.0 == 2 {
                panic!("boom");
            }
            true
        };
        let mut visit = Visit {
            f: &mut f,
            panic: None,
        };
        assert_eq!(call_object(&mut visit, 1), TRUE);
        assert_eq!(call_object(&mut visit, 2), FALSE);
        // After a panic nothing more is called.
        assert_eq!(call_object(&mut visit, 3), FALSE);
        let payload = visit.panic.take().expect("panic kept");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
        assert_eq!(calls, 2);
    }

    #[test]
    fn ranges() {
        let r = GenerationRange::from(COR_PRF_GC_GENERATION_RANGE {
            generation: 2,
            rangeStart: 0x1000,
            rangeLength: 0x100,
            rangeLengthReserved: 0x1000,
        });
        assert_eq!(r.generation, GcGeneration::GEN_2);
        assert!(r.contains(ObjectId(0x1000)));
        assert!(r.contains(ObjectId(0x10FF)));
        assert!(!r.contains(ObjectId(0x1100)));
        assert!(!r.contains(ObjectId(0xFFF)));
        let a = ArrayObjectInfo {
            element_type: 8,
            element_class: ClassId(0),
            dims: vec![2, 3],
            lower_bounds: vec![0, 0],
            data: 0,
        };
        assert_eq!(a.len(), 6);
        assert!(!a.is_empty());
    }
}
