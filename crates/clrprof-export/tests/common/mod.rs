//! What the exporter's integration tests send: one period's profiles, and the resource.

use clrprof_export::{Frame, PeriodProfiles, ProfileType, Resource};

/// A period with one CPU sample of 10 ms in `Main` -> `Work` of `App.dll`.
pub fn period() -> PeriodProfiles {
    let mut p = PeriodProfiles::new(1, 2, 16);
    p.add(
        ProfileType::Cpu,
        &[Frame::new("Main", "App.dll"), Frame::new("Work", "App.dll")],
        &[10_000_000],
    )
    .unwrap();
    p
}

/// This process, as the service `svc` on .NET 8.0.4.
pub fn resource() -> Resource {
    Resource::of_this_process("svc", ".NET", "8.0.4")
}
