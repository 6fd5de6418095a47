//! Feeds arbitrary bytes to everything `clrprof report` does with a trace: the loader, the
//! profile, the text and JSON reports, and every runtime view. Nothing may panic, hang or use
//! memory out of proportion to the input.
#![no_main]

use clrprof_analysis::output::{Json, Text};
use clrprof_analysis::runtime::View;
use clrprof_analysis::{Query, report, trace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(loaded) = trace::read(data) else {
        return;
    };
    let _ = loaded.integrity.notes();
    let query = Query::default();
    let mut sink = Vec::new();
    let _ = report::write_text(&loaded, &query, &Text::default(), &mut sink);
    sink.clear();
    let _ = report::write_json(&loaded, &query, &Json::default(), &mut sink);
    for view in View::ALL {
        sink.clear();
        let _ = report::write_view_text(&loaded, view, &mut sink);
    }
});
