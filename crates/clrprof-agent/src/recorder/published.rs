//! A value published for the rest of the process, which can be replaced by a newer one.
//!
//! The agent's session lives in one: callbacks read it without a lock (one atomic load), and
//! an attach after a detach publishes a new session in place of the ended one. Published
//! values are leaked on purpose and never freed: a callback that read the old session just
//! before the new one was published may still be using it, and a reference must stay valid
//! for as long as anyone holds it.

use core::sync::atomic::{AtomicPtr, Ordering};

/// A slot holding at most one published `&'static T`.
pub struct Published<T: 'static>(AtomicPtr<T>);

impl<T: Sync + 'static> Published<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        Published(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// The latest published value.
    pub fn get(&self) -> Option<&'static T> {
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: the slot only ever holds null or a pointer from `Box::leak` in `publish`,
        // which is never freed, so a non-null pointer is valid for 'static.
        unsafe { p.as_ref() }
    }

    /// Publishes `value` (leaking it) in place of the previous one, which stays valid.
    pub fn publish(&self, value: T) -> &'static T {
        let leaked: &'static mut T = Box::leak(Box::new(value));
        self.0.store(leaked as *mut T, Ordering::Release);
        leaked
    }
}

impl<T: Sync + 'static> Default for Published<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_values_replace_older_ones_which_stay_valid() {
        static SLOT: Published<String> = Published::new();
        assert!(SLOT.get().is_none());
        let first = SLOT.publish("one".into());
        assert_eq!(SLOT.get().map(String::as_str), Some("one"));
        SLOT.publish("two".into());
        assert_eq!(SLOT.get().map(String::as_str), Some("two"));
        assert_eq!(first, "one");
    }
}
