//! What the agent records about a thrown exception beyond the callback's arguments: the
//! message the exception object holds and the managed stack at the throw.

use std::sync::OnceLock;

use clrprof_sdk::info::StringLayout2;
use clrprof_sdk::{ClassId, Namer, ObjectId, ProfilerInfo};

use crate::recorder::objects;
use crate::stacks::{self, ManagedFrame};

/// The most frames of a throw-site stack that are kept.
pub const MAX_THROW_FRAMES: usize = 256;

/// Finds, once, where `System.Exception` keeps its message.
#[derive(Default)]
pub struct ExceptionReader {
    /// Offset of `System.Exception._message` from an ObjectID; set when first found.
    message_offset: OnceLock<u32>,
    string_layout: OnceLock<Option<StringLayout2>>,
}

impl ExceptionReader {
    /// The message stored in `exception` (of class `class`), or empty if it has none or it
    /// could not be read. Only inside `ExceptionThrown` for that object.
    pub fn message(
        &self,
        info: &ProfilerInfo,
        namer: &Namer,
        exception: ObjectId,
        class: ClassId,
    ) -> String {
        let Some(layout) = *self
            .string_layout
            .get_or_init(|| info.get_string_layout2().ok())
        else {
            return String::new();
        };
        let offset = match self.message_offset.get() {
            Some(&offset) => offset,
            None => match message_offset(info, namer, class) {
                Some(offset) => *self.message_offset.get_or_init(|| offset),
                None => return String::new(),
            },
        };
        objects::exception_message(exception, offset, &layout)
    }
}

/// Walks from `class` up its base classes to `System.Exception` and asks the runtime where
/// that class keeps its `_message` field.
fn message_offset(info: &ProfilerInfo, namer: &Namer, class: ClassId) -> Option<u32> {
    let mut current = class;
    // Inheritance chains are short; the bound only guards against a runtime that loops.
    for _ in 0..64 {
        if current.is_null() {
            return None;
        }
        let class_info = info.get_class_id_info2(current).ok()?;
        let import = namer.metadata(info, class_info.module).ok()??;
        let props = import.get_type_def_props(class_info.token).ok()?;
        if props.name == "System.Exception" {
            let layout = info.get_class_layout(current).ok()?;
            return layout
                .fields
                .iter()
                .find(|f| {
                    import
                        .get_field_props(f.field)
                        .is_ok_and(|p| p.name == "_message")
                })
                .map(|f| f.offset);
        }
        current = class_info.parent;
    }
    None
}

/// The managed frames of the current thread, innermost first, and whether there were more
/// than [`MAX_THROW_FRAMES`].
pub fn throw_site_stack(info: &ProfilerInfo) -> (Vec<ManagedFrame>, bool) {
    let mut frames = [ManagedFrame::default(); MAX_THROW_FRAMES];
    let (depth, truncated) = stacks::managed_stack(info, &mut frames);
    (frames[..depth].to_vec(), truncated)
}
