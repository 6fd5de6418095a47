//! The runtime's name and real version for `SessionStart`, e.g. `CoreCLR 3.1.23`.
//!
//! `GetRuntimeInformation` cannot be trusted for it: CoreCLR 3.1 reports 4.0.30319.0 (the
//! version of the product it descends from); .NET 5 and later report their own. A runtime in a
//! standard install (and in the packages the tests use) is loaded from
//! `shared/Microsoft.NETCore.App/<version>/libcoreclr.so`, so the name of the directory of the
//! `libcoreclr.so` mapped into this process is its version; `clrprof ps` reads the same thing
//! from the outside. Where that directory is not named after a version (a self-contained
//! application), the reported version is used.

use std::path::Path;

use clrprof_sdk::ProfilerInfo;

/// The runtime's shared library.
const RUNTIME_LIBRARY: &str = "libcoreclr.so";

/// `CoreCLR <version>`: the version from the directory of the loaded runtime library, else the
/// one the runtime reports, else none.
pub fn describe(info: &ProfilerInfo) -> String {
    let from_path = std::fs::read_to_string("/proc/self/maps")
        .ok()
        .and_then(|maps| version_from_maps(&maps));
    let version = from_path.or_else(|| {
        info.get_runtime_information()
            .ok()
            .map(|r| format!("{}.{}.{}.{}", r.major, r.minor, r.build, r.qfe))
    });
    match version {
        Some(v) => format!("CoreCLR {v}"),
        None => "CoreCLR".to_string(),
    }
}

/// The version in the path of the runtime library mapped into the process (`/proc/PID/maps`
/// text): the name of its directory, if that looks like a version.
fn version_from_maps(maps: &str) -> Option<String> {
    let library = maps.lines().find_map(|line| {
        let path = mapped_path(line)?;
        (Path::new(path).file_name()? == RUNTIME_LIBRARY).then_some(path)
    })?;
    let dir = Path::new(library).parent()?.file_name()?.to_str()?;
    is_version(dir).then(|| dir.to_string())
}

/// The path of a `/proc/PID/maps` line (`address perms offset dev inode path`), which may
/// contain spaces; `None` for an anonymous mapping.
fn mapped_path(line: &str) -> Option<&str> {
    let mut rest = line;
    for _ in 0..5 {
        rest = rest.trim_start();
        rest = &rest[rest.find(char::is_whitespace)?..];
    }
    let path = rest.trim();
    (!path.is_empty()).then_some(path)
}

/// `major.minor.patch`, optionally with a pre-release suffix (`8.0.0-rc.2.23479.6`).
fn is_version(text: &str) -> bool {
    let release = text.split_once('-').map_or(text, |(release, _)| release);
    let parts: Vec<&str> = release.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0
7f1c2b1e0000-7f1c2b2c2000 r--p 00000000 fe:01 1837  /opt/dotnet/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so
7f1c2b2c2000-7f1c2b6b3000 r-xp 000e2000 fe:01 1837  /opt/dotnet/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so
7f1c2c000000-7f1c2c021000 r--p 00000000 fe:01 1838  /opt/dotnet/shared/Microsoft.NETCore.App/8.0.4/libclrjit.so
";

    #[test]
    fn the_version_is_the_runtime_library_directory() {
        assert_eq!(version_from_maps(MAPS).as_deref(), Some("8.0.4"));
        let old = MAPS.replace("8.0.4", "3.1.23");
        assert_eq!(version_from_maps(&old).as_deref(), Some("3.1.23"));
    }

    #[test]
    fn no_runtime_library_or_no_version_in_its_path() {
        assert_eq!(version_from_maps(""), None);
        let elsewhere = MAPS.replace("libcoreclr.so", "libcoreclrtraceptprovider.so");
        assert_eq!(version_from_maps(&elsewhere), None);
        // A self-contained application: the runtime sits next to the program.
        let app = MAPS.replace("shared/Microsoft.NETCore.App/8.0.4", "app/bin");
        assert_eq!(version_from_maps(&app), None);
    }

    #[test]
    fn paths_may_have_spaces() {
        let spaced = MAPS.replace("/opt/dotnet/", "/home/a user/dot net/");
        assert_eq!(version_from_maps(&spaced).as_deref(), Some("8.0.4"));
        assert_eq!(
            mapped_path("7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0"),
            None
        );
    }

    #[test]
    fn versions() {
        for good in ["3.1.23", "8.0.4", "10.0.0", "8.0.0-rc.2.23479.6"] {
            assert!(is_version(good), "{good}");
        }
        for bad in ["", "8.0", "8.0.x", "bin", "v4.0.30319", "8..4"] {
            assert!(!is_version(bad), "{bad}");
        }
    }
}
