//! Outputs that are inputs: refused before a command starts, so that a mistyped `-o` never
//! writes a trace over the program it records, a report over the trace it reads, or two
//! outputs of one command over each other.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::safe_file;

/// A file a command reads or writes, and what it is to the command (`the program`, `the
/// trace read`, `-o`).
#[derive(Debug, Clone)]
pub(crate) struct Named<'a> {
    pub(crate) what: String,
    pub(crate) path: &'a Path,
}

impl<'a> Named<'a> {
    pub(crate) fn new(what: impl Into<String>, path: &'a Path) -> Self {
        Named {
            what: what.into(),
            path,
        }
    }
}

/// Where `path` leads, for comparing names that do not exist yet: the target of a link, with
/// its directory made absolute and free of links.
fn normalized(path: &Path) -> PathBuf {
    let target = safe_file::resolve(path);
    let dir = safe_file::parent_dir(&target);
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    match target.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

/// Whether `a` and `b` name the same file.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return ma.dev() == mb.dev() && ma.ino() == mb.ino();
        }
    }
    normalized(a) == normalized(b)
}

/// Refuses an output that is one of the inputs, or the same file as another output. Devices
/// and pipes (`/dev/null`, `/dev/stdout`) are written in place and may be named more than
/// once.
pub(crate) fn refuse(outputs: &[Named<'_>], inputs: &[Named<'_>]) -> Result<()> {
    let special = |p: &Path| safe_file::is_special(&safe_file::resolve(p));
    for (i, out) in outputs.iter().enumerate() {
        if special(out.path) {
            continue;
        }
        for input in inputs {
            if input.path.exists() && same_file(out.path, input.path) {
                bail!(
                    "{} {} is {}: writing it would destroy it; choose another file for {}",
                    out.what,
                    out.path.display(),
                    input.what,
                    out.what
                );
            }
        }
        for other in &outputs[i + 1..] {
            if same_file(out.path, other.path) {
                bail!(
                    "{} and {} are the same file ({}): one would replace the other; give them \
                     different names",
                    out.what,
                    other.what,
                    out.path.display()
                );
            }
        }
    }
    Ok(())
}

/// The program a command line starts, found the way `execvp` finds it (a name without a `/`
/// is looked up in `PATH`), or the `.dll` that `record` runs with `dotnet`.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn find_program(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    // `record` runs a `.dll` with `dotnet`, from where it is.
    if name.contains('/') || path.is_file() {
        return Some(path.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The files a command line names: the program and every argument that is an existing file.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn command_inputs(command: &[String]) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some((first, rest)) = command.split_first() {
        if let Some(p) = find_program(first) {
            out.push((format!("the program, {}", p.display()), p));
        }
        for arg in rest {
            let p = PathBuf::from(arg);
            if p.is_file() {
                out.push((format!("an argument of the program, {arg}"), p));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_is_an_input_or_another_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.clrprof");
        std::fs::write(&trace, "trace").unwrap();
        let link = dir.path().join("link.clrprof");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&trace, &link).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(&trace, &link).unwrap();
        let by_other_name = dir.path().join(".").join("t.clrprof");
        let read = [Named::new("the trace read", trace.as_path())];

        let err = refuse(&[Named::new("-o", &by_other_name)], &read).unwrap_err();
        assert!(err.to_string().contains("is the trace read"), "{err}");
        #[cfg(unix)]
        assert!(
            refuse(&[Named::new("-o", &link)], &read).is_err(),
            "through a link"
        );

        let new = dir.path().join("new.txt");
        let also_new = dir.path().join("sub").join("..").join("new.txt");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let err = refuse(
            &[Named::new("-o", &new), Named::new("--trace", &also_new)],
            &read,
        )
        .unwrap_err();
        assert!(err.to_string().contains("are the same file"), "{err}");

        assert!(refuse(&[Named::new("-o", &new)], &read).is_ok());
        #[cfg(unix)]
        assert!(
            refuse(
                &[
                    Named::new("-o", Path::new("/dev/null")),
                    Named::new("--trace", Path::new("/dev/null"))
                ],
                &[]
            )
            .is_ok(),
            "a device may be named twice"
        );
    }
}
