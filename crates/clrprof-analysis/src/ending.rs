//! How a program ended, written the same way by `record`, `report` and every format:
//! `exit 3`, `killed by signal 6 (SIGABRT)`.

/// The name of a Linux signal number (`SIGABRT` for 6), if it has one.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    const NAMES: [&str; 32] = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    usize::try_from(signal)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .filter(|n| !n.is_empty())
}

/// `exit 3` for an exit code, `killed by signal 6 (SIGABRT)` when `signal` is not 0.
pub fn program_end(exit_code: i32, signal: i32) -> String {
    if signal == 0 {
        return format!("exit {exit_code}");
    }
    match signal_name(signal) {
        Some(name) => format!("killed by signal {signal} ({name})"),
        None => format!("killed by signal {signal}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends() {
        assert_eq!(program_end(0, 0), "exit 0");
        assert_eq!(program_end(3, 0), "exit 3");
        assert_eq!(program_end(-1, 6), "killed by signal 6 (SIGABRT)");
        assert_eq!(program_end(-1, 9), "killed by signal 9 (SIGKILL)");
        assert_eq!(program_end(-1, 40), "killed by signal 40");
        assert_eq!(signal_name(0), None);
        assert_eq!(signal_name(-3), None);
    }
}
