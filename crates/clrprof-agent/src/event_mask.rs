//! The event mask after startup. `configure` sets the mask the session needs from the start;
//! later, the heap snapshots turn the runtime's heap walk on and off, and async chains turn
//! on the precompiled-code searches when a module needs them. Both change the session's mask
//! through [`CurrentMask::change`], under one lock, from the mask last set, so that neither
//! undoes the other.

use std::sync::Mutex;

use clrprof_sdk::ProfilerInfo;
use clrprof_sdk::flags::{EventMask, HighEventMask};

/// Why the event mask was not changed.
#[derive(Debug, thiserror::Error)]
pub enum MaskUnchanged {
    /// The runtime has no `SetEventMask2`, or refused the mask asked for at startup.
    #[error("the runtime cannot change the event mask after startup")]
    Fixed,
    /// The runtime refused the new mask.
    #[error("{0}")]
    Refused(clrprof_sdk::Error),
}

/// A session's event mask: the mask last set, if it can be changed (`SetEventMask2`,
/// ICorProfilerInfo5).
#[derive(Default)]
pub struct CurrentMask(Mutex<Option<(EventMask, HighEventMask)>>);

impl CurrentMask {
    /// Notes the mask `configure` set; `changeable` is false where the runtime cannot change it
    /// later (no `SetEventMask2`, or it refused the one asked for).
    pub fn configured(&self, low: EventMask, high: HighEventMask, changeable: bool) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = changeable.then_some((low, high));
    }

    /// Sets the mask `to` makes of the current one. `Err` says why it was not changed.
    pub fn change(
        &self,
        info: &ProfilerInfo,
        to: impl FnOnce(EventMask, HighEventMask) -> (EventMask, HighEventMask),
    ) -> Result<(), MaskUnchanged> {
        let mut current = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some((low, high)) = *current else {
            return Err(MaskUnchanged::Fixed);
        };
        let (low, high) = to(low, high);
        info.set_event_mask2(low, high)
            .map_err(MaskUnchanged::Refused)?;
        *current = Some((low, high));
        Ok(())
    }
}
