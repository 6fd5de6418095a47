//! How `clrprof record` and the agent find each other: the agent's CLSID and the environment
//! variables the CLI sets for it. Both sides use these constants, so they cannot drift.

/// The agent's CLSID, passed to the runtime in `CORECLR_PROFILER`.
pub const AGENT_CLSID: &str = "{897B9E27-A69B-4816-9F74-172E6D96334F}";

/// Path of the Unix socket the CLI listens on; the agent streams the trace there.
pub const ENV_SESSION: &str = "CLRPROF_SESSION";

/// A file the agent writes the trace to itself, when there is no CLI (`CLRPROF_SESSION` wins).
pub const ENV_OUTPUT: &str = "CLRPROF_OUTPUT";

/// The agent's settings: `key=value` pairs separated by `;` (`mode`, `events`, `rate`,
/// `inline`, `max_nodes`, `buffer_kb`).
pub const ENV_CONFIG: &str = "CLRPROF_CONFIG";
