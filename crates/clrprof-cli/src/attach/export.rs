//! `clrprof attach PID --export URL ...` and `clrprof attach PID --stop`: export mode
//! (continuous profiling) started in a running process without a restart, and ended.
//!
//! Starting loads the agent with the export settings as its client data
//! (`protocol::attach_export_client_data`, the `CLRPROF_EXPORT_*` variables `clrprof env`
//! would print); the agent then ships a profile of every period itself, and clrprof returns
//! at once. Stopping connects to the agent's control socket (an abstract Unix socket named
//! for the process, `protocol::export_control_name`) and asks it to end: it sends its last
//! period, stops collecting and detaches.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clrprof_ipc::discovery;
use clrprof_trace::config::ExportSettings;
use clrprof_trace::protocol;

/// How long `--stop` waits for the agent's answer: the last period's send (at most 2 s) and
/// the runtime's answer to the detach request.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// Starts export mode in process `pid` with `settings` and the agent at `agent`.
pub(crate) fn start(pid: u32, settings: &ExportSettings, agent: &Path) -> Result<i32> {
    if let Some(why) = crate::ps::cannot_attach(pid) {
        bail!("cannot attach to process {pid}: {why}");
    }
    discovery::socket_path(pid).map_err(super::explain)?;
    let agent = agent.to_str().context("the agent's path is not UTF-8")?;
    let vars: Vec<(String, String)> = settings
        .to_env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let client_data = protocol::attach_export_client_data(&vars);
    super::load_agent(pid, agent, &client_data)
        .map_err(super::explain)
        .with_context(|| format!("cannot attach to process {pid}"))?;
    say!(
        "clrprof: export mode started in process {pid}: {}; `clrprof attach {pid} --stop` ends it",
        crate::env::describe(settings)
    );
    Ok(0)
}

/// Ends the export mode `start` began in process `pid`.
pub(crate) fn stop(pid: u32) -> Result<i32> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};

    let name = protocol::export_control_name(pid);
    let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
    let mut stream = UnixStream::connect_addr(&addr).map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound => anyhow::anyhow!(
            "process {pid} runs no export mode that `clrprof attach --export` started (nothing \
             waits on its control socket)"
        ),
        _ => anyhow::Error::new(e).context(format!("cannot reach process {pid}'s agent")),
    })?;
    stream.set_read_timeout(Some(STOP_TIMEOUT))?;
    stream
        .write_all(&[protocol::EXPORT_STOP])
        .with_context(|| format!("cannot ask process {pid}'s agent to stop"))?;
    let mut answer = [0u8; 1];
    match stream.read(&mut answer) {
        Ok(1) if answer[0] == protocol::EXPORT_STOPPED => {
            say!(
                "clrprof: export mode in process {pid} ended: its last period was sent, and the agent detaches"
            );
            Ok(0)
        }
        Ok(_) => bail!(
            "process {pid}'s agent stopped exporting, but the runtime refused to unload it (it stays loaded, collecting nothing)"
        ),
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "no answer from process {pid}'s agent in {} s",
            STOP_TIMEOUT.as_secs()
        ))),
    }
}
