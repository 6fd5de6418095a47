//! `clrprof attach PID --stop` for export mode started by `clrprof attach --export`: the agent
//! waits on an abstract Unix socket named for its process
//! (`clrprof_trace::protocol::export_control_name`); a connection that sends `EXPORT_STOP`
//! makes it send the last period, stop collecting and ask the runtime to unload it, then
//! answer `EXPORT_STOPPED` (or close without an answer if the runtime refused).
//! An abstract socket needs no file and goes away with the process; it is reachable from the
//! process's network namespace (a CLI in another container cannot stop it: the export ends with
//! the process then).

#[cfg(target_os = "linux")]
use clrprof_trace::protocol;

use crate::features::Running;

/// Starts the thread that waits for `clrprof attach --stop` (Linux; elsewhere export mode runs
/// until the process ends, and says so).
pub fn listen(running: &'static Running) {
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixListener};

        let name = protocol::export_control_name(std::process::id());
        let listener = SocketAddr::from_abstract_name(name.as_bytes())
            .and_then(|addr| UnixListener::bind_addr(&addr));
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                super::tell(&format!(
                    "cannot wait for `clrprof attach --stop` ({e}); export mode runs until the \
                     process ends"
                ));
                return;
            }
        };
        let spawned = crate::recorder::threads::spawn_agent_thread("clrprof-control", move || {
            serve(running, &listener);
        });
        if let Err(e) = spawned {
            super::tell(&format!(
                "cannot start the control thread ({e}); export mode runs until the process ends"
            ));
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = running;
        super::tell("`clrprof attach --stop` needs Linux; export mode runs until the process ends");
    }
}

/// Answers connections until one asks to stop and the stop is done.
#[cfg(target_os = "linux")]
fn serve(running: &'static Running, listener: &std::os::unix::net::UnixListener) {
    use std::io::{Read, Write};
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else {
            continue;
        };
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let mut byte = [0u8; 1];
        if stream.read_exact(&mut byte).is_err() || byte[0] != protocol::EXPORT_STOP {
            continue;
        }
        if running.request_detach() {
            let _ = stream.write_all(&[protocol::EXPORT_STOPPED]);
        }
        return;
    }
}
