//! How the CLI and the agent find each other: the agent's CLSID, the environment variables
//! `clrprof record` sets for it, and the client data `clrprof attach` hands to it. Both sides
//! use these definitions, so they cannot drift.

/// The agent's CLSID, passed to the runtime in `CORECLR_PROFILER`.
pub const AGENT_CLSID: &str = "{897B9E27-A69B-4816-9F74-172E6D96334F}";

/// Path of the Unix socket the CLI listens on; the agent streams the trace there.
pub const ENV_SESSION: &str = "CLRPROF_SESSION";

/// A file the agent writes the trace to itself, when there is no CLI (`CLRPROF_SESSION` wins).
pub const ENV_OUTPUT: &str = "CLRPROF_OUTPUT";

/// The agent's settings: `key=value` pairs separated by `;` (`mode`, `events`, `rate`,
/// `inline`, `max_nodes`, `buffer_kb`).
pub const ENV_CONFIG: &str = "CLRPROF_CONFIG";

/// What `clrprof attach` hands to the agent's `InitializeForAttach` (there are no environment
/// variables in a process that is already running): a tag, the session socket and the
/// configuration, separated by NUL bytes.
///
/// The agent streams the trace to the socket as in `record`. It also reads from it: when the
/// CLI shuts down its writing half of the connection (or goes away), the agent stops
/// collecting, asks the runtime to detach it, and closes the connection once the runtime
/// confirmed the detach (`ProfilerDetachSucceeded`), after which the runtime unloads it.
pub fn attach_client_data(session: &str, config: &str) -> Vec<u8> {
    [ATTACH_TAG, session, config].join("\0").into_bytes()
}

/// The session socket and configuration in `InitializeForAttach`'s client data, if it came
/// from `clrprof attach`.
pub fn parse_attach_client_data(data: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(data).ok()?;
    let mut parts = text.split('\0');
    if parts.next()? != ATTACH_TAG {
        return None;
    }
    let session = parts.next().filter(|s| !s.is_empty())?;
    let config = parts.next().unwrap_or("");
    parts
        .next()
        .is_none()
        .then(|| (session.to_string(), config.to_string()))
}

/// The first field of the attach client data (its version).
const ATTACH_TAG: &str = "clrprof-attach-1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_client_data_round_trips() {
        let data = attach_client_data("/tmp/x/agent.sock", "mode=none;events=gc");
        assert_eq!(
            data,
            b"clrprof-attach-1\0/tmp/x/agent.sock\0mode=none;events=gc"
        );
        assert_eq!(
            parse_attach_client_data(&data),
            Some(("/tmp/x/agent.sock".into(), "mode=none;events=gc".into()))
        );
        assert_eq!(parse_attach_client_data(b""), None);
        assert_eq!(parse_attach_client_data(b"other\0/s\0c"), None);
        assert_eq!(parse_attach_client_data(b"clrprof-attach-1\0\0c"), None);
        assert_eq!(
            parse_attach_client_data(b"clrprof-attach-1\0/s\0c\0d"),
            None
        );
    }
}
