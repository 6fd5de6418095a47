//! Running child processes from tests without leaking them.
//!
//! Like py-spy's integration tests, every child is owned by a guard whose `Drop` kills it, so a
//! failing assertion (a panic) does not leave programs running. On Unix the child is also made
//! the leader of a new process group and the whole group is killed, which takes care of the
//! programs `clrprof record` starts on our behalf.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Environment variable overriding [`default_timeout`], in seconds.
pub const TIMEOUT_ENV: &str = "CLRPROF_E2E_TIMEOUT";

/// How long one child process may run before the test fails: `$CLRPROF_E2E_TIMEOUT` seconds,
/// default 300.
pub fn default_timeout() -> Duration {
    std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(300))
}

/// A running child process that is killed (with its process group on Unix) when dropped.
pub struct ChildGuard {
    child: Child,
    description: String,
    /// Set once the child has been waited for.
    status: Option<ExitStatus>,
}

impl ChildGuard {
    /// Spawns `cmd` as the leader of a new process group (Unix), with the default action for
    /// the signals tests send (a test run started in the background of a shell inherits
    /// SIGINT and SIGQUIT ignored, and .NET keeps an inherited ignore, so `Ctrl-C` tests would
    /// depend on how the tests were started). Stdio is left as configured.
    ///
    /// # Panics
    /// If the program cannot be started.
    pub fn spawn(cmd: &mut Command) -> ChildGuard {
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
            // SAFETY: between fork and exec the closure only calls `signal`, which is
            // async-signal-safe, and allocates nothing.
            unsafe {
                cmd.pre_exec(|| {
                    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
                        if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let description = describe_command(cmd);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{description}`: {e}"));
        ChildGuard {
            child,
            description,
            status: None,
        }
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The underlying child, e.g. to write to its stdin.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Kills the child and everything in its process group, then reaps it.
    pub fn kill(&mut self) {
        if self.status.is_none() {
            kill_tree(&mut self.child);
            self.status = self.child.wait().ok();
        }
    }

    /// Waits for the child to exit, collecting its piped stdout and stderr (set them to
    /// `Stdio::piped()` before spawning to capture them). Processes the child left behind in its
    /// process group are killed.
    ///
    /// # Panics
    /// If the child runs longer than `timeout` (it is killed first; the panic message has its
    /// output so far).
    pub fn wait_with_output(&mut self, timeout: Duration) -> Output {
        let stdout = self.child.stdout.take().map(reader);
        let stderr = self.child.stderr.take().map(reader);
        let deadline = Instant::now() + timeout;
        let mut timed_out = false;
        while !has_exited(&mut self.child) {
            if Instant::now() >= deadline {
                timed_out = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Kills the process group while the leader is still unreaped (so its id cannot have
        // been reused): after a timeout that is the child itself, after a normal exit it is
        // whatever it left behind still holding our pipes.
        kill_tree(&mut self.child);
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("cannot wait for `{}`: {e}", self.description));
        self.status = Some(status);
        let output = Output {
            status,
            stdout: stdout.map(join).unwrap_or_default(),
            stderr: stderr.map(join).unwrap_or_default(),
        };
        if timed_out {
            panic!(
                "`{}` did not finish within {timeout:?} and was killed\n{}",
                self.description,
                output.describe()
            );
        }
        output
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if self.status.is_none() {
            kill_tree(&mut self.child);
            let _ = self.child.wait();
        }
    }
}

impl std::fmt::Debug for ChildGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildGuard")
            .field("pid", &self.child.id())
            .field("command", &self.description)
            .field("status", &self.status)
            .finish()
    }
}

/// Runs `cmd` to completion with [`default_timeout`]: stdin is null, stdout and stderr are
/// captured. Does not check the exit status (see [`OutputExt::assert_success`]).
pub fn run_command(cmd: &mut Command) -> Output {
    run_command_timeout(cmd, default_timeout())
}

/// [`run_command`] with an explicit timeout.
pub fn run_command_timeout(cmd: &mut Command, timeout: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    ChildGuard::spawn(cmd).wait_with_output(timeout)
}

fn reader<R: Read + Send + 'static>(mut pipe: R) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

fn join(handle: JoinHandle<Vec<u8>>) -> Vec<u8> {
    handle.join().unwrap_or_default()
}

/// What `waitid(WNOWAIT)` says about a child, without reaping it.
#[cfg(unix)]
#[derive(PartialEq, Eq)]
enum State {
    Running,
    /// Exited but not reaped: its pid (and process group id) are still reserved.
    Exited,
    /// Already reaped (e.g. through `child_mut().wait()`).
    Reaped,
}

#[cfg(unix)]
fn peek(child: &Child) -> State {
    // SAFETY: `siginfo_t` is plain data; all-zero is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves the child waitable, so the `Child`
    // keeps owning it.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if rc != 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ECHILD) => State::Reaped,
            _ => State::Running, // EINTR: look again later
        };
    }
    // SAFETY: waitid succeeded, so `info` was written; with WNOHANG `si_pid` is 0 when no
    // child has changed state.
    if unsafe { info.si_pid() } == 0 {
        State::Running
    } else {
        State::Exited
    }
}

/// Whether the child has exited (without reaping it on Unix, so its pid stays reserved).
#[cfg(unix)]
fn has_exited(child: &mut Child) -> bool {
    peek(child) != State::Running
}

#[cfg(not(unix))]
fn has_exited(child: &mut Child) -> bool {
    !matches!(child.try_wait(), Ok(None))
}

/// Kills the child's process group (Unix) or the child.
fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    if peek(child) != State::Reaped {
        let pgid = child.id() as libc::pid_t;
        // SAFETY: plain syscall. The child leads its own process group (`process_group(0)`)
        // and is not reaped yet, so the group id cannot belong to anyone else.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    let _ = child.kill();
}

/// `cmd` as a shell-like line: the program and its arguments, separated by spaces.
pub fn describe_command(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// Convenience accessors for a finished process's [`Output`].
pub trait OutputExt {
    /// Stdout as (lossy) UTF-8.
    fn stdout_str(&self) -> String;
    /// Stderr as (lossy) UTF-8.
    fn stderr_str(&self) -> String;
    /// Exit status (and the runtime the tests run on), stdout and stderr, for assertion
    /// messages.
    fn describe(&self) -> String;
    /// Panics (showing stdout and stderr) unless the process exited with status 0.
    #[track_caller]
    fn assert_success(&self) -> &Self;
    /// Panics (showing stdout and stderr) unless the process exited with status `code`.
    #[track_caller]
    fn assert_exit_code(&self, code: i32) -> &Self;
    /// Panics (showing the status, stdout and stderr) unless stdout contains `text`.
    #[track_caller]
    fn assert_stdout_contains(&self, text: &str) -> &Self;
    /// Panics (showing the status, stdout and stderr) unless stderr contains `text`.
    #[track_caller]
    fn assert_stderr_contains(&self, text: &str) -> &Self;
}

impl OutputExt for Output {
    fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    fn describe(&self) -> String {
        format!(
            "status: {} (test run on {})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            crate::dotnet::Dotnet::current_label(),
            self.stdout_str(),
            self.stderr_str()
        )
    }

    #[track_caller]
    fn assert_success(&self) -> &Self {
        assert!(self.status.success(), "process failed\n{}", self.describe());
        self
    }

    #[track_caller]
    fn assert_exit_code(&self, code: i32) -> &Self {
        assert_eq!(self.status.code(), Some(code), "{}", self.describe());
        self
    }

    #[track_caller]
    fn assert_stdout_contains(&self, text: &str) -> &Self {
        assert!(self.stdout_str().contains(text), "{}", self.describe());
        self
    }

    #[track_caller]
    fn assert_stderr_contains(&self, text: &str) -> &Self {
        assert!(self.stderr_str().contains(text), "{}", self.describe());
        self
    }
}

/// Sends `signal` (as `kill` takes it: `-TERM`, `-KILL`) to process `pid`; `kill` must succeed.
#[track_caller]
pub fn send_signal(signal: &str, pid: impl std::fmt::Display) {
    let pid = pid.to_string();
    let status = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(status.success(), "kill {signal} {pid} failed");
}

/// The process id of the first child of process `pid` (the program a `clrprof` process
/// started), from Linux's `/proc`.
///
/// # Panics
/// If `pid` has no child.
#[track_caller]
pub fn first_child(pid: u32) -> u32 {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("process {pid} has no child"))
        .parse()
        .unwrap()
}

/// Waits (at most 60 s) until a program writes its process id to `dir/pid`, then sends it
/// `SIGUSR2`: the signal that asks clrprof's agent for a heap snapshot.
#[track_caller]
pub fn signal_snapshot_when_ready(dir: &std::path::Path) {
    let pid_file = dir.join("pid");
    let started = Instant::now();
    while !pid_file.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the program never wrote its pid to {}",
            pid_file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    send_signal("-USR2", pid.trim());
}
