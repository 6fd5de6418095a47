//! The names reports give files and programs: a path's last component, and the program a
//! command line runs.

/// The last component of a path (either separator).
pub fn file_name(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_string()
}

/// Options of the `dotnet` host that take a value (`dotnet exec --runtimeconfig x.json
/// app.dll`).
const HOST_OPTIONS_WITH_VALUE: &[&str] = &[
    "--runtimeconfig",
    "--depsfile",
    "--additionalprobingpath",
    "--additional-deps",
    "--fx-version",
    "--roll-forward",
    "--roll-forward-on-no-candidate-fx",
];

/// The program a command line runs, by its file name: the application the `dotnet` host
/// runs (`dotnet exec --runtimeconfig x.json cecil.exe in.dll` runs `cecil.exe`, whatever its
/// arguments), an SDK command as `dotnet run`, else the executable itself (an application
/// host, `./app`). Empty for an empty command line.
pub fn program_name(command_line: &str) -> String {
    let mut words = command_line.split_whitespace();
    let Some(first) = words.next() else {
        return String::new();
    };
    let exe = file_name(first);
    if exe != "dotnet" && exe != "dotnet.exe" {
        return exe;
    }
    while let Some(w) = words.next() {
        if w == "exec" {
            continue;
        }
        if HOST_OPTIONS_WITH_VALUE.contains(&w) {
            words.next();
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        let app = file_name(w);
        let is_file = w.contains(['/', '\\']) || app.contains('.');
        return if is_file { app } else { format!("{exe} {w}") };
    }
    exe
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_command_line_is_the_application_dotnet_runs() {
        assert_eq!(program_name("dotnet Shop.dll"), "Shop.dll");
        assert_eq!(
            program_name("/usr/bin/dotnet /opt/cecil/cecil.exe /tmp/in.dll -o out.dll"),
            "cecil.exe"
        );
        assert_eq!(
            program_name("dotnet exec --runtimeconfig a.json --depsfile a.deps.json a.dll x.dll"),
            "a.dll"
        );
        assert_eq!(program_name("dotnet run --project x"), "dotnet run");
        assert_eq!(program_name("/srv/app/MyService --port 80"), "MyService");
        assert_eq!(program_name("dotnet"), "dotnet");
        assert_eq!(program_name(""), "");
    }
}
