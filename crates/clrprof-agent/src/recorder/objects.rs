//! Reading managed objects that the runtime handed to the current callback.

use clrprof_sdk::ObjectId;
use clrprof_sdk::info::{StringLayout2, read_reference_field};

/// The most UTF-16 units of a message that are kept.
const MAX_MESSAGE_UNITS: usize = 2048;

/// The string an exception object keeps in its message field (`System.Exception._message`),
/// cut to [`MAX_MESSAGE_UNITS`] (with `…` at the end when cut); empty when the field is null.
///
/// `exception` must be the object of the `ExceptionThrown` callback running on this thread,
/// and `message_offset` the offset `GetClassLayout` gave for `_message` in `System.Exception`
/// (a base class of every exception object).
pub fn exception_message(
    exception: ObjectId,
    message_offset: u32,
    layout: &StringLayout2,
) -> String {
    if exception.is_null() {
        return String::new();
    }
    // SAFETY: during ExceptionThrown the exception object is live and no GC can run on this
    // thread's behalf until the callback returns (the runtime is in cooperative mode); the
    // offset is the runtime's own for a reference field of a base class of the object.
    let message = unsafe { read_reference_field(exception, message_offset) };
    // SAFETY: `_message` is declared `string`, so a non-null value is a live System.String,
    // reachable from the live exception object for as long as the callback runs.
    let (mut text, cut) = unsafe { layout.read(message, MAX_MESSAGE_UNITS) };
    if cut {
        text.push('…');
    }
    text
}
