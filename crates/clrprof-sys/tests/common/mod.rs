//! Helpers that compare a declared vtable with a listing written down from the IDL.
//!
//! A listing has one method per line, `Interface Method`, in the IDL's declaration order,
//! starting with the first method after IUnknown's three. Blank lines and `#` comments are
//! ignored. The expected slot of the n-th listed method (0-based) is `3 + n`.

use clrprof_sys::Vtable;

/// Asserts that `V` declares exactly the listed methods, in the listed slots.
pub fn check_listing<V: Vtable>(listing: &str) {
    let expected: Vec<(String, String, usize)> = listing
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .enumerate()
        .map(|(n, l)| {
            let mut parts = l.split_whitespace();
            let interface = parts.next().expect("interface name").to_string();
            let method = parts
                .next()
                .unwrap_or_else(|| panic!("line `{l}` has no method name"))
                .to_string();
            (interface, method, 3 + n)
        })
        .collect();
    let actual: Vec<(String, String, usize)> = V::all_slots()
        .into_iter()
        .skip(3)
        .map(|s| (s.interface.to_string(), s.method.to_string(), s.index))
        .collect();
    for (i, (exp, act)) in expected.iter().zip(actual.iter()).enumerate() {
        assert_eq!(
            exp,
            act,
            "{}: slot {} differs (listing vs declaration)",
            V::INTERFACE,
            i + 3
        );
    }
    assert_eq!(
        expected.len(),
        actual.len(),
        "{}: the listing has {} methods, the declaration {}",
        V::INTERFACE,
        expected.len(),
        actual.len()
    );
}

/// Asserts that `V`, an earlier version of the interface `listing` lists, declares exactly the
/// methods of `listing` up to the last one of its own interface (`V::INTERFACE`).
pub fn check_listing_prefix<V: Vtable>(listing: &str) {
    check_listing::<V>(&listing_through(listing, V::INTERFACE));
}

/// `listing` cut off after the last method of `interface`, to check an intermediate version.
fn listing_through(listing: &str, interface: &str) -> String {
    let lines: Vec<&str> = listing.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.split_whitespace().next() == Some(interface))
        .unwrap_or_else(|| panic!("{interface} is not in the listing"));
    lines[..=last].join("\n")
}

/// Asserts that `method` sits in `slot` of `V`: used for slots observed on a real runtime.
pub fn assert_slot<V: Vtable>(method: &str, slot: usize) {
    let found = V::all_slots().into_iter().find(|s| s.method == method);
    match found {
        Some(s) => assert_eq!(s.index, slot, "{}::{method}", V::INTERFACE),
        None => panic!("{} has no method {method}", V::INTERFACE),
    }
}
